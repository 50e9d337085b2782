/*
 * Factories that write into a given output: FILL, ARANGE and the random fills. The output
 * is contiguous (the front end stages strided destinations); random element i always draws from Philox block i, so the
 * values do not depend on the thread count.
 */
#include "common.h"

/* row-major position of the first element of this row segment, tracked through the args */
typedef struct fill_row_ctx {
    const mag_kernel_args_t *a;
    int64_t pos;
} fill_row_ctx_t;

static inline float uniform01_24(uint32_t w) { return (float)(w >> 8) * 0x1.0p-24f; }

#define FILL_KERNELS(ID, ST, CT)                                                                                       \
    static void k_fill_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                     \
        mag_scalar_t s = a->attrs[0]; /* converted exactly as cast converts a tensor of the scalar's kind */           \
        ST v = s.kind == MAG_SCALAR_FLOAT ? MAG_ST_##ID(s.f) : s.kind == MAG_SCALAR_UINT ? MAG_ST_##ID(s.u)           \
                                                                                         : MAG_ST_##ID(s.i);          \
        ELEMENTS_LOOP(ST, out[i] = v;);                                                                                  \
    }                                                                                                                  \
    static void k_bernoulli_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                \
        double p = mag_scalar_as_double(a->attrs[0]);                                                                  \
        ELEMENTS_LOOP(ST, uint32_t w[4]; mag_philox4x32(a->rng, (uint64_t)(idx), w);                                   \
                      out[i] = MAG_ST_##ID(uniform01_53(w) < p ? 1 : 0););                                              \
    }

/* Loop over this thread's elements of the (contiguous) output: `out[i]` is element `idx`. */
#define ELEMENTS_LOOP(ST, ...);                                                                                        \
    do {                                                                                                               \
        int64_t b_, e_;                                                                                                \
        mag_partition(a->out->numel, ti, nt, &b_, &e_);                                                                \
        ST *out = (ST *)mag_tensor_data(a->out);                                                                       \
        for (int64_t i = b_; i < e_; ++i) {                                                                            \
            int64_t idx = i;                                                                                           \
            (void)idx;                                                                                                 \
            __VA_ARGS__                                                                                                \
        }                                                                                                              \
    } while (0)
MAG_ALL_DTYPES(FILL_KERNELS)

#define ARANGE_KERNEL(ID, ST, CT)                                                                                      \
    static void k_arange_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                   \
        bool exact_int = a->attrs[0].kind != MAG_SCALAR_FLOAT && a->attrs[1].kind != MAG_SCALAR_FLOAT;                 \
        int64_t si = mag_scalar_as_int(a->attrs[0]), di = mag_scalar_as_int(a->attrs[1]);                             \
        double sf = mag_scalar_as_double(a->attrs[0]), df = mag_scalar_as_double(a->attrs[1]);                        \
        if (exact_int) {                                                                                               \
            ELEMENTS_LOOP(ST, out[i] = MAG_ST_##ID((int64_t)((uint64_t)si + (uint64_t)di * (uint64_t)(idx))););      \
        } else {                                                                                                       \
            ELEMENTS_LOOP(ST, out[i] = MAG_ST_##ID(sf + df * (double)(idx)););                                          \
        }                                                                                                              \
    }
MAG_NUMERIC_DTYPES(ARANGE_KERNEL)

#define UNIFORM_FLOAT(ID, ST, CT)                                                                                      \
    static void k_uniform_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        double lo = mag_scalar_as_double(a->attrs[0]), hi = mag_scalar_as_double(a->attrs[1]);                        \
        ELEMENTS_LOOP(ST, uint32_t w[4]; mag_philox4x32(a->rng, (uint64_t)idx, w);                                     \
                      double u = sizeof(CT) == 8 ? uniform01_53(w) : uniform01_24(w[0]);                               \
                      ST r = MAG_ST_##ID((CT)(lo + (hi - lo) * u));                                                    \
                      /* rounding (to f32, f16, bf16) can reach high: keep the interval half-open */                   \
                      if (MAG_LD_##ID(r) >= hi && hi > lo) r = MAG_ST_##ID(lo);                                        \
                      out[i] = r;);                                                                                    \
    }                                                                                                                  \
    static void k_normal_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                   \
        double mean = mag_scalar_as_double(a->attrs[0]), std = mag_scalar_as_double(a->attrs[1]);                     \
        ELEMENTS_LOOP(ST, uint32_t w[4]; mag_philox4x32(a->rng, (uint64_t)idx, w);                                     \
                      double u1 = 1.0 - uniform01_53(w), u2 = (double)w[2] * 0x1.0p-32;                                \
                      double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);                                   \
                      out[i] = MAG_ST_##ID(mean + std * z););                                                            \
    }
