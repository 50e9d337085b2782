/*
 * Per-dtype load/store for kernels. Every dtype has a storage type and a compute type:
 * 16-bit floats compute in float32, booleans as bool, the rest natively. The X-lists fan a
 * kernel body out over dtypes: X(ID, storage type, compute type).
 */
#ifndef MAG_CPU_DTYPE_OPS_H
#define MAG_CPU_DTYPE_OPS_H

#include "../../backend.h"

#include <math.h>
#include <string.h>
#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
#endif

#define MAG_FLOAT_DTYPES(X) X(FLOAT32, float, float) X(FLOAT16, uint16_t, float) X(BFLOAT16, uint16_t, float) X(FLOAT64, double, double)
#define MAG_SINT_DTYPES(X) X(INT8, int8_t, int8_t) X(INT16, int16_t, int16_t) X(INT32, int32_t, int32_t) X(INT64, int64_t, int64_t)
#define MAG_UINT_DTYPES(X) X(UINT8, uint8_t, uint8_t) X(UINT16, uint16_t, uint16_t) X(UINT32, uint32_t, uint32_t) X(UINT64, uint64_t, uint64_t)
#define MAG_INT_DTYPES(X) MAG_SINT_DTYPES(X) MAG_UINT_DTYPES(X)
#define MAG_NUMERIC_DTYPES(X) MAG_FLOAT_DTYPES(X) MAG_INT_DTYPES(X)
#define MAG_BOOL_DTYPES(X) X(BOOLEAN, uint8_t, bool)
#define MAG_ALL_DTYPES(X) MAG_NUMERIC_DTYPES(X) MAG_BOOL_DTYPES(X)

/*
 * The same lists carrying one extra argument through: X(arg, ID, storage type, compute type).
 * They let an op list fan each of its lines out over a dtype set (see kernels/ew.h).
 */
#define MAG_FLOAT_DTYPES_A(X, a) X(a, FLOAT32, float, float) X(a, FLOAT16, uint16_t, float) X(a, BFLOAT16, uint16_t, float) X(a, FLOAT64, double, double)
#define MAG_SINT_DTYPES_A(X, a) X(a, INT8, int8_t, int8_t) X(a, INT16, int16_t, int16_t) X(a, INT32, int32_t, int32_t) X(a, INT64, int64_t, int64_t)
#define MAG_UINT_DTYPES_A(X, a) X(a, UINT8, uint8_t, uint8_t) X(a, UINT16, uint16_t, uint16_t) X(a, UINT32, uint32_t, uint32_t) X(a, UINT64, uint64_t, uint64_t)
#define MAG_BOOL_DTYPES_A(X, a) X(a, BOOLEAN, uint8_t, bool)
#define MAG_INT_DTYPES_A(X, a) MAG_SINT_DTYPES_A(X, a) MAG_UINT_DTYPES_A(X, a)
#define MAG_INTEGRAL_DTYPES_A(X, a) MAG_INT_DTYPES_A(X, a) MAG_BOOL_DTYPES_A(X, a)
#define MAG_NUMERIC_DTYPES_A(X, a) MAG_FLOAT_DTYPES_A(X, a) MAG_INT_DTYPES_A(X, a)
#define MAG_ALL_DTYPES_A(X, a) MAG_NUMERIC_DTYPES_A(X, a) MAG_BOOL_DTYPES_A(X, a)

/* For the small helpers that inner loops call: every kernel file lands in one big translation
 * unit (variant.c), where the compiler's inlining budget runs out, and a call left in a loop
 * keeps it from vectorising. */
#define MAG_INLINE static inline __attribute__((always_inline))

/*
 * 16-bit float loads and stores, inline and branch-free (selects by masks) so that loops over
 * them vectorise; the results are those of mag_f16_to_f32 / mag_bf16_to_f32 (the tests compare
 * all 65536 inputs) and mag_f32_to_f16 / mag_f32_to_bf16 (all 2^32 inputs checked when written).
 */
