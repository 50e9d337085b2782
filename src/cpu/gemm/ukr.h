/*
 * The SIMD microkernel template (x86; the includer includes <immintrin.h>): an MR x (VW*NV)
 * tile of float32 accumulators in registers; each depth step loads NV vectors of the B panel
 * and broadcasts MR words of the A panel. V names the intrinsic family (_mm256, _mm512) and VT
 * its float vector type. The float32 kernels multiply-add; the bf16 kernel's word is a pair
 * of depths (vdpbf16ps).
 */
#ifndef MAG_CPU_GEMM_UKR_H
#define MAG_CPU_GEMM_UKR_H

#include "kernel.h"

#include <string.h>

/*
 * The body of a microkernel; the includer's function has kc, c, ldc, acc and a pointer b to the
 * B panel in scope. A_WORD(i) is row i's word of the current depth step and A_STEP advances A.
 */
#define MAG_GEMM_UKR_BODY(MR, NV, KQ, V, VT, VW, A_WORD, A_STEP, BCAST, MAC)                                       \
    VT r[MR][NV];                                                                                                      \
    /* C's lines arrive while the depth loop runs, not after it */                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j)         \
        _mm_prefetch((const char *)(c + i * ldc + VW * j), _MM_HINT_T0);                                               \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j)         \
        r[i][j] = V##_setzero_ps();                                                                                    \
    for (int64_t p = 0; p < kc; p += KQ, b += VW * NV, A_STEP) {                                                       \
        VT bv[NV];                                                                                                     \
        _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) bv[j] = V##_load_ps(b + VW * j);                          \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) {                                                        \
            VT av = BCAST(A_WORD(i));                                                                                  \
            _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) r[i][j] = MAC(r[i][j], av, bv[j]);                    \
        }                                                                                                              \
    }                                                                                                                  \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) {       \
        float *ci = c + i * ldc + VW * j;                                                                              \
        V##_storeu_ps(ci, acc ? V##_add_ps(V##_loadu_ps(ci), r[i][j]) : r[i][j]);                                      \
    }

/* The first ROWS rows of a packed A panel, MR 32-bit words of type AT per step (KQ depths each); B: NV vectors. */
#define MAG_GEMM_UKR_ROWS(name, ROWS, MR, NV, KQ, AT, V, VT, VW, BCAST, MAC)                                         \
    static void name(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc, bool acc) {                   \
        const AT *a = ap;                                                                                              \
        const float *b = bp;                                                                                           \
        MAG_GEMM_UKR_BODY(ROWS, NV, KQ, V, VT, VW, MAG_GEMM_PACKED_WORD, a += MR, BCAST, MAC)                          \
    }
#define MAG_GEMM_PACKED_WORD(i) a[i]

/*
 * A 14-row microkernel reading A in place (mag_gemm_ukr_rows_fn; one 32-bit word a depth step).
 * Row i comes from three bases five rows apart, so that every row is a base plus lda times 0,
 * 1, 2 or 4, or plus 3 * lda: x86 addressing modes, not 14 live pointers.
 * In place, A is a weight matrix that streams from memory once: each step also asks L2 for a
 * line of the next tile's rows, along each row's kc depths and then on to the next row, a line a
 * step (a line of A lasts 16 steps, so this runs ahead), so the next tile finds its rows cached.
 * Float32 x @ W.T 128 x 768 x 2304 with W cold, 1 thread: 129 -> 146 GFLOP/s.
 */
#define MAG_GEMM_ROW_WORD(i)                                                                                           \
    (*(const mag_gemm_u32 *)((i) < 5    ? mag_gemm_row_at(a0, (i), lda, l3)                                           \
                             : (i) < 10 ? mag_gemm_row_at(a5, (i) - 5, lda, l3)                                       \
                                        : mag_gemm_row_at(a10, (i) - 10, lda, l3)))
static inline const uint8_t *mag_gemm_row_at(const uint8_t *base, int i, int64_t lda, int64_t l3) {
    return i == 3 ? base + l3 : base + i * lda;
}
#define MAG_GEMM_NEXT_ROWS_STEP                                                                                        \
    (_mm_prefetch((const char *)next, _MM_HINT_T1),                                                                    \
     (next += 64) >= next_end ? (next += (uintptr_t)(lda - seg), next_end += (uintptr_t)lda) : 0)
