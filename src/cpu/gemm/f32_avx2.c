/*
 * The AVX2 + FMA + F16C path: a 6 x 16 float32 microkernel (12 accumulators in the 16 YMM
 * registers); float16 and bfloat16 are widened to float32 while packing. GEMV: gemv_avx2.c.
 */
#include "avx2.h"
#include "pack.h"
#include "ukr.h"

static void cvt_row(mag_dtype_t dt, const void *src, int64_t n, float *dst) {
    if (dt == MAG_DTYPE_FLOAT32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, mag_avx2_ld8(dt, h, i));
    for (; i < n; ++i) dst[i] = dt == MAG_DTYPE_FLOAT16 ? mag_f16_to_f32(h[i]) : mag_bf16_to_f32(h[i]);
}

/* Transpose 8 vectors of 8 floats (r[i] lane q -> r[q] lane i): unpack pairs, shuffle quads, swap 128-bit halves. */
static inline void transpose8(__m256 r[8]) {
    __m256 a[8], b[8];
    for (int j = 0; j < 4; ++j) {
        a[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        a[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
    for (int j = 0; j < 2; ++j) { /* b[4j + c], each 128-bit half: column c of rows 4j .. 4j+3 */
        b[4 * j] = _mm256_shuffle_ps(a[4 * j], a[4 * j + 2], 0x44);
        b[4 * j + 1] = _mm256_shuffle_ps(a[4 * j], a[4 * j + 2], 0xee);
        b[4 * j + 2] = _mm256_shuffle_ps(a[4 * j + 1], a[4 * j + 3], 0x44);
        b[4 * j + 3] = _mm256_shuffle_ps(a[4 * j + 1], a[4 * j + 3], 0xee);
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x31);
    }
}

/* The first n lanes of v (all 8 for n >= 8); a masked store is several times slower on Zen 3. */
static inline void store_first(float *d, __m256 v, int n) {
    if (n >= 8) {
        _mm256_storeu_ps(d, v);
        return;
    }
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) _mm_storeu_ps(d, h), h = _mm256_extractf128_ps(v, 1), d += 4, n -= 4;
    if (n >= 2) _mm_storel_pi((__m64 *)d, h), h = _mm_movehl_ps(h, h), d += 2, n -= 2;
    if (n) _mm_store_ss(d, h);
}

/*
 * Panels of rows whose depths are contiguous (the weight of x @ W.T, and x itself as A): blocks
 * of 8 rows x 8 depths through a register transposition. Element by element, this copy took a
 * third of a float32 128 x 768 x 3072 x @ W.T at 1 thread.
 */
static void pack_rows(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, float *dst, int r) {
    const int64_t kv = k / 8 * 8;
    for (int64_t i0 = 0; i0 < m; i0 += r, dst += r * k) {
        int64_t rows = mag_gemm_min(r, m - i0);
        for (int g = 0; g < r; g += 8) { /* 8 lanes of the panel's rows at a time; a narrower panel stores fewer */
            for (int64_t p = 0; p < kv; p += 8) {
                __m256 v[8];
                for (int i = 0; i < 8; ++i)
                    v[i] = g + i < rows ? mag_avx2_ld8(dt, x, (i0 + g + i) * rs + p) : _mm256_setzero_ps();
                transpose8(v);
                for (int q = 0; q < 8; ++q) store_first(dst + (p + q) * r + g, v[q], r - g);
            }
        }
        for (int64_t p = kv; p < k; ++p)
            for (int64_t i = 0; i < r; ++i) dst[p * r + i] = i < rows ? gemm_ld(dt, x, (i0 + i) * rs + p) : 0.0f;
    }
}

/* 8 float32 lanes to bfloat16, round to nearest even, NaN kept quiet (mag_f32_to_bf16). */
static inline __m128i to_bf16(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    r = _mm256_srli_epi32(_mm256_blendv_epi8(r, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))), 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); /* lanes <= 0xffff: exact */
}

/*
 * The vector epilogue for rows of C with a unit column stride (every GEMM tile and GEMV row on
 * this path); other layouts and each row's last n % 8 columns take the portable one. Element by
 * element, storing bfloat16 took a tenth of a bfloat16 128 x 6144 x 1024 x @ W.T.
 */
void mag_gemm_epilogue_avx2(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                            int64_t csc, float alpha, float beta) {
    if (csc != 1) {
        mag_gemm_epilogue_generic(dt, m, n, t, ldt, c, rsc, csc, alpha, beta);
        return;
    }
    const int64_t es = (int64_t)mag_dtype_info(dt)->size, nv = n / 8 * 8;
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int64_t i = 0; i < m; ++i, t += ldt) {
        uint8_t *ci = (uint8_t *)c + i * rsc * es;
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 v = _mm256_mul_ps(va, _mm256_loadu_ps(t + j));
            if (beta != 0.0f) v = _mm256_fmadd_ps(vb, mag_avx2_ld8(dt, ci, j), v);
            if (dt == MAG_DTYPE_FLOAT32) _mm256_storeu_ps((float *)ci + j, v);
            else if (dt == MAG_DTYPE_FLOAT16) _mm_storeu_si128((__m128i *)(ci + j * es), _mm256_cvtps_ph(v, 0));
            else _mm_storeu_si128((__m128i *)(ci + j * es), to_bf16(v));
        }
        if (nv < n) mag_gemm_epilogue_generic(dt, 1, n - nv, t + nv, ldt, ci + nv * es, rsc, 1, alpha, beta);
    }
}

enum { MR = 6, NV = 2, NR = 8 * NV };

static inline __attribute__((always_inline)) void pack(mag_dtype_t dt, int64_t m, int64_t k, const void *x,
                                                         int64_t rs, int64_t cs, void *dst, const int r) {
    if (cs == 1 && rs != 1) pack_rows(dt, m, k, x, rs, dst, r);
    else pack_f32_panels(dt, m, k, x, rs, cs, dst, r, cvt_row);
}

MAG_GEMM_PACKERS(pack, MR, NR)
MAG_GEMM_UKR_F32(ukr, MR, NV, _mm256, __m256, 8)

const mag_gemm_kernel_t mag_gemm_f32_avx2 = {
    .mr = MR, .nr = NR, .kq = 1, .esz = 4, .mc = 6 * 16, .kc = 256, .nc = 1024,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .epi = mag_gemm_epilogue_avx2,
};
