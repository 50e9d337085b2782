/*
 * GEMV kernels in plain C (see mag_gemv_fn), included by generic.c, which defines cvt_row.
 * Partial sums sit in independent lanes, so the compiler vectorises without reassociating float
 * additions.
 * Rows of W are read front to back, one at a time: a single sequential stream.
 */
#ifndef MAG_CPU_GEMM_GEMV_C_H
#define MAG_CPU_GEMM_GEMV_C_H

#include "kernel.h"

#include <string.h>

enum { GEMV_CHUNK = 512, GEMV_LANES = 16 };

/* Depths [p0, p0 + len) of a row as float32: in place for float32, else converted into tmp. */
static inline const float *gemv_run(mag_dtype_t dt, const uint8_t *row, int64_t p0, int64_t len, float *tmp) {
    if (dt == MAG_DTYPE_FLOAT32) return (const float *)row + p0;
    cvt_row(dt, row + p0 * 2, len, tmp);
    return tmp;
}

static void gemv_dot(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,
                     float *y) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size;
    float tmp[GEMV_CHUNK];
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t *row = (const uint8_t *)w + j * ldw * es;
        float acc[MAG_GEMV_MAX_M][GEMV_LANES] = {{0}};
        for (int64_t p0 = 0; p0 < k; p0 += GEMV_CHUNK) {
            int64_t len = mag_gemm_min(GEMV_CHUNK, k - p0);
            const float *wv = gemv_run(dt, row, p0, len, tmp);
            for (int64_t r = 0; r < m; ++r) {
                const float *xv = x + r * k + p0;
                int64_t p = 0;
                for (; p + GEMV_LANES <= len; p += GEMV_LANES)
                    for (int l = 0; l < GEMV_LANES; ++l) acc[r][l] += xv[p + l] * wv[p + l];
                for (; p < len; ++p) acc[r][0] += xv[p] * wv[p];
            }
        }
        for (int64_t r = 0; r < m; ++r) {
            float s = 0.0f;
            for (int l = 0; l < GEMV_LANES; ++l) s += acc[r][l];
            y[r * n + j] = s;
        }
    }
}

static void gemv_axpy(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,
                      float *y) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size;
    float tmp[GEMV_CHUNK];
    memset(y, 0, (size_t)(m * n) * sizeof(float));
    for (int64_t p = 0; p < k; ++p) {
        const uint8_t *row = (const uint8_t *)w + p * ldw * es;
        for (int64_t j0 = 0; j0 < n; j0 += GEMV_CHUNK) {
            int64_t len = mag_gemm_min(GEMV_CHUNK, n - j0);
            const float *wv = gemv_run(dt, row, j0, len, tmp);
            for (int64_t r = 0; r < m; ++r) {
                float xp = x[r * k + p], *yj = y + r * n + j0;
                for (int64_t j = 0; j < len; ++j) yj[j] += xp * wv[j];
            }
        }
    }
}

#endif
