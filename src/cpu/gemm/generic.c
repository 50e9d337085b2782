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
    case MAG_DTYPE_BFLOAT16: /* the top half of a float32: a shift the compiler vectorises */
        for (int64_t i = 0; i < n; ++i) {
            uint32_t u = (uint32_t)h[i] << 16;
            memcpy(dst + i, &u, 4);
        }
        break;
    default: memcpy(dst, src, (size_t)n * sizeof(float));
    }
}

enum { MR = 4, NR = 8 }; /* 8 accumulators of 4 floats: fits the 16 registers of SSE2 */

#define PACK(dt, m, k, x, rs, cs, dst, r) pack_f32_panels(dt, m, k, x, rs, cs, dst, r, cvt_row)
MAG_GEMM_PACKERS(PACK, MR, NR)

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

#include "gemv_c.h"

const mag_gemv_kernel_t mag_gemv_generic = {.dot = gemv_dot, .axpy = gemv_axpy};
