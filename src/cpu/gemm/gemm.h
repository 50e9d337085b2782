/*
 * The matrix-multiply engine: C = alpha * A @ B + beta * C for float32, float16 and bfloat16
 * (operands and C share the dtype; products accumulate in float32).
 *
 * Every operand is described by element strides (row stride, column stride), so transposed or
 * sliced views go straight in: packing copes with any layout. The engine does not start
 * threads; a caller with nt threads calls mag_gemm once from each with its share ti of nt,
 * and the shares write disjoint parts of C. beta == 0 never reads C (NaN in C does not leak).
 * Returns false only when scratch memory could not be allocated (C is then incomplete).
 */
#ifndef MAG_CPU_GEMM_H
#define MAG_CPU_GEMM_H

#include "backend.h"
#include "magnetron.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Implementation paths, in increasing order of ISA demands. */
typedef enum mag_gemm_path {
    MAG_GEMM_GENERIC,    /* portable C: correct on every machine */
    MAG_GEMM_AVX2,       /* AVX2 + FMA + F16C: f32 FMA microkernel; f16/bf16 converted to f32 while packing */
    MAG_GEMM_AVX512,     /* AVX-512 F/BW/VL/DQ: f32 FMA microkernel; f16/bf16 converted to f32 while packing */
    MAG_GEMM_AVX512BF16, /* + AVX512-BF16: bf16 through vdpbf16ps */
    MAG_GEMM_AMX,        /* + AMX tiles for bf16 */
    MAG_GEMM__COUNT
} mag_gemm_path_t;

/* True for the dtypes the engine multiplies. */
bool mag_gemm_supports(mag_dtype_t dt);

/*
 * shared: NULL, or zeroed state shared by the nt threads of this one call (backend.h); GEMV and
 * GEMM rows are then handed out on demand, so a thread that streams memory faster does not
 * wait for the other, and x @ W for one row splits W's rows (see gemm.c).
 */
bool mag_gemm(mag_dtype_t dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B,
              int64_t rsb, int64_t csb, void *C, int64_t rsc, int64_t csc, float alpha, float beta, int64_t ti,
              int64_t nt, mag_run_shared_t *shared);

/*
 * `batch` independent multiplications; matrix b of X starts bsx elements after matrix b - 1
 * (0 broadcasts one matrix). Threads take whole matrices when there are enough of them to
 * share evenly, otherwise every thread takes part of each. shared serves a batch of one only.
 */
bool mag_gemm_batched(mag_dtype_t dt, int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, int64_t bsa,
                      int64_t rsa, int64_t csa, const void *B, int64_t bsb, int64_t rsb, int64_t csb, void *C,
                      int64_t bsc, int64_t rsc, int64_t csc, float alpha, float beta, int64_t ti, int64_t nt,
                      mag_run_shared_t *shared);

/*
 * The path in use: the best this machine and OS support, or the one MAGNETRON_GEMM_PATH names
 * (generic, avx2, avx512, avx512bf16, amx) when the machine supports it.
 */
mag_gemm_path_t mag_gemm_path(void);
const char *mag_gemm_path_name(mag_gemm_path_t p);
/* Whether the machine can run path p. */
bool mag_gemm_path_supported(mag_gemm_path_t p);
/* Switch to path p (tests and benchmarks); false, changing nothing, when unsupported. */
bool mag_gemm_set_path(mag_gemm_path_t p);

#endif
