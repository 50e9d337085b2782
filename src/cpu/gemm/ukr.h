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

/* A packed: MR 32-bit words of type AT per step (KQ depths each); B: NV vectors per step. */
#define MAG_GEMM_UKR(name, MR, NV, KQ, AT, V, VT, VW, BCAST, MAC)                                                    \
    static void name(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc, bool acc) {                   \
        const AT *a = ap;                                                                                              \
        const float *b = bp;                                                                                           \
        MAG_GEMM_UKR_BODY(MR, NV, KQ, V, VT, VW, MAG_GEMM_PACKED_WORD, a += MR, BCAST, MAC)                            \
    }
#define MAG_GEMM_PACKED_WORD(i) a[i]

/* The float32 microkernel: broadcast an A element, fused multiply-add. */
#define MAG_GEMM_UKR_F32(name, MR, NV, V, VT, VW)                                                                     \
    static inline VT name##_bcast(float x) { return V##_set1_ps(x); }                                                  \
    static inline VT name##_mac(VT acc, VT a, VT b) { return V##_fmadd_ps(a, b, acc); }                                \
    MAG_GEMM_UKR(name, MR, NV, 1, float, V, VT, VW, name##_bcast, name##_mac)

#endif
