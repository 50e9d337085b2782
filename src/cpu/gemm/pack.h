/*
 * Packing templates, included by each path's file so they compile with its ISA flags.
 * The includer passes its cvt_row(dt, src, n, dst): n contiguous elements of dtype dt to float32.
 *
 * f32 panels: element (i, p) of a panel at [p][i] (r floats per depth), what a broadcast-A /
 * vector-B microkernel reads. Pair panels (bf16): depths in pairs, (i, p) at [p/2][i][p%2],
 * so one 32-bit lane holds the two depths vdpbf16ps multiplies together.
 */
#ifndef MAG_CPU_GEMM_PACK_H
#define MAG_CPU_GEMM_PACK_H

#include "kernel.h"

#include <string.h>

typedef void (*mag_gemm_cvt_fn)(mag_dtype_t dt, const void *src, int64_t n, float *dst);

/* One element of X as float32 (the any-stride case). */
static inline float gemm_ld(mag_dtype_t dt, const void *x, int64_t idx) {
    switch (dt) {
    case MAG_DTYPE_FLOAT16: return mag_f16_to_f32(((const uint16_t *)x)[idx]);
    case MAG_DTYPE_BFLOAT16: return mag_bf16_to_f32(((const uint16_t *)x)[idx]);
    default: return ((const float *)x)[idx];
    }
}

/* Rows [0, rows) of one panel when each row's depths are contiguous: a transposition. */
static inline void pack_f32_panel_rows(mag_dtype_t dt, int64_t rows, int64_t k, const uint8_t *x, int64_t rs,
                                       int64_t es, float *dst, int r, mag_gemm_cvt_fn cvt_row) {
    enum { CHUNK = 64 };
    float tmp[CHUNK];
    for (int64_t i = 0; i < rows; ++i) {
        const uint8_t *row = x + i * rs * es;
        if (dt == MAG_DTYPE_FLOAT32) {
            const float *s = (const float *)row;
            for (int64_t p = 0; p < k; ++p) dst[p * r + i] = s[p];
            continue;
        }
        for (int64_t p0 = 0; p0 < k; p0 += CHUNK) {
            int64_t len = mag_gemm_min(CHUNK, k - p0);
            cvt_row(dt, row + p0 * es, len, tmp);
            for (int64_t p = 0; p < len; ++p) dst[(p0 + p) * r + i] = tmp[p];
        }
    }
}

static inline __attribute__((always_inline)) void pack_f32_panels(mag_dtype_t dt, int64_t m, int64_t k,
                                                                    const void *x, int64_t rs, int64_t cs,
                                                                    float *dst, const int r,
                                                                    mag_gemm_cvt_fn cvt_row) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size;
    if (rs == 1) { /* rows contiguous: depths outermost, so the loads run along X's rows (see mag_pack_interleave) */
        for (int64_t p = 0; p < k; ++p)
            for (int64_t i0 = 0; i0 < m; i0 += r) {
                int64_t rows = mag_gemm_min(r, m - i0);
                float *d = dst + i0 * k + p * r;
                if (p + 4 < k) /* B's rows come from memory at a large stride: ask for the next ones early */
                    for (int64_t q = 0; q < rows * es; q += 64)
                        __builtin_prefetch((const uint8_t *)x + (i0 + (p + 4) * cs) * es + q);
                cvt_row(dt, (const uint8_t *)x + (i0 + p * cs) * es, rows, d);
                for (int64_t i = rows; i < r; ++i) d[i] = 0.0f;
            }
        return;
    }
    for (int64_t i0 = 0; i0 < m; i0 += r, dst += r * k) {
        int64_t rows = mag_gemm_min(r, m - i0);
        const uint8_t *xb = (const uint8_t *)x + i0 * rs * es;
        if (cs == 1) {
            pack_f32_panel_rows(dt, rows, k, xb, rs, es, dst, r, cvt_row);
        } else {
            for (int64_t p = 0; p < k; ++p)
                for (int64_t i = 0; i < rows; ++i) dst[p * r + i] = gemm_ld(dt, xb, i * rs + p * cs);
        }
        for (int64_t p = 0; p < k; ++p)
            for (int64_t i = rows; i < r; ++i) dst[p * r + i] = 0.0f;
    }
}

/* bf16 pair panels; a panel holds r * roundup(k, 2) elements. */
static inline __attribute__((always_inline)) void pack_pair_panels(int64_t m, int64_t k, const uint16_t *x,
                                                                     int64_t rs, int64_t cs, uint16_t *dst,
                                                                     const int r) {
    int64_t kp = mag_gemm_roundup(k, 2);
    for (int64_t i0 = 0; i0 < m; i0 += r, dst += r * kp) {
        int64_t rows = mag_gemm_min(r, m - i0);
        const uint16_t *xb = x + i0 * rs;
        if (rs == 1) { /* rows contiguous: interleave two depths */
            for (int64_t p = 0; p < kp; p += 2) {
                uint16_t *d = dst + p * r;
                const uint16_t *s0 = xb + p * cs, *s1 = s0 + cs;
                if (p + 1 < k)
                    for (int64_t i = 0; i < rows; ++i) d[2 * i] = s0[i], d[2 * i + 1] = s1[i];
                else
                    for (int64_t i = 0; i < rows; ++i) d[2 * i] = s0[i], d[2 * i + 1] = 0;
                memset(d + 2 * rows, 0, (size_t)(r - rows) * 4);
            }
            continue;
        }
        for (int64_t i = 0; i < rows; ++i) {
            const uint16_t *s = xb + i * rs;
            if (cs == 1) { /* depths contiguous: move 32-bit pairs */
                mag_gemm_u32 *d = (mag_gemm_u32 *)dst + i;
                int64_t p = 0;
                for (; p + 1 < k; p += 2) memcpy(d + (p / 2) * r, s + p, 4);
                if (p < k) d[(p / 2) * r] = s[p];
            } else {
                for (int64_t p = 0; p < kp; ++p) dst[(p / 2) * 2 * r + 2 * i + (p & 1)] = p < k ? s[p * cs] : 0;
            }
        }
        for (int64_t p = 0; p < kp; p += 2) memset(dst + p * r + 2 * rows, 0, (size_t)(r - rows) * 4);
    }
}

/* pack_a and pack_b (mag_gemm_pack_fn) of a file whose packer is fn(dt, m, k, x, rs, cs, dst, rows per panel). */
#define MAG_GEMM_PACKERS(fn, MR, NR)                                                                                   \
    static void pack_a(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {      \
        fn(dt, m, k, x, rs, cs, dst, MR);                                                                              \
    }                                                                                                                  \
    static void pack_b(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {      \
        fn(dt, m, k, x, rs, cs, dst, NR);                                                                              \
    }

#endif
