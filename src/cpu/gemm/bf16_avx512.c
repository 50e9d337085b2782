/*
 * The AVX512-BF16 path for bfloat16: both operands packed as depth pairs, multiplied with
 * vdpbf16ps into float32 accumulators (twice the float32 FMA rate).
 */
#include "pack.h"
#include "avx512.h"

enum { MR = 14, NV = 2, NR = 16 * NV };

/* Rows with contiguous depths move as 32-bit pairs through the vector transposition. */
static inline __attribute__((always_inline)) void pack(int64_t m, int64_t k, const uint16_t *x, int64_t rs,
                                                         int64_t cs, uint16_t *dst, const int r) {
    if (cs != 1 || rs == 1) {
        pack_pair_panels(m, k, x, rs, cs, dst, r);
        return;
    }
    int64_t kp = mag_gemm_roundup(k, 2);
    for (int64_t i0 = 0; i0 < m; i0 += r) {
        int64_t rows = mag_gemm_min(r, m - i0);
        const uint16_t *xi = x + i0 * rs;
        mag_gemm_u32 *d = (mag_gemm_u32 *)(dst + i0 * kp);
        mag_pack_tr32(rows, k / 2, xi, rs * 2, d, r);
        if (k & 1) /* the last depth pairs with a zero */
            for (int64_t i = 0; i < r; ++i) d[(k / 2) * r + i] = i < rows ? xi[i * rs + k - 1] : 0;
    }
}

#define PACK(dt, m, k, x, rs, cs, dst, r) ((void)(dt), pack(m, k, x, rs, cs, dst, r)) /* bf16 only */
MAG_GEMM_PACKERS(PACK, MR, NR)

#define BCAST(w) _mm512_castsi512_ps(_mm512_set1_epi32((int)(w)))
#define MAC(acc, a, b) _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))
MAG_GEMM_UKR(ukr, MR, NV, 2, mag_gemm_u32, _mm512, __m512, 16, BCAST, MAC)

const mag_gemm_kernel_t mag_gemm_bf16_avx512 = {
    .mr = MR, .nr = NR, .kq = 2, .esz = 2, .mc = 14 * 6, .kc = 1024, .nc = 512,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .epi = mag_gemm_epilogue_avx512,
};
