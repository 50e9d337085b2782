/*
 * The AVX512-BF16 path for bfloat16: both operands packed as depth pairs, multiplied with
 * vdpbf16ps into float32 accumulators (twice the float32 FMA rate).
 */
#include "pack.h"
#include "avx512.h"

enum { MR = 14, NV = 2, NR = 16 * NV };

#define PACK(dt, m, k, x, rs, cs, dst, r) ((void)(dt), mag_pack_pairs(m, k, x, rs, cs, dst, r)) /* bf16 only */
MAG_GEMM_PACKERS(PACK, MR, NR)

#define BCAST(w) _mm512_castsi512_ps(_mm512_set1_epi32((int)(w)))
#define MAC(acc, a, b) _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))
MAG_GEMM_UKR(ukr, MR, NV, 2, mag_gemm_u32, _mm512, __m512, 16, BCAST, MAC)
MAG_GEMM_UKR_SHORT14(ukr, NV, 2, mag_gemm_u32, _mm512, __m512, 16, BCAST, MAC)

MAG_GEMM_UKR_IN_PLACE14(ukr_rows, NV, 2, _mm512, __m512, 16, BCAST, MAC)

const mag_gemm_kernel_t mag_gemm_bf16_avx512 = {
    .mr = MR, .nr = NR, .kq = 2, .esz = 2, .mc = 14 * 6, .kc = 1024, .nc = 512,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .ukr_rows = ukr_rows, .ukr_short = ukr_short,
    .epi = mag_gemm_epilogue_avx512,
};

/*
 * GEMV x @ W.T for bfloat16 W: rows of x are bf16 values (the engine widened them, so narrowing
 * back is exact) and vdpbf16ps multiplies 32 depths of a W row per instruction, with no
 * widening of W: half the instructions of the float32 route, which keeps the loads of W ahead
 * of the arithmetic when W streams from memory.
 * vdpbf16ps is slow here (Sapphire Rapids: ~11 cycles a chain, 0.36 a cycle over 4 chains), and
 * a W row whose arithmetic lags issues its next loads late: with one row of x, two rows of W go
 * together (8 chains), and each asks for its lines 2 KiB ahead. Streaming bf16 W from memory,
 * 1 thread: 9.2 GB/s one row at a time, 10.2-10.6 two rows, 11.6-11.7 two rows and the prefetch
 * (float32 FMA over the same bytes: 11.9-12.0).
 */
static inline __attribute__((always_inline)) void dot_bf16_rows(const int MX, const int JR, int64_t n, int64_t k,
                                                                  const uint16_t *xh, const uint16_t *w, int64_t ldw,
                                                                  float *y, bool acc, int64_t j) {
    enum { U = 4 };
    __m512 s[2][MAG_GEMV_MAX_M][U];
    for (int q = 0; q < JR; ++q)
        for (int r = 0; r < MX; ++r)
            for (int u = 0; u < U; ++u) s[q][r][u] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 32 * U <= k; p += 32 * U)
        for (int u = 0; u < U; ++u)
            for (int q = 0; q < JR; ++q) {
                const uint16_t *at = w + (j + q) * ldw + p + 32 * u;
                MAG_AHEAD(at, 0); /* one 64-byte vector per line */
                __m512i wv = _mm512_loadu_si512(at);
                for (int r = 0; r < MX; ++r)
                    s[q][r][u] = MAC(s[q][r][u], wv, _mm512_loadu_si512(xh + r * k + p + 32 * u));
            }
    for (; p < k; p += 32) {
        __mmask32 m = (__mmask32)(k - p >= 32 ? ~0u : (1u << (k - p)) - 1);
        for (int q = 0; q < JR; ++q) {
            __m512i wv = _mm512_maskz_loadu_epi16(m, w + (j + q) * ldw + p);
            for (int r = 0; r < MX; ++r)
                s[q][r][0] = MAC(s[q][r][0], wv, _mm512_maskz_loadu_epi16(m, xh + r * k + p));
        }
    }
    for (int q = 0; q < JR; ++q)
        for (int r = 0; r < MX; ++r)
            y[r * n + j + q] = (acc ? y[r * n + j + q] : 0.0f) +
                               _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s[q][r][0], s[q][r][1]),
                                                                  _mm512_add_ps(s[q][r][2], s[q][r][3])));
}

static inline __attribute__((always_inline)) void dot_bf16_t(const int MX, int64_t n, int64_t k, const uint16_t *xh,
                                                               const uint16_t *w, int64_t ldw, float *y, bool acc) {
    const int JR = MX == 1 ? 2 : 1; /* MX * JR * U accumulators stay within the registers */
    int64_t j = 0;
    for (; j + JR <= n; j += JR) dot_bf16_rows(MX, JR, n, k, xh, w, ldw, y, acc, j);
    for (; j < n; ++j) dot_bf16_rows(MX, 1, n, k, xh, w, ldw, y, acc, j);
}

/* x narrowed to bf16 in blocks of depth that fit a stack buffer; blocks after the first add to y. */
static void dot_bf16(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,
                     float *y) {
    enum { CHUNK = 4096 };
    if (dt != MAG_DTYPE_BFLOAT16) {
        mag_gemv_avx512.dot(dt, m, n, k, x, w, ldw, y);
        return;
    }
    uint16_t xh[CHUNK];
    const int64_t kb = CHUNK / m / 32 * 32; /* whole vectors: only the last block has a tail */
    for (int64_t p0 = 0; p0 < k; p0 += kb) {
        int64_t kk = k - p0 < kb ? k - p0 : kb;
        for (int64_t r = 0; r < m; ++r)
            for (int64_t i = 0; i < kk; i += 16) {
                __mmask16 t = mag_tail_mask(kk - i);
                __m512i bits = _mm512_castps_si512(_mm512_maskz_loadu_ps(t, x + r * k + p0 + i));
                _mm256_mask_storeu_epi16(xh + r * kk + i, t, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
            }
        const uint16_t *wb = (const uint16_t *)w + p0;
        switch (m) {
        case 1: dot_bf16_t(1, n, kk, xh, wb, ldw, y, p0 > 0); break;
        case 2: dot_bf16_t(2, n, kk, xh, wb, ldw, y, p0 > 0); break;
        case 3: dot_bf16_t(3, n, kk, xh, wb, ldw, y, p0 > 0); break;
        default: dot_bf16_t(4, n, kk, xh, wb, ldw, y, p0 > 0);
        }
    }
}

static void axpy(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,
                 float *y) {
    mag_gemv_avx512.axpy(dt, m, n, k, x, w, ldw, y);
}

const mag_gemv_kernel_t mag_gemv_bf16_avx512 = {.dot = dot_bf16, .axpy = axpy};
