/*
 * Dense blocks for the reduction and norm kernels: SIMD vectors through the GCC/Clang vector
 * extension, with loads and stores that convert between a dtype's storage and its compute type
 * in registers (16-bit floats through F16C where the variant has it), and block conversion for
 * the kernels' scalar paths. Vectors are MAG_VBYTES = 32 bytes: one AVX2 register, two SSE ones
 * on the generic variant; on AVX-512 too, because Zen 4 (which splits 512-bit operations)
 * streams 256-bit loads about 6% faster, and the kernels that use these are bound by memory.
 *
 * Vectors never cross a function boundary by value (that would depend on the variant's ABI):
 * helpers take pointers.
 */
#ifndef MAG_CPU_KERNELS_BLOCKS_H
#define MAG_CPU_KERNELS_BLOCKS_H

#include "ew.h"
#include "../read_ahead.h"

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#define MAG_VBYTES 32
#define MAG_VLOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define MAG_VSTORE(p, v) memcpy((p), &(v), sizeof(v))

/*
 * Vector loads and stores that convert: MAG_VLOAD_<ID>(v, p) sets v, a vector of the compute type
 * (float32 for 16-bit floats), to the MAG_VBYTES / sizeof(compute) values of dtype ID at p;
 * MAG_VSTORE_<ID>(p, v) stores them back (16-bit floats rounded to nearest even).
 */
typedef float mag_vf_t __attribute__((vector_size(MAG_VBYTES)));
typedef uint32_t mag_vu_t __attribute__((vector_size(MAG_VBYTES)));
typedef uint16_t mag_vh_t __attribute__((vector_size(MAG_VBYTES / 2)));

static inline void mag_vload_f16(mag_vf_t *v, const uint16_t *p) {
#if defined(__F16C__)
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
#if defined(__F16C__)
    for (int h = 0; h < MAG_VBYTES / 32; ++h) {
        __m256 f;
        memcpy(&f, (const char *)v + 32 * h, sizeof(f));
        __m128i h16 = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(p + 8 * h), h16);
    }
#else
    float f[MAG_VBYTES / 4];
    memcpy(f, v, sizeof(f));
    for (int k = 0; k < MAG_VBYTES / 4; ++k) p[k] = mag_f32_to_f16(f[k]);
#endif
}

/* bfloat16 is float32's upper half: widen and shift. */
static inline void mag_vload_bf16(mag_vf_t *v, const uint16_t *p) {
#if defined(__AVX2__) /* GCC widens the vector extension's conversion in 128-bit halves: 4 shuffles, not 1 */
    __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16);
    memcpy(v, &u, sizeof(u));
#else
    mag_vh_t h;
    memcpy(&h, p, sizeof(h));
    mag_vu_t u = __builtin_convertvector(h, mag_vu_t) << 16;
    memcpy(v, &u, sizeof(u));
#endif
}

/* mag_f32_to_bf16 in lanes */
static inline void mag_vstore_bf16(uint16_t *p, const mag_vf_t *v) {
#if defined(__F16C__) && defined(__AVX2__)
    _mm_storeu_si128((__m128i *)(void *)p, mag_bf16x8((const float *)(const void *)v));
#else
    mag_vu_t u, nan;
    memcpy(&u, v, sizeof(u));
    nan = (mag_vu_t)((u & 0x7fffffffu) > 0x7f800000u);
    u = (nan & ((u >> 16) | 0x40u)) | (~nan & ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));
    mag_vh_t h = __builtin_convertvector(u, mag_vh_t);
    memcpy(p, &h, sizeof(h));
#endif
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
 * A binary row of a LANES-mode op (ew.h) on a 16-bit float: widen, compute and round a vector
 * at a time in registers, a 64-byte line of results at a time; a large output streams
 * (stream.h) from its first whole line. Through float32 chunks (the HALF loop) every value went
 * through L1 three more times: bfloat16 c = a + b on 1e7 values, one Zen 3 core, 6.5 -> 3.3 ms
 * (a C test). The arithmetic quiets a float16 signalling NaN as the chunks' widening did.
 */
