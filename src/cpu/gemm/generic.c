/*
 * The portable path: plain C that any compiler and machine runs correctly. 16-bit floats are
 * widened to float32 while packing, so one float32 microkernel serves every dtype.
 */
#include "pack.h"

static void cvt_row(mag_dtype_t dt, const void *src, int64_t n, float *dst) {
    const uint16_t *h = src;
    switch (dt) {
    case MAG_DTYPE_FLOAT16:
        for (int64_t i = 0; i < n; ++i) dst[i] = mag_f16_to_f32(h[i]);
        break;
    case MAG_DTYPE_BFLOAT16:
        for (int64_t i = 0; i < n; ++i) dst[i] = mag_bf16_to_f32(h[i]);
        break;
    default: memcpy(dst, src, (size_t)n * sizeof(float));
    }
}

enum { MR = 4, NR = 8 }; /* 8 accumulators of 4 floats: fits the 16 registers of SSE2 */

static void pack_a(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    pack_f32_panels(dt, m, k, x, rs, cs, dst, MR, cvt_row);
}

static void pack_b(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    pack_f32_panels(dt, m, k, x, rs, cs, dst, NR, cvt_row);
}

static void ukr(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc, bool acc) {
    const float *a = ap, *b = bp;
    float r[MR][NR] = {{0}};
    for (int64_t p = 0; p < kc; ++p, a += MR, b += NR)
        for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) r[i][j] += a[i] * b[j];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) c[i * ldc + j] = acc ? c[i * ldc + j] + r[i][j] : r[i][j];
}

const mag_gemm_kernel_t mag_gemm_f32_generic = {
    .mr = MR, .nr = NR, .kq = 1, .esz = 4, .mc = 128, .kc = 256, .nc = 1024,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .epi = mag_gemm_epilogue_generic,
};

enum { CHUNK = 256 };

static void gemv_dot(mag_dtype_t dt, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw, float *y) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size;
    float tmp[CHUNK];
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t *row = (const uint8_t *)w + j * ldw * es;
        float s = 0.0f;
        for (int64_t p0 = 0; p0 < k; p0 += CHUNK) {
            int64_t len = mag_gemm_min(CHUNK, k - p0);
            cvt_row(dt, row + p0 * es, len, tmp);
            for (int64_t p = 0; p < len; ++p) s += x[p0 + p] * tmp[p];
        }
        y[j] = s;
    }
}

static void gemv_axpy(mag_dtype_t dt, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw, float *y) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size;
    float tmp[CHUNK];
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
        int64_t len = mag_gemm_min(CHUNK, n - j0);
        float *yj = y + j0;
        for (int64_t j = 0; j < len; ++j) yj[j] = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
            cvt_row(dt, (const uint8_t *)w + (p * ldw + j0) * es, len, tmp);
            for (int64_t j = 0; j < len; ++j) yj[j] += x[p] * tmp[j];
        }
    }
}

const mag_gemv_kernel_t mag_gemv_generic = {.dot = gemv_dot, .axpy = gemv_axpy};
