/*
 * AVX2 + FMA + F16C GEMV for up to MAG_GEMV_MAX_M rows of x (see mag_gemv_fn): bandwidth-bound,
 * so W is streamed once (x @ W.T: as a few sequential streams, see dot_t) while every row of x
 * uses each loaded vector of W. 16-bit weights are widened in registers (zero-extend and shift
 * for bf16, vcvtph2ps for f16); the portable C kernels this replaces widened them through a
 * stack buffer and kept their partial sums in memory: bf16 W from memory read at 41-57% of the
 * machine's bandwidth (Zen 3, 2 threads).
 */
#include "avx2.h"
#include "pack.h"

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/*
 * y[r][j + t*q] = x[r] . w[(j + t*q)*ldw ...] for the S rows t < S, q rows apart, read side by side:
 * S sequential streams. MX * S * U accumulators stay within the 16 YMM registers beside x and
 * the loaded weights. W's lines are asked for ahead where that pays (MAG_AHEAD_STREAM: 16-bit W
 * on this variant, not float32).
 */
static inline __attribute__((always_inline)) void dot_rows(const mag_dtype_t dt, const int MX, const int S, int64_t n,
                                                             int64_t k, const float *x, const void *w, int64_t ldw,
                                                             float *y, int64_t j, int64_t q) {
    const int U = S > 1 ? (MX == 1 ? 2 : 1) : (MX == 1 ? 8 : MX == 2 ? 4 : 2);
    const int64_t es = dt == MAG_DTYPE_FLOAT32 ? 4 : 2;
    __m256 s[4][MAG_GEMV_MAX_M][8];
    for (int t = 0; t < S; ++t)
        for (int r = 0; r < MX; ++r)
            for (int u = 0; u < U; ++u) s[t][r][u] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 * U <= k; p += 8 * U)
        for (int u = 0; u < U; ++u) {
            __m256 xv[MAG_GEMV_MAX_M];
            for (int r = 0; r < MX; ++r) xv[r] = _mm256_loadu_ps(x + r * k + p + 8 * u);
            for (int t = 0; t < S; ++t) {
                int64_t at = (j + t * q) * ldw + p + 8 * u;
                MAG_AHEAD_STREAM((const char *)w + at * es, 8 * u * es, es);
                __m256 wv = mag_avx2_ld8(dt, w, at);
                for (int r = 0; r < MX; ++r) s[t][r][u] = _mm256_fmadd_ps(wv, xv[r], s[t][r][u]);
            }
        }
    for (; p + 8 <= k; p += 8)
        for (int t = 0; t < S; ++t) {
            __m256 wv = mag_avx2_ld8(dt, w, (j + t * q) * ldw + p);
            for (int r = 0; r < MX; ++r) s[t][r][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * k + p), s[t][r][0]);
        }
    for (int t = 0; t < S; ++t)
        for (int r = 0; r < MX; ++r) {
            for (int u = 1; u < U; ++u) s[t][r][0] = _mm256_add_ps(s[t][r][0], s[t][r][u]);
            float sum = hsum(s[t][r][0]);
            for (int64_t i = p; i < k; ++i) sum += x[r * k + i] * gemm_ld(dt, w, (j + t * q) * ldw + i);
            y[r * n + j + t * q] = sum;
        }
}

/*
 * y[r][j] = x[r] . w[j*ldw ...] over n rows of W: their quarters (halves for 3-4 rows of x) read
 * side by side. One core keeps more lines in flight over several streams than over one (Zen 3,
 * summing 128 KiB blocks as 4 streams, 1 thread: 23.4 GB/s against 16.2 as one; 2 threads: 31.4
 * against 27.3).
 */
static inline __attribute__((always_inline)) void dot_t(const mag_dtype_t dt, const int MX, int64_t n, int64_t k,
                                                          const float *x, const void *w, int64_t ldw, float *y) {
    const int S = MX <= 2 ? 4 : 2;
    const int64_t q = n / S;
    for (int64_t j = 0; j < q; ++j) dot_rows(dt, MX, S, n, k, x, w, ldw, y, j, q);
    for (int64_t j = S * q; j < n; ++j) dot_rows(dt, MX, 1, n, k, x, w, ldw, y, j, 0);
}

/* y[r][j, j + 8 J) += sum over R rows q of W[p + q][j, j + 8 J) * x[r][p + q];
 * xs[r * 8 + q] holds x[r][p + q] broadcast. */
static inline __attribute__((always_inline)) void axpy_step(const mag_dtype_t dt, const int MX, const int R,
                                                              const int J, int64_t n, int64_t j, int64_t p,
                                                              const __m256 *xs, const void *w, int64_t ldw, float *y) {
    __m256 acc[MAG_GEMV_MAX_M][4];
    for (int r = 0; r < MX; ++r)
        for (int u = 0; u < J; ++u) acc[r][u] = _mm256_loadu_ps(y + r * n + j + 8 * u);
    for (int q = 0; q < R; ++q) {
        for (int u = 0; u < J; ++u) {
            __m256 wv = mag_avx2_ld8(dt, w, (p + q) * ldw + j + 8 * u);
            for (int r = 0; r < MX; ++r) acc[r][u] = _mm256_fmadd_ps(wv, xs[r * 8 + q], acc[r][u]);
        }
    }
    for (int r = 0; r < MX; ++r)
        for (int u = 0; u < J; ++u) _mm256_storeu_ps(y + r * n + j + 8 * u, acc[r][u]);
}

/* R rows of W from depth p into y (MX rows of n): whole vectors, then the row's tail one column at a time. */
static inline __attribute__((always_inline)) void axpy_rows(const mag_dtype_t dt, const int MX, const int R, int64_t n,
                                                              int64_t k, int64_t p, const float *x, const void *w,
                                                              int64_t ldw, float *y) {
    const int J = R > 1 ? 1 : MX <= 2 ? 4 : 2;
    __m256 xs[MAG_GEMV_MAX_M * 8];
    for (int r = 0; r < MX; ++r)
        for (int q = 0; q < R; ++q) xs[r * 8 + q] = _mm256_set1_ps(x[r * k + p + q]);
    int64_t j = 0;
    for (; j + 8 * J <= n; j += 8 * J) axpy_step(dt, MX, R, J, n, j, p, xs, w, ldw, y);
    for (; j + 8 <= n; j += 8) axpy_step(dt, MX, R, 1, n, j, p, xs, w, ldw, y);
    for (; j < n; ++j)
        for (int q = 0; q < R; ++q) {
            float wq = gemm_ld(dt, w, (p + q) * ldw + j);
            for (int r = 0; r < MX; ++r) y[r * n + j] += x[r * k + p + q] * wq;
        }
}

MAG_GEMV_KERNEL(mag_gemv_avx2)
