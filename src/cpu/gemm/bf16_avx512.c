/*
 * The AVX512-BF16 path for bfloat16: both operands packed as depth pairs, multiplied with
 * vdpbf16ps into float32 accumulators (twice the float32 FMA rate).
 */
#include "pack.h"
#include "ukr_avx512.h"

enum { MR = 14, NV = 2, NR = 16 * NV };

static void pack_a(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    (void)dt;
    pack_pair_panels(m, k, x, rs, cs, dst, MR);
}

static void pack_b(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    (void)dt;
    pack_pair_panels(m, k, x, rs, cs, dst, NR);
}

#define BCAST(w) _mm512_castsi512_ps(_mm512_set1_epi32((int)(w)))
#define MAC(acc, a, b) _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))
MAG_GEMM_UKR_AVX512(ukr, MR, NV, 2, mag_gemm_u32, BCAST, MAC)

const mag_gemm_kernel_t mag_gemm_bf16_avx512 = {
    .mr = MR, .nr = NR, .kq = 2, .esz = 2, .mc = 14 * 12, .kc = 384, .nc = 2048,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr,
};
