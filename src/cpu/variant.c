/*
 * One kernel table per ISA level: this file is compiled once per variant with that level's
 * flags and MAG_CPU_VARIANT set to its name; every kernel is static, so the copies never clash.
 */
#include "kernels/binary.c"
#include "kernels/bitwise.c"
#include "kernels/compare.c"
#include "kernels/copy.c"
#include "kernels/cumsum.c"
#include "kernels/fill.c"
#include "kernels/index.c"
#include "kernels/matmul.c"
#include "kernels/reduce.c"
#include "kernels/softmax.c"
#include "kernels/struct.c" /* after copy.c: repeat, cat and stack use its kernel */
#include "kernels/topk.c"
#include "kernels/unary.c"

#ifndef MAG_CPU_VARIANT
#error "MAG_CPU_VARIANT must name the variant being built"
#endif
#define MAG_CAT_(a, b) a##b
#define MAG_CAT(a, b) MAG_CAT_(a, b)

void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t);
void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t) {
    register_binary(t);
    register_bitwise(t);
    register_compare(t);
    register_copy(t);
    register_fill(t);
    register_index(t);
    register_matmul(t);
    register_struct(t);
    register_unary(t);
    register_reduce(t);
    register_softmax(t);
    register_topk(t);
    register_cumsum(t);
}
