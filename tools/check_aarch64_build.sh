#!/usr/bin/env bash
# Cross-compile the C core and the aarch64 kernel variants (generic, neon, neon_bf16), no Python,
# and link tools/cpu_info.c against them. Needs: apt-get install -y gcc-aarch64-linux-gnu.
# If qemu-aarch64 is installed it also runs the program on emulated CPUs of three ISA levels
# and checks which variant the detection picks, and that MAGNETRON_CPU_VARIANT is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-aarch64-linux-gnu-gcc}
SYSROOT=${SYSROOT:-/usr/aarch64-linux-gnu}
B=build/aarch64
cmake -S . -B "$B" -G Ninja -DMAG_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER="$CC" >/dev/null
cmake --build "$B"
grep -q 'X(neon_bf16)' "$B/generated/cpu_variants.def" || { echo "aarch64 variants missing"; exit 1; }
"$CC" -O2 -Wall -Wextra -Iinclude tools/cpu_info.c "$B/libmagnetron_core.a" -lm -lpthread -o "$B/cpu_info"
echo "aarch64 build: ok ($(grep -o 'X([a-z0-9_]*)' "$B/generated/cpu_variants.def" | tr -d 'X()' | tr '\n' ' '))"

command -v qemu-aarch64 >/dev/null || { echo "qemu-aarch64 not installed: not run"; exit 0; }
expect() { # cpu model, MAGNETRON_CPU_VARIANT, expected "variant in use", expected exit status
  set +e
  out=$(MAGNETRON_CPU_VARIANT="$2" qemu-aarch64 -cpu "$1" -L "$SYSROOT" "$B/cpu_info" 2>&1)
  rc=$?
  set -e
  if ! grep -q "variant in use: $3\$" <<<"$out" || [ "$rc" != "$4" ]; then
    echo "FAIL: cpu=$1 MAGNETRON_CPU_VARIANT=$2 (exit $rc):"; echo "$out"; exit 1
  fi
  echo "qemu -cpu $1 MAGNETRON_CPU_VARIANT=$2: $3, exit $rc"
}
expect cortex-a53 "" generic 0
expect cortex-a76 "" neon 0
expect max "" neon_bf16 0
expect max generic generic 0
expect cortex-a76 neon_bf16 none 2
