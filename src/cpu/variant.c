/*
 * One kernel table per ISA level: this file is compiled once per variant with that level's
 * flags and MAG_CPU_VARIANT set to its name; every kernel is static, so the copies never clash.
 */
#include "kernels/attention.c"
#include "kernels/binary.c"
#include "kernels/bitwise.c"
#include "kernels/compare.c"
#include "kernels/copy.c"
#include "kernels/cumsum.c"
#include "kernels/fill.c"
#include "kernels/index.c"
#include "kernels/matmul.c"
#include "kernels/norm.c"
#include "kernels/reduce.c"
#include "kernels/rope.c"
#include "kernels/softmax.c"
#include "kernels/struct.c" /* after copy.c: repeat, cat and stack use its kernel */
#include "kernels/topk.c"
#include "kernels/unary.c"

#ifndef MAG_CPU_VARIANT
#error "MAG_CPU_VARIANT must name the variant being built"
#endif
#define MAG_CAT_(a, b) a##b
#define MAG_CAT(a, b) MAG_CAT_(a, b)

/* The CPU features this copy was compiled to use, read from the compiler's predefined macros:
 * the backend runs (even fills) a table only where all of them are usable. */
#include "cpuinfo.h"
const uint64_t MAG_CAT(mag_cpu_needs_, MAG_CPU_VARIANT) = 0
#ifdef __SSE2__
    | MAG_CPUF(SSE2)
#endif
#ifdef __SSE3__
    | MAG_CPUF(SSE3)
#endif
#ifdef __SSSE3__
    | MAG_CPUF(SSSE3)
#endif
#ifdef __SSE4_1__
    | MAG_CPUF(SSE4_1)
#endif
#ifdef __SSE4_2__
    | MAG_CPUF(SSE4_2)
#endif
#ifdef __POPCNT__
    | MAG_CPUF(POPCNT)
#endif
#ifdef __AVX__
    | MAG_CPUF(AVX)
#endif
#ifdef __F16C__
    | MAG_CPUF(F16C)
#endif
#ifdef __FMA__
    | MAG_CPUF(FMA)
#endif
#ifdef __AVX2__
    | MAG_CPUF(AVX2)
#endif
#ifdef __AVX512F__
    | MAG_CPUF(AVX512F)
#endif
#ifdef __AVX512BW__
    | MAG_CPUF(AVX512BW)
#endif
#ifdef __AVX512VL__
    | MAG_CPUF(AVX512VL)
#endif
#ifdef __AVX512DQ__
    | MAG_CPUF(AVX512DQ)
#endif
#ifdef __AVX512VNNI__
    | MAG_CPUF(AVX512VNNI)
#endif
#ifdef __AVX512BF16__
    | MAG_CPUF(AVX512BF16)
#endif
#ifdef __AVX512FP16__
    | MAG_CPUF(AVX512FP16)
#endif
#ifdef __AMX_TILE__
    | MAG_CPUF(AMX_TILE)
#endif
#ifdef __AMX_BF16__
    | MAG_CPUF(AMX_BF16)
#endif
#ifdef __AMX_INT8__
    | MAG_CPUF(AMX_INT8)
#endif
#ifdef __ARM_NEON
    | MAG_CPUF(NEON)
#endif
#ifdef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
    | MAG_CPUF(NEON_FP16)
#endif
#ifdef __ARM_FEATURE_DOTPROD
    | MAG_CPUF(NEON_DOTPROD)
#endif
#ifdef __ARM_FEATURE_BF16_VECTOR_ARITHMETIC
    | MAG_CPUF(NEON_BF16)
#endif
#ifdef __ARM_FEATURE_MATMUL_INT8
    | MAG_CPUF(NEON_I8MM)
#endif
    ;

void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t);
void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t) {
    register_attention(t);
    register_binary(t);
    register_bitwise(t);
    register_compare(t);
    register_copy(t);
    register_fill(t);
    register_index(t);
    register_matmul(t);
    register_norm(t);
    register_struct(t);
    register_unary(t);
    register_reduce(t);
    register_softmax(t);
    register_topk(t);
    register_cumsum(t);
    register_rope(t);
}
