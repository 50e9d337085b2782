/* The CPU backend: the kernel table of the selected ISA variant and the thread heuristic. */
#include "../backend.h"
#include "threadpool.h"

#include <pthread.h>

typedef mag_kernel_fn mag_kernel_table_t[MAG_OP__COUNT][MAG_DTYPE__COUNT];
void mag_cpu_table_generic(mag_kernel_table_t t);

static mag_kernel_table_t kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void init_kernels(void) { mag_cpu_table_generic(kernels); }

static mag_kernel_fn cpu_lookup(mag_op_t op, mag_dtype_t dt) {
    pthread_once(&kernels_once, init_kernels);
    return kernels[op][dt];
}

/* Below this many elements per thread, waking another thread costs more than it saves. */
#define MIN_WORK_PER_THREAD 32768

static void cpu_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t work, bool single_thread) {
    int64_t nt = single_thread ? 1 : work / MIN_WORK_PER_THREAD;
    mag_pool_run(fn, a, nt < 1 ? 1 : nt);
}

static const mag_backend_t cpu_backend = {"cpu", cpu_lookup, cpu_run};

const mag_backend_t *mag_cpu_backend(void) { return &cpu_backend; }

uint32_t mag_num_threads(void) { return mag_pool_size(); }
mag_status_t mag_set_num_threads(uint32_t n) { return mag_pool_resize(n); }