MAG_INLINE float mag_ld_f16(uint16_t h) {
    uint32_t mag = (uint32_t)(h & 0x7fffu);
    uint32_t special = 0u - (uint32_t)(mag >= 0x7c00u), tiny = 0u - (uint32_t)(mag < 0x400u); /* masks */
    /* normal: exponent rebiased by 127 - 15; inf and NaN (payload kept): by 255 - 31 */
    uint32_t bits = (mag << 13) + 0x38000000u + (special & 0x38000000u);
    float sub = (float)(int32_t)mag * 0x1p-24f, f; /* subnormal and zero: m * 2^-24 */
    uint32_t sub_bits;
    memcpy(&sub_bits, &sub, 4);
    bits = (tiny & sub_bits) | (~tiny & bits) | ((uint32_t)(h & 0x8000u) << 16);
    memcpy(&f, &bits, 4);
    return f;
}
MAG_INLINE float mag_ld_bf16(uint16_t h) { return mag_bitsf((uint32_t)h << 16); }
MAG_INLINE uint16_t mag_st_f16(float x) {
    uint32_t u = mag_fbits(x), a = u & 0x7fffffffu;
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    /* subnormal or zero: adding 0.5 makes the FPU round the mantissa at the f16 subnormal position */
    uint32_t sub = mag_fbits(mag_bitsf(a) + 0.5f) - 0x3f000000u;
    uint32_t norm = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13; /* rebias (-112 << 23), round to nearest even */
    uint32_t r = a < 0x38800000u ? sub : norm;
    r = a >= 0x477ff000u ? 0x7c00u : r; /* >= 65520 rounds to inf */
    r = a > 0x7f800000u ? nan : r;
    return (uint16_t)(((u >> 16) & 0x8000u) | r);
}
MAG_INLINE uint16_t mag_st_bf16(float x) {
    uint32_t u = mag_fbits(x);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; /* round to nearest even */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r); /* NaN: quiet, sign kept */
}

/*
 * n float16 values to float32 and back, 16 or 8 at a time with AVX-512 or F16C where the
 * variant has them (the compiler does not vectorise the conversion instructions on its own),
 * the same bits as the scalar helpers above: the hardware quiets a signalling NaN on load, so
 * its quiet bit is cleared again.
 */
MAG_INLINE void mag_f16_to_f32_n(float *d, const uint16_t *s, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m256i exp_q16 = _mm256_set1_epi16(0x7e00), snan_exp16 = _mm256_set1_epi16(0x7c00);
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(s + i));
        __mmask16 snan = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, exp_q16), snan_exp16) &
                         _mm256_test_epi16_mask(h, _mm256_set1_epi16(0x1ff));
        __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
        _mm512_storeu_ps(d + i, _mm512_castsi512_ps(_mm512_mask_xor_epi32(f, snan, f, _mm512_set1_epi32(0x400000))));
    }
#endif
#if defined(__F16C__) && defined(__AVX2__)
    const __m128i exp_q = _mm_set1_epi16(0x7e00), snan_exp = _mm_set1_epi16(0x7c00), payload = _mm_set1_epi16(0x1ff);
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i snan = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, payload), _mm_setzero_si128()),
                                        _mm_cmpeq_epi16(_mm_and_si128(h, exp_q), snan_exp));
        __m256i quiet = _mm256_and_si256(_mm256_cvtepi16_epi32(snan), _mm256_set1_epi32(0x400000));
        __m256i f = _mm256_xor_si256(_mm256_castps_si256(_mm256_cvtph_ps(h)), quiet);
        _mm256_storeu_ps(d + i, _mm256_castsi256_ps(f));
    }
#endif
    for (; i < n; ++i) d[i] = mag_ld_f16(s[i]);
}
MAG_INLINE void mag_f32_to_f16_n(uint16_t *d, const float *s, int64_t n) {
    int64_t i = 0;
#ifdef __AVX512F__
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
#if defined(__F16C__) && defined(__AVX2__)
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d + i), h);
    }
#endif
    for (; i < n; ++i) d[i] = mag_st_f16(s[i]);
}

/* bfloat16 needs no special instructions: widening vectorises as it is */
MAG_INLINE void mag_bf16_to_f32_n(float *d, const uint16_t *s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = mag_ld_bf16(s[i]);
}
#if defined(__F16C__) && defined(__AVX2__)
/* mag_st_bf16 on the 8 floats at s, narrowed with one pack: GCC vectorises the scalar loop with
 * 4 shuffles per 8 values (f32 -> bf16 of 4M values, Zen 4, one thread: 0.74 -> 0.54 ms) */
MAG_INLINE __m128i mag_bf16x8(const float *s) {
    const __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)s), one = _mm256_set1_epi32(1);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one); /* ties to even */
    __m256i even = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    __m256i h = _mm256_srli_epi32(_mm256_blendv_epi8(even, quiet, nan), 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
#endif
MAG_INLINE void mag_f32_to_bf16_n(uint16_t *d, const float *s, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(void *)(d + i), mag_bf16x8(s + i));
#endif
    for (; i < n; ++i) d[i] = mag_st_bf16(s[i]);
}

