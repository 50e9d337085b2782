/*
 * The AVX-512 float32 path (built with AVX-512 F/BW/VL/DQ flags, run only where CPUID says so).
 * float16 and bfloat16 operands are widened to float32 while packing, so this one microkernel
 * also serves them on machines without (or for paths not using) bf16 instructions.
 */
#include "pack.h"
#include "avx512.h"

/* n contiguous elements to float32; masked loads take the tail (packing copies a panel's 32 at a time, inline). */
static inline void cvt_row(mag_dtype_t dt, const void *src, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mag_tail_mask(n - i);
        __m512 f;
        if (dt == MAG_DTYPE_FLOAT32) {
            f = _mm512_maskz_loadu_ps(m, (const float *)src + i);
        } else {
            __m256i v = _mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i);
            f = dt == MAG_DTYPE_FLOAT16 ? _mm512_cvtph_ps(v)
                                        : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
        }
        _mm512_mask_storeu_ps(dst + i, m, f);
    }
}

/* float32 -> bf16 in the high half of each lane, round to nearest even, NaN kept quiet (mag_f32_to_bf16). */
static inline __m512i bf16_round(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), u, _mm512_set1_epi32(0x400000));
}

/* 16 float32 lanes to 16 bfloat16 (round to nearest even). */
static inline __m256i to_bf16(__m512 v) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round(v), 16)); }

/* alpha * t (+ beta * c) for 16 lanes of a row of C in dtype dt. */
static inline __m512 combine(mag_dtype_t dt, __mmask16 k, const float *t, const void *c, __m512 va, float beta) {
    __m512 v = _mm512_mul_ps(va, _mm512_maskz_loadu_ps(k, t));
    if (beta == 0.0f) return v;
    __m512 old;
    if (dt == MAG_DTYPE_FLOAT32) {
        old = _mm512_maskz_loadu_ps(k, c);
    } else {
        float tmp[16];
        cvt_row(dt, c, __builtin_popcount(k), tmp);
        old = _mm512_maskz_loadu_ps(k, tmp);
    }
    return _mm512_fmadd_ps(_mm512_set1_ps(beta), old, v);
}

/* At most 16 rows of a tile into a column-major C (C^T = B^T A^T): transpose 16 columns at a time. */
static void epilogue_transposed(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c,
                                int64_t csc, float alpha, float beta) {
    float tt[16 * 16];
    size_t es = mag_dtype_info(dt)->size;
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 k = mag_tail_mask(n - j);
        __m512i v[16];
        for (int i = 0; i < 16; ++i)
            v[i] = i < m ? _mm512_maskz_loadu_epi32(k, t + i * ldt + j) : _mm512_setzero_si512();
        mag_transpose16(v);
        uint8_t *cj = (uint8_t *)c + j * csc * (int64_t)es;
        int64_t rows = mag_gemm_min(16, n - j);
        if (alpha == 1.0f && beta == 0.0f && dt != MAG_DTYPE_FLOAT16) { /* the plain product: store directly */
            __mmask16 km = mag_tail_mask(m);
            for (int64_t q = 0; q < rows; ++q, cj += csc * (int64_t)es)
                if (dt == MAG_DTYPE_FLOAT32)
                    _mm512_mask_storeu_epi32(cj, km, v[q]);
                else
                    _mm256_mask_storeu_epi16(cj, km, to_bf16(_mm512_castsi512_ps(v[q])));
            continue;
        }
        for (int q = 0; q < 16; ++q) _mm512_storeu_si512(tt + q * 16, v[q]);
        mag_gemm_epilogue_avx512(dt, rows, m, tt, 16, cj, csc, 1, alpha, beta);
    }
}

/* The vector epilogue for unit column stride, or unit row stride (transposed); others take the portable one. */
void mag_gemm_epilogue_avx512(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                              int64_t csc, float alpha, float beta) {
    if (csc != 1 && rsc == 1) { /* 16 rows at a time */
        size_t es = mag_dtype_info(dt)->size;
        for (int64_t i = 0; i < m; i += 16)
            epilogue_transposed(dt, mag_gemm_min(16, m - i), n, t + i * ldt, ldt, (uint8_t *)c + i * es, csc, alpha,
                                beta);
        return;
    }
    if (csc != 1) {
        mag_gemm_epilogue_generic(dt, m, n, t, ldt, c, rsc, csc, alpha, beta);
        return;
    }
    const __m512i hi_halves = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                               27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t i = 0; i < m; ++i, t += ldt) {
        float *cf = (float *)c + i * rsc;
        uint16_t *ch = (uint16_t *)c + i * rsc;
        int64_t j = 0;
        if (dt == MAG_DTYPE_BFLOAT16) /* 32 at a time: one permute gathers the rounded high halves */
            for (; j + 32 <= n; j += 32) {
                __m512i r0 = bf16_round(combine(dt, 0xffff, t + j, ch + j, va, beta));
                __m512i r1 = bf16_round(combine(dt, 0xffff, t + j + 16, ch + j + 16, va, beta));
                _mm512_storeu_si512(ch + j, _mm512_permutex2var_epi16(r0, hi_halves, r1));
            }
        for (; j < n; j += 16) {
            __mmask16 k = mag_tail_mask(n - j);
            if (dt == MAG_DTYPE_FLOAT32) {
                _mm512_mask_storeu_ps(cf + j, k, combine(dt, k, t + j, cf + j, va, beta));
                continue;
            }
            __m512 v = combine(dt, k, t + j, ch + j, va, beta);
            __m256i h = dt == MAG_DTYPE_FLOAT16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                                                : to_bf16(v);
            _mm256_mask_storeu_epi16(ch + j, k, h);
        }
    }
}

enum { MR = 14, NV = 2, NR = 16 * NV };

/* float32 rows with contiguous depths take the vector transposition; the rest the template. */
static inline __attribute__((always_inline)) void pack(mag_dtype_t dt, int64_t m, int64_t k, const void *x,
                                                         int64_t rs, int64_t cs, void *dst, const int r) {
    if (dt != MAG_DTYPE_FLOAT32 || cs != 1 || rs == 1) {
        pack_f32_panels(dt, m, k, x, rs, cs, dst, r, cvt_row);
        return;
    }
    for (int64_t i0 = 0; i0 < m; i0 += r)
        mag_pack_tr32(mag_gemm_min(r, m - i0), k, (const float *)x + i0 * rs, rs * 4, (mag_gemm_u32 *)dst + i0 * k, r);
}

MAG_GEMM_PACKERS(pack, MR, NR)
MAG_GEMM_UKR_F32(ukr, MR, NV, _mm512, __m512, 16)
MAG_GEMM_UKR_F32_SHORT14(ukr, NV, _mm512, __m512, 16)
MAG_GEMM_UKR_F32_IN_PLACE14(ukr, NV, _mm512, __m512, 16)

const mag_gemm_kernel_t mag_gemm_f32_avx512 = {
    .mr = MR, .nr = NR, .kq = 1, .esz = 4, .mc = 14 * 6, .kc = 256, .nc = 1024,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .ukr_rows = ukr_rows, .ukr_short = ukr_short,
    .epi = mag_gemm_epilogue_avx512,
};
