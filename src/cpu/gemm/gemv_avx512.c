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

enum { ROWS = 4 };

/* y[j] = x . w[j*ldw ...]: ROWS rows at a time share each vector of x. */
static inline __attribute__((always_inline)) void dot_t(const mag_dtype_t dt, int64_t n, int64_t k, const float *x,
                                                          const void *w, int64_t ldw, float *y) {
    int64_t j = 0;
    for (; j + ROWS <= n; j += ROWS) {
        __m512 s[ROWS], t[ROWS];
        for (int r = 0; r < ROWS; ++r) s[r] = t[r] = _mm512_setzero_ps();
        int64_t p = 0;
        for (; p + 32 <= k; p += 32) {
            __m512 x0 = _mm512_loadu_ps(x + p), x1 = _mm512_loadu_ps(x + p + 16);
            for (int r = 0; r < ROWS; ++r) {
                s[r] = _mm512_fmadd_ps(ld16(dt, w, (j + r) * ldw + p, 0xffff), x0, s[r]);
                t[r] = _mm512_fmadd_ps(ld16(dt, w, (j + r) * ldw + p + 16, 0xffff), x1, t[r]);
            }
        }
        for (; p < k; p += 16) {
            __mmask16 m = mag_tail_mask(k - p);
            __m512 x0 = _mm512_maskz_loadu_ps(m, x + p);
            for (int r = 0; r < ROWS; ++r) s[r] = _mm512_fmadd_ps(ld16(dt, w, (j + r) * ldw + p, m), x0, s[r]);
        }
        for (int r = 0; r < ROWS; ++r) y[j + r] = _mm512_reduce_add_ps(_mm512_add_ps(s[r], t[r]));
    }
    for (; j < n; ++j) {
        __m512 s = _mm512_setzero_ps();
        for (int64_t p = 0; p < k; p += 16) {
            __mmask16 m = mag_tail_mask(k - p);
            s = _mm512_fmadd_ps(ld16(dt, w, j * ldw + p, m), _mm512_maskz_loadu_ps(m, x + p), s);
        }
        y[j] = _mm512_reduce_add_ps(s);
    }
}

/* y = sum_p x[p] * w[p*ldw ...]: ROWS rows per pass over y, which stays in L1. */
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
