/* Shared by the AVX2 files: 8 elements of any engine dtype widened to float32 in registers. */
#ifndef MAG_CPU_GEMM_AVX2_H
#define MAG_CPU_GEMM_AVX2_H

#include "kernel.h"

#include <immintrin.h>

/* Elements idx .. idx+7 of p (dtype dt) as float32: zero-extend and shift for bf16, vcvtph2ps for f16. */
static inline __attribute__((always_inline)) __m256 mag_avx2_ld8(const mag_dtype_t dt, const void *p, int64_t idx) {
    if (dt == MAG_DTYPE_FLOAT32) return _mm256_loadu_ps((const float *)p + idx);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + idx));
    if (dt == MAG_DTYPE_FLOAT16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

#endif
