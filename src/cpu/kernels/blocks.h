/*
 * Dense blocks for the reduction and norm kernels: conversion of a run of values between a
 * dtype's storage and its compute type (16-bit floats through F16C where the variant has it),
 * and 64-byte SIMD vectors through the GCC/Clang vector extension, which is one register on
 * AVX-512 and is split by the compiler into two or four on narrower variants.
 *
 * Vectors never cross a function boundary (that would depend on the variant's ABI): helpers
 * that use them take and return pointers or scalars.
 */
#ifndef MAG_CPU_KERNELS_BLOCKS_H
#define MAG_CPU_KERNELS_BLOCKS_H

#include "ew.h"

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#define MAG_VBYTES 32
#define MAG_VLOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define MAG_VSTORE(p, v) memcpy((p), &(v), sizeof(v))

static inline void mag_f16_to_f32_block(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
#endif
    for (; i < n; ++i) dst[i] = mag_ld_f16(src[i]);
}

static inline void mag_f32_to_f16_block(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; ++i) dst[i] = mag_f32_to_f16(src[i]);
}

/* mag_f32_to_bf16 (round to nearest even, NaN quieted), branch-free so that the loop vectorises */
static inline void mag_f32_to_bf16_block(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, src + i, 4);
        uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
}

/*
 * Per dtype: mag_block_view_<ID>(src, n, buf) gives the n values at src in the compute type,
 * in place when storage and compute types agree, else converted into buf;
 * mag_block_store_<ID>(src, dst, n) stores n compute values.
 */
#define MAG_BLOCK_FNS(ID, ST, CT)                                                                                      \
    static inline const CT *mag_block_view_##ID(const void *src, int64_t n, CT *buf) {                                 \
        const ST *s = (const ST *)src;                                                                                 \
        if (MAG_DTYPE_##ID == MAG_DTYPE_FLOAT16) mag_f16_to_f32_block((const uint16_t *)src, (float *)(void *)buf, n); \
        else if (sizeof(ST) == sizeof(CT) && MAG_DTYPE_##ID != MAG_DTYPE_BOOLEAN) return (const CT *)src;              \
        else                                                                                                           \
            for (int64_t k = 0; k < n; ++k) buf[k] = MAG_LD_##ID(s[k]);                                                \
        return buf;                                                                                                    \
    }                                                                                                                  \
    static inline void mag_block_store_##ID(const CT *src, void *dst, int64_t n) {                                     \
        if (MAG_DTYPE_##ID == MAG_DTYPE_FLOAT16)                                                                       \
            mag_f32_to_f16_block((const float *)(const void *)src, (uint16_t *)dst, n);                                \
        else if (MAG_DTYPE_##ID == MAG_DTYPE_BFLOAT16)                                                                 \
            mag_f32_to_bf16_block((const float *)(const void *)src, (uint16_t *)dst, n);                               \
        else                                                                                                           \
            for (int64_t k = 0; k < n; ++k) ((ST *)dst)[k] = MAG_ST_##ID(src[k]);                                      \
    }
MAG_ALL_DTYPES(MAG_BLOCK_FNS)
#undef MAG_BLOCK_FNS

/*
 * Vector loads and stores that convert: MAG_VLOAD_<ID>(v, p) sets v, a vector of the compute type
 * (float32 for 16-bit floats), to the MAG_VBYTES / sizeof(compute) values of dtype ID at p;
 * MAG_VSTORE_<ID>(p, v) stores them back (16-bit floats rounded to nearest even).
 */
typedef float mag_vf_t __attribute__((vector_size(MAG_VBYTES)));
typedef uint32_t mag_vu_t __attribute__((vector_size(MAG_VBYTES)));
typedef uint16_t mag_vh_t __attribute__((vector_size(MAG_VBYTES / 2)));

static inline void mag_vload_f16(mag_vf_t *v, const uint16_t *p) {
#if defined(__AVX512F__) && MAG_VBYTES == 64
    __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
    memcpy(v, &f, sizeof(f));
#elif defined(__F16C__)
    for (int h = 0; h < MAG_VBYTES / 32; ++h) {
        __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 8 * h)));
        memcpy((char *)v + 32 * h, &f, sizeof(f));
    }
#else
    float f[MAG_VBYTES / 4];
    for (int k = 0; k < MAG_VBYTES / 4; ++k) f[k] = mag_ld_f16(p[k]);
    memcpy(v, f, sizeof(f));
#endif
}

