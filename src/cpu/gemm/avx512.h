/* Shared by the AVX-512 files: the tail mask and the 32-bit transposing pack. */
#ifndef MAG_CPU_GEMM_AVX512_H
#define MAG_CPU_GEMM_AVX512_H

#include "kernel.h"
#include "ukr.h"

#include <immintrin.h>

/* Lanes [0, min(left, 16)). */
static inline __mmask16 mag_tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* Transpose 16 vectors of 16 32-bit lanes (r[i] lane q -> r[q] lane i): unpack pairs, quads, move 128-bit lanes. */
static inline void mag_transpose16(__m512i r[16]) {
    __m512i a[16], b[16];
    for (int j = 0; j < 8; ++j) {
        a[2 * j] = _mm512_unpacklo_epi32(r[2 * j], r[2 * j + 1]);
        a[2 * j + 1] = _mm512_unpackhi_epi32(r[2 * j], r[2 * j + 1]);
    }
    for (int j = 0; j < 4; ++j) { /* b[4j + c], 128-bit lane L: column 4L + c of rows 4j .. 4j+3 */
        b[4 * j] = _mm512_unpacklo_epi64(a[4 * j], a[4 * j + 2]);
        b[4 * j + 1] = _mm512_unpackhi_epi64(a[4 * j], a[4 * j + 2]);
        b[4 * j + 2] = _mm512_unpacklo_epi64(a[4 * j + 1], a[4 * j + 3]);
        b[4 * j + 3] = _mm512_unpackhi_epi64(a[4 * j + 1], a[4 * j + 3]);
    }
    for (int c = 0; c < 4; ++c) {
        __m512i e0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x44), e1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xee);
        __m512i f0 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x44);
        __m512i f1 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(e0, f0, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(e0, f0, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(e1, f1, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(e1, f1, 0xdd);
    }
}

/*
 * Pack rows [0, rows) of 32-bit words (row stride rs_bytes, unit depth stride) over depths
 * [0, k) into panel layout dst[p*r + i] (r <= 32 rows a panel); rows [rows, r) become zero.
 */
static inline void mag_pack_tr32(int64_t rows, int64_t k, const void *x, int64_t rs_bytes, mag_gemm_u32 *dst,
                                 int r) {
    for (int64_t p = 0; p < k; p += 16) {
        __mmask16 dm = mag_tail_mask(k - p);
        int64_t np = mag_gemm_min(16, k - p);
        for (int i0 = 0; i0 < r; i0 += 16) {
            __m512i v[16];
            for (int i = 0; i < 16; ++i)
                v[i] = i0 + i < rows ? _mm512_maskz_loadu_epi32(dm, (const uint8_t *)x + (i0 + i) * rs_bytes + p * 4)
                                     : _mm512_setzero_si512();
            mag_transpose16(v);
            __mmask16 rm = mag_tail_mask(r - i0);
            for (int64_t q = 0; q < np; ++q) _mm512_mask_storeu_epi32(dst + (p + q) * r + i0, rm, v[q]);
        }
    }
}

#endif
