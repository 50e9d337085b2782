/*
 * The AVX-512 float32 path (built with AVX-512 F/BW/VL/DQ flags, run only where CPUID says so).
 * float16 and bfloat16 operands are widened to float32 while packing, so this one microkernel
 * also serves them on machines without (or for paths not using) bf16 instructions.
 */
#include "pack.h"
#include "ukr_avx512.h"

/* n contiguous elements to float32; masked loads take the tail. */
static void cvt_row(mag_dtype_t dt, const void *src, int64_t n, float *dst) {
    if (dt == MAG_DTYPE_FLOAT32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m256i v = _mm256_maskz_loadu_epi16(m, h + i);
        __m512 f = dt == MAG_DTYPE_FLOAT16 ? _mm512_cvtph_ps(v)
                                           : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
        _mm512_mask_storeu_ps(dst + i, m, f);
    }
}

enum { MR = 14, NV = 2, NR = 16 * NV };

static void pack_a(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    pack_f32_panels(dt, m, k, x, rs, cs, dst, MR, cvt_row);
}

static void pack_b(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    pack_f32_panels(dt, m, k, x, rs, cs, dst, NR, cvt_row);
}

#define BCAST(x) _mm512_set1_ps(x)
#define MAC(acc, a, b) _mm512_fmadd_ps(a, b, acc)
MAG_GEMM_UKR_AVX512(ukr, MR, NV, 1, float, BCAST, MAC)

const mag_gemm_kernel_t mag_gemm_f32_avx512 = {
    .mr = MR, .nr = NR, .kq = 1, .esz = 4, .mc = 14 * 12, .kc = 192, .nc = 2048,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr,
};
