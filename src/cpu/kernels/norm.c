/*
 * rms_norm and layer_norm (operand layout in core/reduce.h). Each row of the normalised dims is
 * read twice for rms_norm (the mean square, then the output) and three times for layer_norm (the
 * mean, the mean squared deviation from it, then the output: two passes like torch, more accurate
 * than one), while it is still in cache; 16-bit floats are converted in registers. Sums add
 * NORM_BLOCK-element SIMD blocks into a float64 total, so long rows stay accurate. Threads claim
 * the rows on demand.
 */
#include "../../core/reduce.h"
#include "blocks.h"

#define NORM_BLOCK 2048

/* A: the compute type of dtype ID; the weight and bias come in ID's dtype or in A */
#define NORM_KERNEL(ID, ST, A)                                                                                         \
    /* the sum of the n values at src, or of their squared deviations from c */                                        \
    static double norm_sum_##ID(const ST *src, int64_t n, A c, bool sq_dev) {                                          \
        double total = 0;                                                                                              \
        for (int64_t i = 0; i < n; i += NORM_BLOCK) {                                                                  \
            int64_t m = n - i < NORM_BLOCK ? n - i : NORM_BLOCK;                                                       \
            A t;                                                                                                       \
            if (sq_dev) MAG_VSUM(A, ID, src + i, m, (x - c) * (x - c), t);                                             \
            else MAG_VSUM(A, ID, src + i, m, x, t);                                                                    \
            total += t;                                                                                                \
        }                                                                                                              \
        return total;                                                                                                  \
    }                                                                                                                  \
    typedef A norm_vec_##ID __attribute__((vector_size(MAG_VBYTES)));                                                  \
    /* p[j] of a weight or bias in x's dtype (p16) or in the compute type, and the vector from p[j] on */              \
    static inline A norm_param_##ID(const void *p, bool p16, int64_t j) {                                              \
        return p16 ? MAG_LD_##ID(((const ST *)p)[j]) : ((const A *)p)[j];                                              \
    }                                                                                                                  \
    static inline void norm_vparam_##ID(norm_vec_##ID *v, const void *p, bool p16, int64_t j) {                        \
        if (p16) MAG_VLOAD_##ID(*v, (const ST *)p + j);                                                                \
        else MAG_VLOAD(*v, (const A *)p + j);                                                                          \
    }                                                                                                                  \
    /* dst = (src - mean) * scale (rounded to ST first with `round`) (* w) (+ b) */                                    \
    static void norm_out_##ID(const ST *src, ST *dst, int64_t n, A mean, A scale, const void *w, bool w16,             \
                              const void *b, bool b16, bool round) {                                                   \
        enum { L = MAG_VBYTES / sizeof(A) };                                                                           \
        int64_t j = 0;                                                                                                 \
        for (; j + L <= n; j += L) {                                                                                   \
            norm_vec_##ID v, p;                                                                                        \
            MAG_VLOAD_##ID(v, src + j);                                                                                \
            v = (v - mean) * scale;                                                                                    \
            if (round) {                                                                                               \
                ST r[L];                                                                                               \
                MAG_VSTORE_##ID(r, v);                                                                                 \
                MAG_VLOAD_##ID(v, r);                                                                                  \
            }                                                                                                          \
            if (w) norm_vparam_##ID(&p, w, w16, j), v *= p;                                                            \
            if (b) norm_vparam_##ID(&p, b, b16, j), v += p;                                                            \
            MAG_VSTORE_##ID(dst + j, v);                                                                               \
        }                                                                                                              \
        for (; j < n; ++j) {                                                                                           \
            A v = (MAG_LD_##ID(src[j]) - mean) * scale;                                                                \
            v = round ? MAG_LD_##ID(MAG_ST_##ID(v)) : v;                                                               \
            v = w ? v * norm_param_##ID(w, w16, j) : v;                                                                \
            dst[j] = MAG_ST_##ID(b ? v + norm_param_##ID(b, b16, j) : v);                                              \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_norm_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                      \
        const mag_tensor_t *x = a->in[0];                                                                              \
        int64_t k = mag_scalar_as_int(a->attrs[MAG_NORM_DIMS]), n = 1, r0, r1;                                         \
        for (int64_t d = x->rank - k; d < x->rank; ++d) n *= x->shape[d];                                              \
        bool hw = a->attrs[MAG_NORM_HAS_WEIGHT].i != 0, hb = a->attrs[MAG_NORM_HAS_BIAS].i != 0;                       \
        bool round = a->attrs[MAG_NORM_ROUND_FIRST].i != 0;                                                            \
        const void *w = hw ? mag_tensor_data(a->in[1]) : NULL, *b = hb ? mag_tensor_data(a->in[1 + hw]) : NULL;        \
        bool w16 = hw && a->in[1]->dtype == x->dtype, b16 = hb && a->in[1 + hw]->dtype == x->dtype;                    \
        double eps = mag_scalar_as_double(a->attrs[MAG_NORM_EPS]);                                                     \
        bool layer = a->op == MAG_OP_LAYER_NORM;                                                                       \
        const ST *src = (const ST *)mag_tensor_data(x);                                                                \
        ST *dst = (ST *)mag_tensor_data(a->out);                                                                       \
        (void)ti;                                                                                                      \
        while (mag_claim_items(a, n ? x->numel / n : 0, nt, n, &r0, &r1))                                              \
            for (int64_t r = r0; r < r1; ++r) {                                                                        \
                const ST *row = src + r * n;                                                                           \
                A mean = layer ? (A)(norm_sum_##ID(row, n, 0, false) / (double)n) : 0;                                 \
                A var = (A)(norm_sum_##ID(row, n, mean, true) / (double)n);                                            \
                norm_out_##ID(row, dst + r * n, n, mean, (A)(1.0 / sqrt((double)(var + (A)eps))), w, w16, b, b16,      \
                              round);                                                                                  \
            }                                                                                                          \
    }
MAG_FLOAT_DTYPES(NORM_KERNEL)
#undef NORM_KERNEL

#define NORM_REG(ID, ST, A)                                                                                            \
    t[MAG_OP_RMS_NORM][MAG_DTYPE_##ID] = k_norm_##ID;                                                                  \
    t[MAG_OP_LAYER_NORM][MAG_DTYPE_##ID] = k_norm_##ID;
static void register_norm(mag_kernel_table_t t) { MAG_FLOAT_DTYPES(NORM_REG) }
#undef NORM_REG
