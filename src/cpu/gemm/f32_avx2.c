/*
 * The AVX2 + FMA + F16C path: a 6 x 16 float32 microkernel (12 accumulators in the 16 YMM
 * registers); float16 and bfloat16 are widened to float32 while packing. GEMV: gemv_avx2.c.
 */
#include "pack.h"
#include "ukr.h"

#include <immintrin.h>

static void cvt_row(mag_dtype_t dt, const void *src, int64_t n, float *dst) {
    if (dt == MAG_DTYPE_FLOAT32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
        __m256 f = dt == MAG_DTYPE_FLOAT16 ? _mm256_cvtph_ps(v)
                                           : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
        _mm256_storeu_ps(dst + i, f);
    }
    for (; i < n; ++i) dst[i] = dt == MAG_DTYPE_FLOAT16 ? mag_f16_to_f32(h[i]) : mag_bf16_to_f32(h[i]);
}

enum { MR = 6, NV = 2, NR = 8 * NV };

#define PACK(dt, m, k, x, rs, cs, dst, r) pack_f32_panels(dt, m, k, x, rs, cs, dst, r, cvt_row)
MAG_GEMM_PACKERS(PACK, MR, NR)
MAG_GEMM_UKR_F32(ukr, MR, NV, _mm256, __m256, 8)

const mag_gemm_kernel_t mag_gemm_f32_avx2 = {
    .mr = MR, .nr = NR, .kq = 1, .esz = 4, .mc = 6 * 16, .kc = 256, .nc = 1024,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .epi = mag_gemm_epilogue_generic,
};
