/*
 * What the CPU and the operating system let this process use: CPUID + XCR0 (+ the Linux AMX
 * permission) on x86-64, getauxval on aarch64. A feature counts only when the OS saves its
 * register state too, so a feature bit means "kernels may execute these instructions".
 */
#ifndef MAG_CPU_CPUINFO_H
#define MAG_CPU_CPUINFO_H

#include <stdint.h>

/* X(ID, "name"): one bit each in a uint64_t mask; names as in Linux /proc/cpuinfo (but "sse3", not "pni"). */
#define MAG_CPU_FEATURES(X)                                                                                            \
    X(SSE2, "sse2") X(SSE3, "sse3") X(SSSE3, "ssse3") X(SSE4_1, "sse4_1") X(SSE4_2, "sse4_2") X(POPCNT, "popcnt")       \
    X(AVX, "avx") X(F16C, "f16c") X(FMA, "fma") X(AVX2, "avx2") X(AVX512F, "avx512f") X(AVX512BW, "avx512bw")         \
    X(AVX512VL, "avx512vl") X(AVX512DQ, "avx512dq") X(AVX512VNNI, "avx512_vnni") X(AVX512BF16, "avx512_bf16")        \
    X(AVX512FP16, "avx512_fp16") X(AMX_TILE, "amx_tile") X(AMX_BF16, "amx_bf16") X(AMX_INT8, "amx_int8")              \
    X(NEON, "asimd") X(NEON_FP16, "asimdhp") X(NEON_DOTPROD, "asimddp") X(NEON_BF16, "bf16") X(NEON_I8MM, "i8mm")

enum {
#define X(id, name) MAG_CPUF_##id,
    MAG_CPU_FEATURES(X)
#undef X
    MAG_CPUF__COUNT
};
#define MAG_CPUF(id) (UINT64_C(1) << MAG_CPUF_##id)
_Static_assert(MAG_CPUF__COUNT <= 64, "feature bits live in a uint64_t");

typedef struct mag_cpu_id {
    char vendor[16]; /* "GenuineIntel", "AuthenticAMD", "ARM" */
    char brand[64];  /* the marketing name, e.g. "AMD EPYC 9654 96-Core Processor" */
    uint32_t family, model, stepping;
    uint64_t features; /* MAG_CPUF bits usable by this process */
    uint32_t l1d_ways; /* the L1 data cache's associativity, 0 if unknown */
    uint64_t l2_bytes; /* one core's L2, 0 if unknown */
} mag_cpu_id_t;

/* Detected once (the first call also asks Linux for AMX tile state); never NULL. */
const mag_cpu_id_t *mag_cpu_id(void);
/* Name of feature bit `bit`, NULL past the last. */
const char *mag_cpu_feature_str(uint32_t bit);
/* CPUs this process may keep busy: its affinity mask, capped by a cgroup CPU quota. */
uint32_t mag_cpu_usable_count(void);

#endif
