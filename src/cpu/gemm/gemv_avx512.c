/*
 * AVX-512 GEMV for up to MAX_M rows of x: bandwidth-bound, so the aim is to stream W exactly
 * once at full speed while every row of x uses each loaded vector of W. 16-bit weights are
 * widened in registers (a shift for bf16, vcvtph2ps for f16) and multiplied in float32.
 */
#include "avx512.h"

/* 16 weights (the first n when n < 16) from w[idx...] as float32. */
static inline __attribute__((always_inline)) __m512 ld16(const mag_dtype_t dt, const void *w, int64_t idx,
                                                           __mmask16 m) {
    if (dt == MAG_DTYPE_FLOAT32) return _mm512_maskz_loadu_ps(m, (const float *)w + idx);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + idx);
    if (dt == MAG_DTYPE_FLOAT16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/*
 * y[r][j] = x[r] . w[j*ldw ...], one row of W at a time: with contiguous rows W is then read as
 * a single sequential stream, which the hardware prefetchers serve best (several rows in
 * parallel, i.e. interleaved streams, measured up to 40% slower from DRAM). Each line is also
 * asked for MAG_READ_AHEAD bytes ahead: with W on 2 MiB pages (the allocator's, a .mag
 * mapping's) that lifts the stream from 25.5-27 to 28-30 GB/s at 2 threads (float32 768 x 2304,
 * 73 weights cold; the huge-page read probe 27-29).
 */
static inline __attribute__((always_inline)) void dot_t(const mag_dtype_t dt, const int MX, int64_t n, int64_t k,
                                                          const float *x, const void *w, int64_t ldw, float *y) {
    const int U = MX > 2 ? 2 : 4; /* vectors per step: MX * U <= 8 accumulators hide the FMA latency */
    const int64_t es = dt == MAG_DTYPE_FLOAT32 ? 4 : 2;
    for (int64_t j = 0; j < n; ++j) {
        int64_t row = j * ldw, p = 0;
        __m512 s[MAG_GEMV_MAX_M][4];
        for (int r = 0; r < MX; ++r)
            for (int u = 0; u < U; ++u) s[r][u] = _mm512_setzero_ps();
        for (; p + 16 * U <= k; p += 16 * U)
            for (int u = 0; u < U; ++u) {
                MAG_AHEAD((const char *)w + (row + p + 16 * u) * es, 16 * u * es);
                __m512 wv = ld16(dt, w, row + p + 16 * u, 0xffff);
                for (int r = 0; r < MX; ++r)
                    s[r][u] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + r * k + p + 16 * u), s[r][u]);
            }
        for (; p < k; p += 16) {
            __mmask16 m = mag_tail_mask(k - p);
            __m512 wv = ld16(dt, w, row + p, m);
            for (int r = 0; r < MX; ++r)
                s[r][0] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x + r * k + p), s[r][0]);
        }
        for (int r = 0; r < MX; ++r) {
            for (int u = 1; u < U; ++u) s[r][0] = _mm512_add_ps(s[r][0], s[r][u]);
            y[r * n + j] = _mm512_reduce_add_ps(s[r][0]);
        }
    }
}

/*
 * y[r][j, j + 16 J) += W[p + q][j, j + 16 J) * x[r][p + q] over R rows q; m masks the vector
 * when J == 1 (the row's tail). xs holds x[r][p + q] broadcast, at xs[r * 16 + q].
 */
static inline __attribute__((always_inline)) void axpy_step(const mag_dtype_t dt, const int MX, const int R,
                                                              const int J, int64_t n, int64_t j, __mmask16 m,
                                                              int64_t p, const __m512 *xs, const void *w, int64_t ldw,
                                                              float *y) {
    __m512 acc[MAG_GEMV_MAX_M][8];
    for (int r = 0; r < MX; ++r)
        for (int u = 0; u < J; ++u) acc[r][u] = _mm512_maskz_loadu_ps(m, y + r * n + j + 16 * u);
    for (int q = 0; q < R; ++q)
        for (int u = 0; u < J; ++u) {
            __m512 wv = ld16(dt, w, (p + q) * ldw + j + 16 * u, m);
            for (int r = 0; r < MX; ++r) acc[r][u] = _mm512_fmadd_ps(wv, xs[r * 16 + q], acc[r][u]);
        }
    for (int r = 0; r < MX; ++r)
        for (int u = 0; u < J; ++u) _mm512_mask_storeu_ps(y + r * n + j + 16 * u, m, acc[r][u]);
}

/*
 * R rows of W from depth p into y (MX rows of n). One row at a time goes 4 vectors (8 of 16-bit
 * weights, 4 cache lines) per step: one vector per step read 23 GB/s from memory on Zen 4, 4
 * per step 30 (1x768x3072 f32, one thread). Whole vectors go unmasked: a mask with all lanes
 * set still measured 7% slower there.
 */
static inline __attribute__((always_inline)) void axpy_rows(const mag_dtype_t dt, const int MX, const int R, int64_t n,
                                                              int64_t k, int64_t p, const float *x, const void *w,
                                                              int64_t ldw, float *y) {
    const int J = R > 1 ? 1 : dt != MAG_DTYPE_FLOAT32 && MX <= 2 ? 8 : 4;
    __m512 xs[MAG_GEMV_MAX_M * 16];
    for (int r = 0; r < MX; ++r)
        for (int q = 0; q < R; ++q) xs[r * 16 + q] = _mm512_set1_ps(x[r * k + p + q]);
    int64_t j = 0;
    for (; j + 16 * J <= n; j += 16 * J) axpy_step(dt, MX, R, J, n, j, 0xffff, p, xs, w, ldw, y);
    for (; j + 16 <= n; j += 16) axpy_step(dt, MX, R, 1, n, j, 0xffff, p, xs, w, ldw, y);
    if (j < n) axpy_step(dt, MX, R, 1, n, j, mag_tail_mask(n - j), p, xs, w, ldw, y);
}

MAG_GEMV_KERNEL(mag_gemv_avx512)
