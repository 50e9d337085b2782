/*
 * AVX-512 GEMV: bandwidth-bound, so the aim is to stream W exactly once at full speed. Both
 * layouts read several rows of W at a time, each as one sequential stream; 16-bit weights are
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

enum { ROWS = 8 }; /* rows of W per pass over y in x @ W */

/*
 * y[j] = x . w[j*ldw ...], one row at a time: with contiguous rows W is then read as a single
 * sequential stream, which the hardware prefetchers serve best (several rows in parallel,
 * i.e. several interleaved streams, measured up to 40% slower from DRAM).
 */
static inline __attribute__((always_inline)) void dot_t(const mag_dtype_t dt, int64_t n, int64_t k, const float *x,
                                                          const void *w, int64_t ldw, float *y) {
    for (int64_t j = 0; j < n; ++j) {
        int64_t row = j * ldw;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        int64_t p = 0;
        for (; p + 64 <= k; p += 64) {
            s0 = _mm512_fmadd_ps(ld16(dt, w, row + p, 0xffff), _mm512_loadu_ps(x + p), s0);
            s1 = _mm512_fmadd_ps(ld16(dt, w, row + p + 16, 0xffff), _mm512_loadu_ps(x + p + 16), s1);
            s2 = _mm512_fmadd_ps(ld16(dt, w, row + p + 32, 0xffff), _mm512_loadu_ps(x + p + 32), s2);
            s3 = _mm512_fmadd_ps(ld16(dt, w, row + p + 48, 0xffff), _mm512_loadu_ps(x + p + 48), s3);
        }
        for (; p < k; p += 16) {
            __mmask16 m = mag_tail_mask(k - p);
            s0 = _mm512_fmadd_ps(ld16(dt, w, row + p, m), _mm512_maskz_loadu_ps(m, x + p), s0);
        }
        y[j] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
    }
}

/*
 * y = sum_p x[p] * w[p*ldw ...]: ROWS rows per pass over the whole of y (in L2), so each row
 * of W is one long sequential run; chunking y for L1 cut rows into short runs, measured slower.
 */
static inline __attribute__((always_inline)) void axpy_t(const mag_dtype_t dt, int64_t n, int64_t k, const float *x,
                                                           const void *w, int64_t ldw, float *y) {
    for (int64_t j = 0; j < n; ++j) y[j] = 0.0f;
    int64_t p = 0;
    for (; p + ROWS <= k; p += ROWS) {
        __m512 xs[ROWS];
        for (int r = 0; r < ROWS; ++r) xs[r] = _mm512_set1_ps(x[p + r]);
        for (int64_t j = 0; j < n; j += 16) {
            __mmask16 m = mag_tail_mask(n - j);
            __m512 acc = _mm512_maskz_loadu_ps(m, y + j);
            for (int r = 0; r < ROWS; ++r) acc = _mm512_fmadd_ps(ld16(dt, w, (p + r) * ldw + j, m), xs[r], acc);
            _mm512_mask_storeu_ps(y + j, m, acc);
        }
    }
    for (; p < k; ++p) {
        __m512 xp = _mm512_set1_ps(x[p]);
        for (int64_t j = 0; j < n; j += 16) {
            __mmask16 m = mag_tail_mask(n - j);
            __m512 acc = _mm512_fmadd_ps(ld16(dt, w, p * ldw + j, m), xp, _mm512_maskz_loadu_ps(m, y + j));
            _mm512_mask_storeu_ps(y + j, m, acc);
        }
    }
}

#define BY_DTYPE(fn, dt, ...)                                                                                          \
    switch (dt) {                                                                                                      \
    case MAG_DTYPE_FLOAT16: fn(MAG_DTYPE_FLOAT16, __VA_ARGS__); break;                                                 \
    case MAG_DTYPE_BFLOAT16: fn(MAG_DTYPE_BFLOAT16, __VA_ARGS__); break;                                               \
    default: fn(MAG_DTYPE_FLOAT32, __VA_ARGS__);                                                                       \
    }

static void dot(mag_dtype_t dt, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw, float *y) {
    BY_DTYPE(dot_t, dt, n, k, x, w, ldw, y)
}

static void axpy(mag_dtype_t dt, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw, float *y) {
    BY_DTYPE(axpy_t, dt, n, k, x, w, ldw, y)
}

const mag_gemv_kernel_t mag_gemv_avx512 = {.dot = dot, .axpy = axpy};