MAG_FLOAT_DTYPES(UNIFORM_FLOAT)

/* integers: uniform over [low, high] inclusive */
#define UNIFORM_INT(ID, ST, CT)                                                                                        \
    static void k_uniform_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        int64_t lo = mag_scalar_as_int(a->attrs[0]), hi = mag_scalar_as_int(a->attrs[1]);                             \
        uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* lo <= hi (checked); 0 means the full 2^64 range */        \
        ELEMENTS_LOOP(ST, uint32_t w[4]; mag_philox4x32(a->rng, (uint64_t)idx, w);                                     \
                      uint64_t r = ((uint64_t)w[0] << 32) | w[1]; if (span) r %= span;                                 \
                      out[i] = (ST)((uint64_t)lo + r););                                                                 \
    }
MAG_INT_DTYPES(UNIFORM_INT)

/* Fisher-Yates with Philox draws; one thread (the front end asks for it). */
#define RAND_PERM(ID, ST, CT)                                                                                          \
    static void k_rand_perm_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                \
        (void)ti, (void)nt;                                                                                            \
        ST *out = (ST *)mag_tensor_data(a->out);                                                                       \
        int64_t n = a->out->numel, st = a->out->strides[0];                                                            \
        int64_t *perm = (int64_t *)mag_alloc((size_t)n * sizeof(int64_t));                                             \
        if (!perm) {                                                                                                   \
            atomic_store(a->status, MAG_ERR_MEMORY);                                                                   \
            return;                                                                                                    \
        }                                                                                                              \
        for (int64_t i = 0; i < n; ++i) perm[i] = i;                                                                   \
        for (int64_t i = n - 1; i > 0; --i) {                                                                          \
            uint32_t w[4];                                                                                             \
            mag_philox4x32(a->rng, (uint64_t)i, w);                                                                    \
            int64_t j = (int64_t)((((uint64_t)w[0] << 32) | w[1]) % (uint64_t)(i + 1));                                \
            int64_t tmp = perm[i];                                                                                     \
            perm[i] = perm[j];                                                                                         \
            perm[j] = tmp;                                                                                             \
        }                                                                                                              \
        for (int64_t i = 0; i < n; ++i) out[i * st] = MAG_ST_##ID(perm[i]);                                            \
        mag_free(perm, (size_t)n * sizeof(int64_t));                                                                   \
    }
MAG_NUMERIC_DTYPES(RAND_PERM)

#define REG_ALL(ID, ST, CT)                                                                                            \
    t[MAG_OP_FILL][MAG_DTYPE_##ID] = k_fill_##ID;                                                                      \
    t[MAG_OP_BERNOULLI][MAG_DTYPE_##ID] = k_bernoulli_##ID;
#define REG_NUMERIC(ID, ST, CT)                                                                                        \
    t[MAG_OP_ARANGE][MAG_DTYPE_##ID] = k_arange_##ID;                                                                  \
    t[MAG_OP_UNIFORM][MAG_DTYPE_##ID] = k_uniform_##ID;                                                                \
    t[MAG_OP_RAND_PERM][MAG_DTYPE_##ID] = k_rand_perm_##ID;
#define REG_FLOAT(ID, ST, CT) t[MAG_OP_NORMAL][MAG_DTYPE_##ID] = k_normal_##ID;

static void register_fill(mag_kernel_table_t t) {
    MAG_ALL_DTYPES(REG_ALL)
    MAG_NUMERIC_DTYPES(REG_NUMERIC)
    MAG_FLOAT_DTYPES(REG_FLOAT)
}
