/*
 * Prints what the CPU backend detected and chose, then checks one multithreaded op.
 * Used by tools/check_aarch64_build.sh (under qemu); build: cc tools/cpu_info.c -Iinclude libmagnetron_core.a -lm -lpthread
 */
#include <magnetron.h>
#include <stdio.h>

int main(void) {
    mag_cpu_info_t info;
    mag_status_t st = mag_cpu_info(&info);
    printf("vendor %s, model \"%s\", %u cpus\nfeatures:", info.vendor, info.model, info.cpus);
    for (uint32_t i = 0; mag_cpu_feature_name(i); ++i)
        if (info.features >> i & 1) printf(" %s", mag_cpu_feature_name(i));
    printf("\nvariants:");
    for (uint32_t i = 0; i < info.n_variants; ++i) printf(" %s%s", info.variants[i], info.variant_runs[i] ? "" : "(no)");
    printf("\nvariant in use: %s\n", info.variant ? info.variant : "none");
    if (st != MAG_OK) {
        printf("error: %s\n", mag_last_error());
        return 2;
    }
    mag_set_num_threads(2);
    int64_t shape[1] = {100003};
    mag_tensor_t *a, *c = NULL;
    mag_tensor_empty(MAG_DTYPE_FLOAT32, 1, shape, &a);
    mag_tensor_fill(a, mag_scalar_float(1.25));
    mag_tensor_t *in[2] = {a, a};
    int ok = mag_op(MAG_OP_ADD, in, 2, NULL, 0, &c) == MAG_OK;
    for (int64_t i = 0; ok && i < shape[0]; ++i) ok = ((const float *)mag_tensor_data(c))[i] == 2.5f;
    printf("add on 2 threads: %s\n", ok ? "ok" : "WRONG");
    mag_tensor_release(a);
    if (c) mag_tensor_release(c);
    return ok ? 0 : 1;
}