static inline void mag_vstore_f16(uint16_t *p, const mag_vf_t *v) {
#if defined(__AVX512F__) && MAG_VBYTES == 64
    __m512 f;
    memcpy(&f, v, sizeof(f));
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
    for (int h = 0; h < MAG_VBYTES / 32; ++h) {
        __m256 f;
        memcpy(&f, (const char *)v + 32 * h, sizeof(f));
        _mm_storeu_si128((__m128i *)(void *)(p + 8 * h), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#else
    float f[MAG_VBYTES / 4];
    memcpy(f, v, sizeof(f));
    for (int k = 0; k < MAG_VBYTES / 4; ++k) p[k] = mag_f32_to_f16(f[k]);
#endif
}

static inline void mag_vload_bf16(mag_vf_t *v, const uint16_t *p) {
    mag_vh_t h;
    memcpy(&h, p, sizeof(h));
    mag_vu_t u = __builtin_convertvector(h, mag_vu_t) << 16;
    memcpy(v, &u, sizeof(u));
}

/* mag_f32_to_bf16 in lanes */
static inline void mag_vstore_bf16(uint16_t *p, const mag_vf_t *v) {
    mag_vu_t u, nan;
    memcpy(&u, v, sizeof(u));
    nan = (mag_vu_t)((u & 0x7fffffffu) > 0x7f800000u);
    u = (nan & ((u >> 16) | 0x40u)) | (~nan & ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));
    mag_vh_t h = __builtin_convertvector(u, mag_vh_t);
    memcpy(p, &h, sizeof(h));
}

#define MAG_VLOAD_FLOAT16(v, p) mag_vload_f16(&(v), (const uint16_t *)(p))
#define MAG_VLOAD_BFLOAT16(v, p) mag_vload_bf16(&(v), (const uint16_t *)(p))
#define MAG_VSTORE_FLOAT16(p, v) mag_vstore_f16((uint16_t *)(p), &(v))
#define MAG_VSTORE_BFLOAT16(p, v) mag_vstore_bf16((uint16_t *)(p), &(v))
#define MAG_VLOAD_FLOAT32 MAG_VLOAD
#define MAG_VLOAD_FLOAT64 MAG_VLOAD
#define MAG_VLOAD_INT8 MAG_VLOAD
#define MAG_VLOAD_INT16 MAG_VLOAD
#define MAG_VLOAD_INT32 MAG_VLOAD
#define MAG_VLOAD_INT64 MAG_VLOAD
#define MAG_VLOAD_UINT8 MAG_VLOAD
#define MAG_VLOAD_UINT16 MAG_VLOAD
#define MAG_VLOAD_UINT32 MAG_VLOAD
#define MAG_VLOAD_UINT64 MAG_VLOAD
#define MAG_VSTORE_FLOAT32 MAG_VSTORE
#define MAG_VSTORE_FLOAT64 MAG_VSTORE

/*
 * out (A) = the sum of vexpr over the m values of dtype ID at src (a const storage pointer),
 * where vexpr is written in x (a vector of A, or a scalar for the tail) and scalars of the
 * caller: four vector accumulators, then a pairwise tree over their lanes, so m adds make only
 * m / (4 * lanes) sequential steps per lane. The arguments are expanded first (ID may be a macro).
 */
#define MAG_VSUM(A, ID, src, m, vexpr, out) MAG_VSUM_(A, ID, src, m, vexpr, out)
#define MAG_VSUM_(A, ID, src, m, vexpr, out)                                                                           \
    do {                                                                                                               \
        typedef A vsum_t_ __attribute__((vector_size(MAG_VBYTES)));                                                    \
        enum { L_ = MAG_VBYTES / sizeof(A) };                                                                          \
        vsum_t_ s0_ = {0}, s1_ = {0}, s2_ = {0}, s3_ = {0};                                                            \
        int64_t i_ = 0;                                                                                                \
        for (; i_ + 4 * L_ <= (m); i_ += 4 * L_) {                                                                     \
            vsum_t_ x;                                                                                                 \
            MAG_VLOAD_##ID(x, (src) + i_);                                                                             \
            s0_ += (vexpr);                                                                                            \
            MAG_VLOAD_##ID(x, (src) + i_ + L_);                                                                        \
            s1_ += (vexpr);                                                                                            \
            MAG_VLOAD_##ID(x, (src) + i_ + 2 * L_);                                                                    \
            s2_ += (vexpr);                                                                                            \
            MAG_VLOAD_##ID(x, (src) + i_ + 3 * L_);                                                                    \
            s3_ += (vexpr);                                                                                            \
        }                                                                                                              \
        for (; i_ + L_ <= (m); i_ += L_) {                                                                             \
            vsum_t_ x;                                                                                                 \
            MAG_VLOAD_##ID(x, (src) + i_);                                                                             \
            s0_ += (vexpr);                                                                                            \
        }                                                                                                              \
        s0_ = (s0_ + s1_) + (s2_ + s3_);                                                                               \
        A l_[L_];                                                                                                      \
        MAG_VSTORE(l_, s0_);                                                                                           \
        for (int w_ = L_ / 2; w_ > 0; w_ /= 2)                                                                         \
            for (int k_ = 0; k_ < w_; ++k_) l_[k_] += l_[k_ + w_];                                                     \
        (out) = l_[0];                                                                                                 \
        for (; i_ < (m); ++i_) {                                                                                       \
            A x = MAG_LD_##ID((src)[i_]);                                                                              \
            (out) += (vexpr);                                                                                          \
        }                                                                                                              \
    } while (0)

#endif
