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
 * parallel, i.e. interleaved streams, measured up to 40% slower from DRAM).
 */
static inline __attribute__((always_inline)) void dot_t(const mag_dtype_t dt, const int MX, int64_t n, int64_t k,
                                                          const float *x, const void *w, int64_t ldw, float *y) {
    const int U = MX > 2 ? 2 : 4; /* vectors per step: MX * U <= 8 accumulators hide the FMA latency */
    for (int64_t j = 0; j < n; ++j) {
        int64_t row = j * ldw, p = 0;
        __m512 s[MAG_GEMV_MAX_M][4];
        for (int r = 0; r < MX; ++r)
            for (int u = 0; u < U; ++u) s[r][u] = _mm512_setzero_ps();
        for (; p + 16 * U <= k; p += 16 * U)
            for (int u = 0; u < U; ++u) {
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

/* R rows of W from depth p into y (MX rows of n). */
static inline __attribute__((always_inline)) void axpy_rows(const mag_dtype_t dt, const int MX, const int R, int64_t n,
                                                              int64_t k, int64_t p, const float *x, const void *w,
                                                              int64_t ldw, float *y) {
    __m512 xs[MAG_GEMV_MAX_M][16];
    for (int r = 0; r < MX; ++r)
        for (int q = 0; q < R; ++q) xs[r][q] = _mm512_set1_ps(x[r * k + p + q]);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = mag_tail_mask(n - j);
        __m512 acc[MAG_GEMV_MAX_M];
        for (int r = 0; r < MX; ++r) acc[r] = _mm512_maskz_loadu_ps(m, y + r * n + j);
        for (int q = 0; q < R; ++q) {
            __m512 wv = ld16(dt, w, (p + q) * ldw + j, m);
            for (int r = 0; r < MX; ++r) acc[r] = _mm512_fmadd_ps(wv, xs[r][q], acc[r]);
        }
        for (int r = 0; r < MX; ++r) _mm512_mask_storeu_ps(y + r * n + j, m, acc[r]);
    }
}

/*
 * y[r] = sum_p x[r][p] * w[p*ldw ...]. Long rows of W: R rows per pass over the whole of y (in
 * L2), each row one long sequential run (chunking y for L1 cut rows into short runs, measured
 * slower). Short whole rows (<= 4 KiB, W contiguous): one row per pass, so W is read strictly
 * in order; several interleaved short runs measured up to 2x slower from DRAM (rows of 1.5-2
 * KiB), while rows of 4.5-6 KiB stream 10-40% faster R at a time. With one row of x and y in
 * L1 (n <= 4096), 16 rows per pass beat 8 by 5-13% (1x768x2304 and 1x1024x3072, f32 and bf16,
 * one thread, from DRAM); with y in L2 (n = 151936) they measured up to 14% slower.
 */
static inline __attribute__((always_inline)) void axpy_t(const mag_dtype_t dt, const int MX, int64_t n, int64_t k,
                                                           const float *x, const void *w, int64_t ldw, float *y) {
    const int R = MX == 1 ? 8 : 4; /* broadcast x values stay in registers */
    const int64_t es = dt == MAG_DTYPE_FLOAT32 ? 4 : 2;
    for (int64_t j = 0; j < MX * n; ++j) y[j] = 0.0f;
    int64_t p = 0;
    if (n * es > 4096 || ldw != n) { /* long rows, or this thread's share of each row */
        if (MX == 1 && n <= 4096) /* y in L1: 16 rows per pass halve its loads and stores */
            for (; p + 16 <= k; p += 16) axpy_rows(dt, 1, 16, n, k, p, x, w, ldw, y);
        for (; p + R <= k; p += R) axpy_rows(dt, MX, R, n, k, p, x, w, ldw, y);
    }
    for (; p < k; ++p) axpy_rows(dt, MX, 1, n, k, p, x, w, ldw, y);
}

#define BY_ROWS(fn, dt, mx, ...)                                                                                       \
    switch (mx) {                                                                                                      \
    case 1: fn(dt, 1, __VA_ARGS__); break;                                                                             \
    case 2: fn(dt, 2, __VA_ARGS__); break;                                                                             \
    case 3: fn(dt, 3, __VA_ARGS__); break;                                                                             \
    default: fn(dt, 4, __VA_ARGS__);                                                                                   \
    }
#define BY_DTYPE(fn, dt, ...)                                                                                          \
    switch (dt) {                                                                                                      \
    case MAG_DTYPE_FLOAT16: BY_ROWS(fn, MAG_DTYPE_FLOAT16, __VA_ARGS__) break;                                         \
    case MAG_DTYPE_BFLOAT16: BY_ROWS(fn, MAG_DTYPE_BFLOAT16, __VA_ARGS__) break;                                       \
    default: BY_ROWS(fn, MAG_DTYPE_FLOAT32, __VA_ARGS__)                                                               \
    }

static void dot(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw, float *y) {
    BY_DTYPE(dot_t, dt, m, n, k, x, w, ldw, y)
}

static void axpy(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,
                 float *y) {
    BY_DTYPE(axpy_t, dt, m, n, k, x, w, ldw, y)
}

const mag_gemv_kernel_t mag_gemv_avx512 = {.dot = dot, .axpy = axpy};
