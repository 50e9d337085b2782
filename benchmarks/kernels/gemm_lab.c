/*
 * GEMM kernel lab: single-thread GFLOP/s of one engine path per dtype, layout and shape, for
 * tuning microkernels and cache blocks. Time is this thread's CPU time (preemption by the
 * other processes on a shared machine does not count), best of the repeats.
 *
 *   magnetron_gemm_lab [--path P] [--dtype f32|f16|bf16] [--layout nn|nt|tn|tt]
 *                      [--blocks MC,KC,NC] [--reps R] [MxNxK | n]...
 * Layout letters: A then B, n = row-major, t = transposed (column-major); "nt" is x @ W.T.
 * Without sizes: square n = 256 ... 4096.
 */
#include "cpu/cpuinfo.h"
#include "cpu/gemm/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *filled(mag_dtype_t dt, int64_t n) {
    size_t es = mag_dtype_info(dt)->size;
    uint8_t *p = aligned_alloc(64, (size_t)mag_gemm_roundup(n * (int64_t)es, 64));
    for (int64_t i = 0; i < n; ++i) {
        float v = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        if (dt == MAG_DTYPE_FLOAT32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = dt == MAG_DTYPE_FLOAT16 ? mag_f32_to_f16(v) : mag_f32_to_bf16(v);
    }
    return p;
}

static void run(const mag_gemm_kernel_t *k, const mag_gemv_kernel_t *v, mag_dtype_t dt, const char *layout, int64_t M,
                int64_t N, int64_t K, int reps) {
    void *a = filled(dt, M * K), *b = filled(dt, K * N), *c = filled(dt, M * N);
    bool ta = layout[0] == 't', tb = layout[1] == 't';
    int64_t rsa = ta ? 1 : K, csa = ta ? M : 1, rsb = tb ? 1 : N, csb = tb ? K : 1;
    double flop = 2.0 * (double)M * (double)N * (double)K, best = 1e30;
    int inner = 1;
    for (int r = -1; r < reps; ++r) { /* r == -1: warm-up that also sizes the inner loop to >= 0.1 s */
        double t0 = cpu_seconds();
        for (int i = 0; i < inner; ++i)
            mag_gemm_with(k, v, dt, M, N, K, a, rsa, csa, b, rsb, csb, c, N, 1, 1.0f, 0.0f, 0, 1, NULL);
        double dt_s = (cpu_seconds() - t0) / inner;
        if (r < 0) inner = dt_s > 0.1 ? 1 : (int)(0.1 / (dt_s + 1e-9)) + 1;
        else if (dt_s < best) best = dt_s;
    }
    double bytes = (double)(M * K + K * N + M * N) * (double)mag_dtype_info(dt)->size;
    printf("%-8s %-3s %6lld %6lld %6lld  %8.1f GFLOP/s  %7.2f GB/s  %9.3f ms\n", mag_dtype_info(dt)->name, layout,
           (long long)M, (long long)N, (long long)K, flop / best * 1e-9, bytes / best * 1e-9, best * 1e3);
    free(a), free(b), free(c);
}

int main(int argc, char **argv) {
    mag_gemm_path_t path = mag_gemm_path();
    mag_dtype_t dt = MAG_DTYPE_FLOAT32;
    const char *layout = "nn";
    int64_t mc = 0, kc = 0, nc = 0, sizes[64][3];
    int n_sizes = 0, reps = 3;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--path") && i + 1 < argc) {
            const char *name = argv[++i];
            for (int p = 0; p < MAG_GEMM__COUNT; ++p)
                if (!strcmp(name, mag_gemm_path_name((mag_gemm_path_t)p))) path = (mag_gemm_path_t)p;
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            dt = !strcmp(d, "f16") ? MAG_DTYPE_FLOAT16 : !strcmp(d, "bf16") ? MAG_DTYPE_BFLOAT16 : MAG_DTYPE_FLOAT32;
        } else if (!strcmp(argv[i], "--layout") && i + 1 < argc) {
            layout = argv[++i];
        } else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            long long x, y, z;
            if (sscanf(argv[++i], "%lld,%lld,%lld", &x, &y, &z) == 3) mc = x, kc = y, nc = z;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (n_sizes < 64) {
            long long m, n, kk;
            int got = sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &kk);
            sizes[n_sizes][0] = m, sizes[n_sizes][1] = got == 3 ? n : m, sizes[n_sizes][2] = got == 3 ? kk : m;
            ++n_sizes;
        }
    }
    if (!mag_gemm_path_supported(path)) {
        fprintf(stderr, "path %s is not supported here\n", mag_gemm_path_name(path));
        return 1;
    }
    if (!n_sizes)
        for (int64_t n = 256; n <= 4096; n *= 2, ++n_sizes)
            sizes[n_sizes][0] = sizes[n_sizes][1] = sizes[n_sizes][2] = n;
    mag_gemm_kernel_t k = *mag_gemm_kernel(path, dt);
    if (mc) k.mc = mc, k.kc = kc, k.nc = nc;
    printf("path %s, microkernel %dx%d, blocks mc=%lld kc=%lld nc=%lld; L1d %u-way, L2 %llu KiB\n",
           mag_gemm_path_name(path), k.mr, k.nr, (long long)k.mc, (long long)k.kc, (long long)k.nc,
           mag_cpu_id()->l1d_ways, (unsigned long long)(mag_cpu_id()->l2_bytes >> 10));
    for (int i = 0; i < n_sizes; ++i)
        run(&k, mag_gemv_kernel(path), dt, layout, sizes[i][0], sizes[i][1], sizes[i][2], reps);
    return 0;
}