/* n contiguous float values, storage -> compute type and back (the float dtypes only) */
#define MAG_LD_N_FLOAT32(d, s, n) memcpy((d), (s), (size_t)(n) * sizeof(float))
#define MAG_LD_N_FLOAT64(d, s, n) memcpy((d), (s), (size_t)(n) * sizeof(double))
#define MAG_LD_N_FLOAT16(d, s, n) mag_f16_to_f32_n((d), (s), (n))
#define MAG_LD_N_BFLOAT16(d, s, n) mag_bf16_to_f32_n((d), (s), (n))
#define MAG_ST_N_FLOAT32(d, s, n) memcpy((d), (s), (size_t)(n) * sizeof(float))
#define MAG_ST_N_FLOAT64(d, s, n) memcpy((d), (s), (size_t)(n) * sizeof(double))
#define MAG_ST_N_FLOAT16(d, s, n) mag_f32_to_f16_n((d), (s), (n))
#define MAG_ST_N_BFLOAT16(d, s, n) mag_f32_to_bf16_n((d), (s), (n))

/* load: storage -> compute */
#define MAG_LD_FLOAT32(v) (v)
#define MAG_LD_FLOAT16(v) mag_ld_f16(v)
#define MAG_LD_BFLOAT16(v) mag_ld_bf16(v)
#define MAG_LD_FLOAT64(v) (v)
#define MAG_LD_BOOLEAN(v) ((v) != 0)
#define MAG_LD_INT8(v) (v)
#define MAG_LD_INT16(v) (v)
#define MAG_LD_INT32(v) (v)
#define MAG_LD_INT64(v) (v)
#define MAG_LD_UINT8(v) (v)
#define MAG_LD_UINT16(v) (v)
#define MAG_LD_UINT32(v) (v)
#define MAG_LD_UINT64(v) (v)

/*
 * Float -> integer: truncate toward zero; NaN and values outside the range give PyTorch's
 * results on x86 (which NumPy shares), spelled out because C leaves them undefined:
 *   int64:         out of range or NaN -> INT64_MIN ("integer indefinite");
 *   int32:         out of range or NaN -> INT32_MIN;
 *   int8, int16, uint16: the int32 result, wrapped to the width (so NaN, +-inf -> 0);
 *   uint8:         the int64 result, wrapped (PyTorch goes through int64 for uint8);
 *   uint32/uint64: below 2^(n-1) the signed n-bit result (so -1.0 -> 2^n - 1, NaN -> 2^(n-1)),
 *                  from 2^(n-1) on the signed result of x - 2^(n-1), plus 2^(n-1)
 *                  (so 2^n, +inf -> 0): the compilers' unsigned conversion sequence.
 */
static inline int64_t mag_f2i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}
static inline int32_t mag_f2i32(double x) { return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN; }
static inline uint32_t mag_f2u32(double x) {
    return x >= 2147483648.0 ? (uint32_t)mag_f2i32(x - 2147483648.0) + 0x80000000u : (uint32_t)mag_f2i32(x);
}
static inline uint64_t mag_f2u64(double x) {
    return x >= 9223372036854775808.0 ? (uint64_t)mag_f2i64(x - 9223372036854775808.0) + 0x8000000000000000u
                                      : (uint64_t)mag_f2i64(x);
}
#define MAG_F2INT(D, v) _Generic((v), float: D(v), double: D(v), default: (v))

/* store: any C arithmetic value -> storage, with the conversion rules above */
#define MAG_ST_FLOAT32(v) ((float)(v))
#define MAG_ST_FLOAT16(v) mag_st_f16((float)(v))
#define MAG_ST_BFLOAT16(v) mag_st_bf16((float)(v))
#define MAG_ST_FLOAT64(v) ((double)(v))
#define MAG_ST_BOOLEAN(v) ((uint8_t)((v) != 0))
#define MAG_ST_INT8(v) ((int8_t)MAG_F2INT(mag_f2i32, v))
#define MAG_ST_INT16(v) ((int16_t)MAG_F2INT(mag_f2i32, v))
#define MAG_ST_INT32(v) ((int32_t)MAG_F2INT(mag_f2i32, v))
#define MAG_ST_INT64(v) ((int64_t)MAG_F2INT(mag_f2i64, v))
#define MAG_ST_UINT8(v) ((uint8_t)MAG_F2INT(mag_f2i64, v))
#define MAG_ST_UINT16(v) ((uint16_t)MAG_F2INT(mag_f2i32, v))
#define MAG_ST_UINT32(v) ((uint32_t)MAG_F2INT(mag_f2u32, v))
#define MAG_ST_UINT64(v) ((uint64_t)MAG_F2INT(mag_f2u64, v))

/* A scalar attribute as a compute-type value. */
static inline double mag_scalar_as_double(mag_scalar_t s) {
    switch (s.kind) {
    case MAG_SCALAR_FLOAT: return s.f;
    case MAG_SCALAR_UINT: return (double)s.u;
    default: return (double)s.i;
    }
}
static inline int64_t mag_scalar_as_int(mag_scalar_t s) {
    switch (s.kind) {
    case MAG_SCALAR_FLOAT: return mag_f2i64(s.f);
    case MAG_SCALAR_UINT: return (int64_t)s.u;
    default: return s.i;
    }
}

#endif
