/*
 * The CPU backend: at start-up it picks the kernel table of the best ISA variant this machine
 * and OS run (or the one MAGNETRON_CPU_VARIANT names) and sizes the thread pool; then it looks
 * kernels up and runs them on the pool.
 */
#include "../backend.h"
#include "cpuinfo.h"
#include "gemm/gemm.h"
#include "threadpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef mag_kernel_fn mag_kernel_table_t[MAG_OP__COUNT][MAG_DTYPE__COUNT];

/* cpu_variants.def is written by CMake: X(name) for every variant built, lowest ISA level first. */
#define X(name)                                                                                                        \
    void mag_cpu_table_##name(mag_kernel_table_t t);                                                                   \
    extern const uint64_t mag_cpu_needs_##name;
#include "cpu_variants.def"
#undef X

typedef struct variant {
    const char *name;
    void (*fill)(mag_kernel_table_t t); /* only ever called when the machine runs the variant */
    const uint64_t *needs;              /* MAG_CPUF bits its code was compiled to use */
} variant_t;

static const variant_t variants[] = {
#define X(name) {#name, mag_cpu_table_##name, &mag_cpu_needs_##name},
#include "cpu_variants.def"
#undef X
};
#define N_VARIANTS ((uint32_t)(sizeof(variants) / sizeof(variants[0])))
_Static_assert(N_VARIANTS <= MAG_MAX_CPU_VARIANTS, "raise MAG_MAX_CPU_VARIANTS");

static mag_kernel_table_t kernels;
static const variant_t *chosen;
static mag_status_t init_status;
static char init_msg[512];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static uint64_t missing(const variant_t *v) { return *v->needs & ~mag_cpu_id()->features; }

/* Append the names of the variants (all, or only those this machine runs) to buf. */
static void variant_list(char *buf, size_t size, bool only_runnable) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < N_VARIANTS && len < size; ++i)
        if (!only_runnable || !missing(&variants[i]))
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", variants[i].name);
}

static void feature_list(char *buf, size_t size, uint64_t mask) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < MAG_CPUF__COUNT && len < size; ++i)
        if (mask >> i & 1) len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", mag_cpu_feature_str(i));
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    if (init_status != MAG_OK) return; /* report the first problem */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(init_msg, sizeof(init_msg), fmt, ap);
    va_end(ap);
    init_status = MAG_ERR_VALUE;
}

static const variant_t *select_variant(void) {
    const char *want = getenv("MAGNETRON_CPU_VARIANT");
    char runnable[128];
    variant_list(runnable, sizeof(runnable), true);
    if (!want || !*want || strcmp(want, "auto") == 0) {
        const variant_t *best = &variants[0]; /* generic: needs only what the ABI guarantees */
        for (uint32_t i = 1; i < N_VARIANTS; ++i)
            if (!missing(&variants[i])) best = &variants[i];
        return best;
    }
    for (uint32_t i = 0; i < N_VARIANTS; ++i) {
        if (strcmp(want, variants[i].name) != 0) continue;
        if (!missing(&variants[i])) return &variants[i];
        char lacks[256];
        feature_list(lacks, sizeof(lacks), missing(&variants[i]));
        fail("MAGNETRON_CPU_VARIANT=%s: this CPU (or OS) lacks %s; variants it can run: %s", want, lacks, runnable);
        return NULL;
    }
    char built[128];
    variant_list(built, sizeof(built), false);
    fail("MAGNETRON_CPU_VARIANT=%s: no such kernel variant in this build (built: %s; runnable here: %s; "
         "or 'auto')", want, built, runnable);
    return NULL;
}

static uint32_t default_threads(void) {
    const char *env = getenv("MAGNETRON_NUM_THREADS");
    if (env && *env) {
        char *end;
        errno = 0;
        long n = strtol(env, &end, 10);
        if (!errno && *end == 0 && n >= 1 && n <= MAG_POOL_MAX_THREADS) return (uint32_t)n;
        fail("MAGNETRON_NUM_THREADS=%s: expected an integer in [1, %d]", env, MAG_POOL_MAX_THREADS);
    }
    uint32_t n = mag_cpu_usable_count();
    return n > MAG_POOL_MAX_THREADS ? MAG_POOL_MAX_THREADS : n;
}

/*
 * The GEMM engine detects its own best path; a variant forced lower caps it, so that running the
 * tests under a variant covers the whole backend at that ISA level.
 */
static void cap_gemm_path(const char *variant) {
    mag_gemm_path_t cap = !strcmp(variant, "generic") ? MAG_GEMM_GENERIC
                          : !strcmp(variant, "avx2")  ? MAG_GEMM_AVX2
                          : !strcmp(variant, "avx512") ? MAG_GEMM_AVX512BF16
                          : !strncmp(variant, "avx512", 6) ? MAG_GEMM_AMX
                                                            : MAG_GEMM_GENERIC;
    if (mag_gemm_path() > cap) mag_gemm_set_path(cap);
}

static void init(void) {
    chosen = select_variant();
    if (chosen) chosen->fill(kernels); /* else every lookup fails: no kernel runs on a wrong ISA */
    if (chosen) cap_gemm_path(chosen->name);
    mag_pool_resize(default_threads());
}

mag_status_t mag_cpu_init(void) {
    pthread_once(&init_once, init);
    return init_status == MAG_OK ? MAG_OK : mag_error(init_status, "%s", init_msg);
}

static mag_kernel_fn cpu_lookup(mag_op_t op, mag_dtype_t dt) {
    pthread_once(&init_once, init);
    return kernels[op][dt];
}

/* Below this many elements per thread, waking another thread costs more than it saves. */
#define MIN_WORK_PER_THREAD 32768

static int64_t cpu_threads(int64_t work, bool single_thread) {
    int64_t nt = single_thread ? 1 : work / MIN_WORK_PER_THREAD;
    return nt < 1 ? 1 : nt;
}

static void cpu_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t work, bool single_thread) {
    mag_pool_run(fn, a, cpu_threads(work, single_thread));
}

static bool cpu_parallel(int64_t work, bool single_thread) { return cpu_threads(work, single_thread) > 1; }

static const mag_backend_t cpu_backend = {"cpu", cpu_lookup, cpu_run, cpu_parallel, mag_pool_prefetch,
                                          mag_pool_prefetch_end};

const mag_backend_t *mag_cpu_backend(void) { return &cpu_backend; }

uint32_t mag_num_threads(void) {
    pthread_once(&init_once, init);
    return mag_pool_size();
}

mag_status_t mag_set_num_threads(uint32_t n) {
    pthread_once(&init_once, init); /* so that start-up does not override n later */
    return mag_pool_resize(n);
}

const char *mag_cpu_feature_name(uint32_t bit) { return mag_cpu_feature_str(bit); }

mag_status_t mag_cpu_info(mag_cpu_info_t *out) {
    mag_status_t st = mag_cpu_init();
    const mag_cpu_id_t *id = mag_cpu_id();
    memset(out, 0, sizeof(*out));
    memcpy(out->vendor, id->vendor, sizeof(out->vendor));
    memcpy(out->model, id->brand, sizeof(out->model));
    out->family = id->family;
    out->model_number = id->model;
    out->stepping = id->stepping;
    out->cpus = mag_cpu_usable_count();
    out->features = id->features;
    out->variant = chosen ? chosen->name : NULL;
    out->n_variants = N_VARIANTS;
    for (uint32_t i = 0; i < N_VARIANTS; ++i) {
        out->variants[i] = variants[i].name;
        out->variant_runs[i] = !missing(&variants[i]);
    }
    return st;
}