#define MAG_GEMM_UKR_IN_PLACE14(name, NV, KQ, V, VT, VW, BCAST, MAC)                                                 \
    static void name(int64_t kc, const void *ap, int64_t lda, const void *bp, float *c, int64_t ldc, bool acc) {      \
        const uint8_t *a0 = ap, *a5 = a0 + 5 * lda, *a10 = a5 + 5 * lda;                                               \
        const int64_t l3 = 3 * lda;                                                                                    \
        const float *b = bp;                                                                                           \
        const int64_t seg = kc / KQ * 4; /* bytes of a row this call reads */                                          \
        /* the next rows may lie past A's end: their addresses are integers, never pointers */                        \
        uintptr_t next = (uintptr_t)a0 + (uintptr_t)(14 * lda), next_end = next + (uintptr_t)seg;                     \
        MAG_GEMM_UKR_BODY(14, NV, KQ, V, VT, VW, MAG_GEMM_ROW_WORD,                                                    \
                          (a0 += 4, a5 += 4, a10 += 4, MAG_GEMM_NEXT_ROWS_STEP), BCAST, MAC)                           \
    }

/* A packed: the whole MR-row tile. */
#define MAG_GEMM_UKR(name, MR, NV, KQ, AT, V, VT, VW, BCAST, MAC)                                                    \
    MAG_GEMM_UKR_ROWS(name, MR, MR, NV, KQ, AT, V, VT, VW, BCAST, MAC)

/*
 * name##_short (mag_gemm_ukr_short_fn) for a 14-row kernel: one register tile per row count
 * 1..13, so the last rows of A cost their own multiply-adds, not a whole padded tile (M = 128
 * is 9 tiles and 2 rows: the padded tile was 9% of the work).
 */
#define MAG_GEMM_ROWS_BELOW_14(X, ...)                                                                                 \
    X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__) X(5, __VA_ARGS__) X(6, __VA_ARGS__)        \
    X(7, __VA_ARGS__) X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__) X(12, __VA_ARGS__)     \
    X(13, __VA_ARGS__)
#define MAG_GEMM_UKR_SHORT_DEF(R, name, ...) MAG_GEMM_UKR_ROWS(name##_##R, R, 14, __VA_ARGS__)
#define MAG_GEMM_UKR_SHORT_REF(R, name) name##_##R,
#define MAG_GEMM_UKR_SHORT14(name, ...)                                                                               \
    MAG_GEMM_ROWS_BELOW_14(MAG_GEMM_UKR_SHORT_DEF, name, __VA_ARGS__)                                                  \
    static void name##_short(int m, int64_t kc, const void *a, const void *b, float *c, int64_t ldc, bool acc) {      \
        static const mag_gemm_ukr_fn by_rows[14] = {NULL, MAG_GEMM_ROWS_BELOW_14(MAG_GEMM_UKR_SHORT_REF, name)};       \
        by_rows[m](kc, a, b, c, ldc, acc);                                                                             \
    }

/* The float32 microkernel: broadcast an A element, fused multiply-add. */
#define MAG_GEMM_UKR_F32(name, MR, NV, V, VT, VW)                                                                     \
    static inline VT name##_bcast(float x) { return V##_set1_ps(x); }                                                  \
    static inline VT name##_mac(VT acc, VT a, VT b) { return V##_fmadd_ps(a, b, acc); }                                \
    MAG_GEMM_UKR(name, MR, NV, 1, float, V, VT, VW, name##_bcast, name##_mac)
#define MAG_GEMM_UKR_F32_SHORT14(name, NV, V, VT, VW)                                                                 \
    MAG_GEMM_UKR_SHORT14(name, NV, 1, float, V, VT, VW, name##_bcast, name##_mac)
#define MAG_GEMM_UKR_F32_IN_PLACE14(name, NV, V, VT, VW)                                                              \
    static inline VT name##_bcast_word(mag_gemm_u32 w) {                                                               \
        float x;                                                                                                       \
        memcpy(&x, &w, sizeof x);                                                                                      \
        return V##_set1_ps(x);                                                                                         \
    }                                                                                                                  \
    MAG_GEMM_UKR_IN_PLACE14(name##_rows, NV, 1, V, VT, VW, name##_bcast_word, name##_mac)

#endif