#define MAG_EW_BINARY_LOOP_LANES(MODE, expr, ID, ST, CT, XS, YS)                                                       \
    enum { L_ = MAG_VBYTES / sizeof(float), LINE_ = 64 / sizeof(out_t) };                                              \
    const bool stream = mag_stream_worth((size_t)n * sizeof(out_t));                                                   \
    const mag_vf_t x1_ = (mag_vf_t){0} + ((XS) ? 0.0f : MAG_LD_##ID(xs[0]));                                           \
    const mag_vf_t y1_ = (mag_vf_t){0} + ((YS) ? 0.0f : MAG_LD_##ID(ys[0]));                                           \
    int64_t i_ = 0;                                                                                                    \
    for (; i_ < n && stream && (uintptr_t)(o + i_) % 64; ++i_) /* to the first whole line */                           \
        MAG_EW_BINARY_ONE(MODE, expr, ID, CT, XS, YS, i_, o, i_);                                                      \
    for (; i_ + LINE_ <= n; i_ += LINE_) {                                                                             \
        out_t line_[LINE_] __attribute__((aligned(64)));                                                               \
        out_t *dst_ = stream ? line_ : o + i_;                                                                         \
        for (int q_ = 0; q_ < LINE_; q_ += L_) {                                                                       \
            mag_vf_t x = x1_, y = y1_;                                                                                 \
            if (XS) MAG_VLOAD_##ID(x, xs + i_ + q_);                                                                   \
            if (YS) MAG_VLOAD_##ID(y, ys + i_ + q_);                                                                   \
            mag_vf_t r_ = (expr);                                                                                      \
            MAG_VSTORE_##ID(dst_ + q_, r_);                                                                            \
        }                                                                                                              \
        if (stream) mag_stream_store(o + i_, line_, sizeof(line_));                                                    \
    }                                                                                                                  \
    for (; i_ < n; ++i_) MAG_EW_BINARY_ONE(MODE, expr, ID, CT, XS, YS, i_, o, i_);                                     \
    if (stream) mag_stream_fence();

static inline void mag_f16_to_f32_block(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + MAG_VBYTES / 4 <= n; i += MAG_VBYTES / 4) {
        mag_vf_t v;
        MAG_VLOAD_FLOAT16(v, src + i);
        MAG_VSTORE(dst + i, v);
    }
    for (; i < n; ++i) dst[i] = mag_ld_f16(src[i]);
}

/*
 * Per dtype: mag_block_view_<ID>(src, n, buf) gives the n values at src in the compute type,
 * in place when storage and compute types agree, else converted into buf.
 */
#define MAG_BLOCK_FNS(ID, ST, CT)                                                                                      \
    static inline const CT *mag_block_view_##ID(const void *src, int64_t n, CT *buf) {                                 \
        const ST *s = (const ST *)src;                                                                                 \
        if (MAG_DTYPE_##ID == MAG_DTYPE_FLOAT16) mag_f16_to_f32_block((const uint16_t *)src, (float *)(void *)buf, n); \
        else if (sizeof(ST) == sizeof(CT) && MAG_DTYPE_##ID != MAG_DTYPE_BOOLEAN) return (const CT *)src;              \
        else                                                                                                           \
            for (int64_t k = 0; k < n; ++k) buf[k] = MAG_LD_##ID(s[k]);                                                \
        return buf;                                                                                                    \
    }
MAG_ALL_DTYPES(MAG_BLOCK_FNS)
#undef MAG_BLOCK_FNS

/*
 * out (A) = the sum of vexpr over the m values of dtype ID at src (a const storage pointer),
 * where vexpr is written in x (a vector of A, or a scalar for the tail) and scalars of the
 * caller: four vector accumulators, then a pairwise tree over their lanes, so m adds make only
 * m / (4 * lanes) sequential steps per lane. The arguments are expanded first (ID may be a macro).
 */
#define MAG_VSUM(A, ID, src, m, vexpr, out)                                                                            \
    do {                                                                                                               \
        A vsum_out_[1];                                                                                                \
        MAG_VSUM_STREAMS(A, ID, 1, src, 0, m, vexpr, vsum_out_);                                                       \
        (out) = vsum_out_[0];                                                                                          \
    } while (0)

/*
 * MAG_VSUM over S runs side by side, run t at src + t * step, its sum into out[t] (the same bits
 * as S MAG_VSUMs): S sequential streams, which one core reads faster than one (Zen 3, 128 KiB
 * blocks read as 2 streams: 20.1 GB/s, as one: 16.2). 4 * S accumulators: S <= 3 fits 16 registers.
 */
#define MAG_VSUM_STREAMS(A, ID, S, src, step, m, vexpr, out) MAG_VSUM_STREAMS_(A, ID, S, src, step, m, vexpr, out)
#define MAG_VSUM_STREAMS_(A, ID, S, src, step, m, vexpr, out)                                                          \
    do {                                                                                                               \
        typedef A vsum_t_ __attribute__((vector_size(MAG_VBYTES)));                                                    \
        enum { L_ = MAG_VBYTES / sizeof(A) };                                                                          \
        const vsum_t_ zero_ = {0};                                                                                     \
        vsum_t_ s_[S][4];                                                                                              \
        _Pragma("GCC unroll 4") for (int t_ = 0; t_ < (S); ++t_)                                                       \
            _Pragma("GCC unroll 4") for (int p_ = 0; p_ < 4; ++p_) s_[t_][p_] = zero_;                                 \
        int64_t i_ = 0;                                                                                                \
        for (; i_ + 4 * L_ <= (m); i_ += 4 * L_)                                                                       \
            _Pragma("GCC unroll 4") for (int t_ = 0; t_ < (S); ++t_) {                                                 \
                const __typeof__(*(src)) *run_ = (src) + t_ * (step) + i_;                                             \
                _Pragma("GCC unroll 4") for (int p_ = 0; p_ < 4; ++p_)                                                 \
                    MAG_AHEAD_STREAM(run_ + p_ * L_, p_ * L_ * sizeof(*(src)), sizeof(*(src)));                        \
                _Pragma("GCC unroll 4") for (int p_ = 0; p_ < 4; ++p_) {                                               \
                    vsum_t_ x;                                                                                         \
                    MAG_VLOAD_##ID(x, run_ + p_ * L_);                                                                 \
                    s_[t_][p_] += (vexpr);                                                                             \
                }                                                                                                      \
            }                                                                                                          \
        for (int t_ = 0; t_ < (S); ++t_) {                                                                             \
            const __typeof__(*(src)) *run_ = (src) + t_ * (step);                                                      \
            int64_t j_ = i_;                                                                                           \
            for (; j_ + L_ <= (m); j_ += L_) {                                                                         \
                vsum_t_ x;                                                                                             \
                MAG_VLOAD_##ID(x, run_ + j_);                                                                          \
                s_[t_][0] += (vexpr);                                                                                  \
            }                                                                                                          \
            vsum_t_ all_ = (s_[t_][0] + s_[t_][1]) + (s_[t_][2] + s_[t_][3]);                                          \
            A l_[L_];                                                                                                  \
            MAG_VSTORE(l_, all_);                                                                                      \
            for (int w_ = L_ / 2; w_ > 0; w_ /= 2)                                                                     \
                for (int k_ = 0; k_ < w_; ++k_) l_[k_] += l_[k_ + w_];                                                 \
            (out)[t_] = l_[0];                                                                                         \
            for (; j_ < (m); ++j_) {                                                                                   \
                A x = MAG_LD_##ID(run_[j_]);                                                                           \
                (out)[t_] += (vexpr);                                                                                  \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

#endif
