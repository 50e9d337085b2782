/*
 * The AVX-512 microkernel template: an MR x (16*NV) tile of float32 accumulators in registers;
 * each depth step loads NV vectors of the B panel and broadcasts MR words of the A panel.
 * The float32 kernel multiplies-adds; the bf16 kernel's word is a pair of depths (vdpbf16ps).
 */
#ifndef MAG_CPU_GEMM_UKR_AVX512_H
#define MAG_CPU_GEMM_UKR_AVX512_H

#include "kernel.h"

#include <immintrin.h>

/* A: MR 32-bit words of type AT per step (KQ depths each); B: NV 64-byte vectors per step. */
#define MAG_GEMM_UKR_AVX512(name, MR, NV, KQ, AT, BCAST, MAC)                                                          \
    static void name(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc, bool acc) {                   \
        const AT *a = ap;                                                                                              \
        const float *b = bp;                                                                                           \
        __m512 r[MR][NV];                                                                                              \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j)     \
            r[i][j] = _mm512_setzero_ps();                                                                             \
        for (int64_t p = 0; p < kc; p += KQ, a += MR, b += 16 * NV) {                                                  \
            __m512 bv[NV];                                                                                             \
            _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) bv[j] = _mm512_load_ps(b + 16 * j);                   \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) {                                                    \
                __m512 av = BCAST(a[i]);                                                                               \
                _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) r[i][j] = MAC(r[i][j], av, bv[j]);                \
            }                                                                                                          \
        }                                                                                                              \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; ++i) _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) {   \
            float *ci = c + i * ldc + 16 * j;                                                                          \
            _mm512_storeu_ps(ci, acc ? _mm512_add_ps(_mm512_loadu_ps(ci), r[i][j]) : r[i][j]);                         \
        }                                                                                                              \
    }

#endif
