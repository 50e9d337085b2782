/* Shared by the AVX-512 files: the tail mask, the 32-bit transposing pack and the bf16 pair pack. */
#ifndef MAG_CPU_GEMM_AVX512_H
#define MAG_CPU_GEMM_AVX512_H

#include "kernel.h"
#include "pack.h"
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

/*
 * Contiguous rows (r <= 32 of them a panel, panels `panel` elements apart): interleave the rows of
 * two depths, word by word. Depth pairs outermost, so the loads run along B's rows (a panel at a
 * time would walk down its column at the row stride: 4 KiB apart at n = 2048, and the AMX pack
 * took 9% of a 2048^3 product that way).
 */
static inline void mag_pack_interleave(int64_t m, int64_t k, const uint16_t *x, int64_t cs, uint16_t *dst, int r,
                                       int64_t panel) {
    __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5,
                                  36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    __mmask32 m0 = (__mmask32)((1ull << mag_gemm_min(2 * r, 32)) - 1); /* pair words of rows 0-15 */
    __mmask32 m1 = (__mmask32)((1ull << (r > 16 ? 2 * r - 32 : 0)) - 1);   /* and of rows 16-31 */
    for (int64_t p = 0; p < k; p += 2) {
        const uint16_t *x0 = x + p * cs, *x1 = x0 + cs;
        uint16_t *d = dst + p * r;
        for (int64_t i0 = 0; i0 < m; i0 += r, d += panel) {
            __mmask32 rm = (__mmask32)((1ull << mag_gemm_min(r, m - i0)) - 1);
            __m512i a = _mm512_maskz_loadu_epi16(rm, x0 + i0);
            __m512i b = p + 1 < k ? _mm512_maskz_loadu_epi16(rm, x1 + i0) : _mm512_setzero_si512();
            _mm512_mask_storeu_epi16(d, m0, _mm512_permutex2var_epi16(a, lo, b));
            if (r > 16) _mm512_mask_storeu_epi16(d + 32, m1, _mm512_permutex2var_epi16(a, hi, b));
        }
    }
}

/*
 * bf16 pair panels (pack.h's layout), r rows a panel, for any strides: contiguous rows interleave
 * as above, rows with contiguous depths move as 32-bit pairs through the vector transposition.
 */
static inline __attribute__((always_inline)) void mag_pack_pairs(int64_t m, int64_t k, const uint16_t *x, int64_t rs,
                                                                   int64_t cs, uint16_t *dst, const int r) {
    if (rs == 1) {
        mag_pack_interleave(m, k, x, cs, dst, r, r * mag_gemm_roundup(k, 2));
        return;
    }
    if (cs != 1) {
        pack_pair_panels(m, k, x, rs, cs, dst, r);
        return;
    }
    int64_t kp = mag_gemm_roundup(k, 2);
    for (int64_t i0 = 0; i0 < m; i0 += r) {
        int64_t rows = mag_gemm_min(r, m - i0);
        const uint16_t *xi = x + i0 * rs;
        mag_gemm_u32 *d = (mag_gemm_u32 *)(dst + i0 * kp);
        mag_pack_tr32(rows, k / 2, xi, rs * 2, d, r);
        if (k & 1) /* the last depth pairs with a zero */
            for (int64_t i = 0; i < r; ++i) d[(k / 2) * r + i] = i < rows ? xi[i * rs + k - 1] : 0;
    }
}

#endif
