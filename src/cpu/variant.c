/*
 * One kernel table per ISA level: this file is compiled once per variant with that level's
 * flags and MAG_CPU_VARIANT set to its name; every kernel is static, so the copies never clash.
 */
#include "kernels/copy.c"
#include "kernels/cumsum.c"
#include "kernels/elementwise.c"
#include "kernels/fill.c"
#include "kernels/index.c"
#include "kernels/reduce.c"
#include "kernels/softmax.c"
#include "kernels/topk.c"

#ifndef MAG_CPU_VARIANT
#error "MAG_CPU_VARIANT must name the variant being built"
#endif
#define MAG_CAT_(a, b) a##b
#define MAG_CAT(a, b) MAG_CAT_(a, b)

void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t);
void MAG_CAT(mag_cpu_table_, MAG_CPU_VARIANT)(mag_kernel_table_t t) {
    register_copy(t);
    register_elementwise(t);
    register_fill(t);
    register_index(t);
    register_reduce(t);
    register_softmax(t);
    register_topk(t);
    register_cumsum(t);
}
