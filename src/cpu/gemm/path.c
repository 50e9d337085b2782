/*
 * Which GEMM path runs: a small CPUID / XCR0 check of its own (the CPU variant selection
 * may take this over), the MAGNETRON_GEMM_PATH override, and the kernels of each path.
 */
#include "kernel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static const char *const path_names[MAG_GEMM__COUNT] = {"generic", "avx2", "avx512", "avx512bf16", "amx"};

#if defined(__x86_64__)
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* Each path needs the ones below it, so the best supported path says it all. */
static mag_gemm_path_t detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return MAG_GEMM_GENERIC;
    unsigned need1 = bit_OSXSAVE | bit_FMA | bit_F16C;
    if ((c & need1) != need1) return MAG_GEMM_GENERIC;
    uint64_t x = xcr0();
    if ((x & 0x6) != 0x6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2))
        return MAG_GEMM_GENERIC; /* the OS must save SSE and AVX state */
    unsigned need7 = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL, edx7 = d;
    if ((b & need7) != need7 || (x & 0xe0) != 0xe0) return MAG_GEMM_AVX2; /* + opmask and all 32 ZMM */
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return MAG_GEMM_AVX512; /* AVX512_BF16 */
    bool amx = (edx7 & (1u << 22)) && (edx7 & (1u << 24)) && (x & (3u << 17)) == (3u << 17); /* BF16, TILE, OS */
    /* Linux hands out the 8 KiB tile state only on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). */
    if (amx && syscall(SYS_arch_prctl, 0x1023, 18) == 0) return MAG_GEMM_AMX;
    return MAG_GEMM_AVX512BF16;
}
#else
static mag_gemm_path_t detect(void) { return MAG_GEMM_GENERIC; }
#endif

static mag_gemm_path_t best;
static atomic_int current;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
    best = detect();
    atomic_store(&current, best);
    const char *want = getenv("MAGNETRON_GEMM_PATH");
    if (!want || !*want) return;
    for (int p = 0; p < MAG_GEMM__COUNT; ++p) {
        if (strcmp(want, path_names[p]) != 0) continue;
        if (p <= (int)best) {
            atomic_store(&current, p);
            return;
        }
        break;
    }
    fprintf(stderr, "magnetron: MAGNETRON_GEMM_PATH=%s is not a path this machine supports; using %s\n", want,
            path_names[best]);
}

mag_gemm_path_t mag_gemm_path(void) {
    pthread_once(&once, init);
    return (mag_gemm_path_t)atomic_load_explicit(&current, memory_order_relaxed);
}

const char *mag_gemm_path_name(mag_gemm_path_t p) { return (unsigned)p < MAG_GEMM__COUNT ? path_names[p] : "?"; }

bool mag_gemm_path_supported(mag_gemm_path_t p) {
    pthread_once(&once, init);
    return (unsigned)p <= (unsigned)best;
}

bool mag_gemm_set_path(mag_gemm_path_t p) {
    if (!mag_gemm_path_supported(p)) return false;
    atomic_store(&current, p);
    return true;
}

const mag_gemm_kernel_t *mag_gemm_kernel(mag_gemm_path_t p, mag_dtype_t dt) {
#if defined(__x86_64__)
    if (p == MAG_GEMM_AMX && dt == MAG_DTYPE_BFLOAT16) return &mag_gemm_bf16_amx;
    if (p >= MAG_GEMM_AVX512BF16 && dt == MAG_DTYPE_BFLOAT16) return &mag_gemm_bf16_avx512;
    if (p >= MAG_GEMM_AVX512) return &mag_gemm_f32_avx512;
    if (p == MAG_GEMM_AVX2) return &mag_gemm_f32_avx2;
#endif
    (void)p, (void)dt;
    return &mag_gemm_f32_generic;
}

const mag_gemv_kernel_t *mag_gemv_kernel(mag_gemm_path_t p) {
#if defined(__x86_64__)
    if (p >= MAG_GEMM_AVX512BF16) return &mag_gemv_bf16_avx512;
    if (p >= MAG_GEMM_AVX512) return &mag_gemv_avx512;
    if (p == MAG_GEMM_AVX2) return &mag_gemv_avx2;
#endif
    (void)p;
    return &mag_gemv_generic;
}
