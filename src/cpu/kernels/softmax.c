/*
 * softmax and log_softmax along one dim, numerically stable: with m the lane's max,
 * softmax = exp(x - m) / sum(exp(x - m)) and log_softmax = (x - m) - log(sum(exp(x - m))).
 * 16-bit floats compute in float32. A NaN in a lane makes the whole lane NaN, as in torch.
 *
 * Every pass runs over contiguous arrays of the compute type, so that it vectorises (exp is
 * vmath.h's): a float32/float64 lane with unit stride is used in place, any other lane is
 * converted into a buffer, whole when it fits, else in chunks with exp computed again in the
 * last pass. Neighbouring lanes that are adjacent in memory (softmax over a strided dim) are
 * done SOFTMAX_COLS at a time, side by side: each pass then streams through memory in order
 * (one page per lane element would cost a TLB miss each) and the inner loops run across lanes.
 */
#include "lanes.h"

#define SOFTMAX_ACC 16   /* partial maxima and sums kept apart, so that the reductions vectorise */
#define SOFTMAX_BUF 4096 /* compute-type elements of a lane converted at once */
#define SOFTMAX_COLS 1024 /* lanes side by side: each pass reads rows of 4 KiB (float32) in order */

/* Passes over n contiguous compute-type values, for float and double. */
#define SOFTMAX_PASSES(CT, S)                                                                                          \
    MAG_INLINE CT sm_max_##S(const CT *x, int64_t n) {                                                                 \
        CT acc[SOFTMAX_ACC], m;                                                                                        \
        for (int j = 0; j < SOFTMAX_ACC; ++j) acc[j] = -INFINITY;                                                      \
        int64_t i = 0;                                                                                                 \
        for (; i + SOFTMAX_ACC <= n; i += SOFTMAX_ACC)                                                                 \
            for (int j = 0; j < SOFTMAX_ACC; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];                      \
        for (; i < n; ++i) acc[0] = x[i] > acc[0] ? x[i] : acc[0];                                                     \
        m = acc[0];                                                                                                    \
        for (int j = 1; j < SOFTMAX_ACC; ++j) m = acc[j] > m ? acc[j] : m;                                             \
        return m;                                                                                                      \
    }                                                                                                                  \
    /* the sum of exp(x - m); e (which may be x, or NULL) receives the terms */                                        \
    MAG_INLINE CT sm_exp_sum_##S(CT *e, const CT *x, int64_t n, CT m) {                                                \
        CT acc[SOFTMAX_ACC] = {0}, s = 0;                                                                              \
        int64_t i = 0;                                                                                                 \
        for (; i + SOFTMAX_ACC <= n; i += SOFTMAX_ACC)                                                                 \
            for (int j = 0; j < SOFTMAX_ACC; ++j) {                                                                    \
                CT v = mag_exp_##S(x[i + j] - m);                                                                      \
                if (e) e[i + j] = v;                                                                                   \
                acc[j] += v;                                                                                           \
            }                                                                                                          \
        for (; i < n; ++i) {                                                                                           \
            CT v = mag_exp_##S(x[i] - m);                                                                              \
            if (e) e[i] = v;                                                                                           \
            acc[0] += v;                                                                                               \
        }                                                                                                              \
        for (int j = 0; j < SOFTMAX_ACC; ++j) s += acc[j];                                                             \
        return s;                                                                                                      \
    }                                                                                                                  \
    /* the last pass: o = e * c (softmax, e holding the terms) or o = (x - m) - c (log_softmax) */                     \
    MAG_INLINE void sm_finish_##S(CT *o, const CT *x, int64_t n, CT m, CT c, bool log_form) {                          \
        if (log_form)                                                                                                  \
            for (int64_t i = 0; i < n; ++i) o[i] = (x[i] - m) - c;                                                     \
        else                                                                                                           \
            for (int64_t i = 0; i < n; ++i) o[i] = x[i] * c;                                                           \
    }
SOFTMAX_PASSES(float, f32)
SOFTMAX_PASSES(double, f64)
#undef SOFTMAX_PASSES

#define SOFTMAX_KERNEL(ID, ST, CT)                                                                                     \
    /* n values of a lane (byte stride st) as a compute-type array: in place, or converted into buf */                 \
    static const CT *sm_load_##ID(CT *buf, const uint8_t *x, int64_t st, int64_t n) {                                  \
        if (st == (int64_t)sizeof(ST)) {                                                                               \
            if (sizeof(ST) == sizeof(CT)) return (const CT *)(const void *)x;                                          \
            MAG_LD_N_##ID(buf, (const ST *)(const void *)x, n);                                                        \
        } else {                                                                                                       \
            for (int64_t i = 0; i < n; ++i) buf[i] = mag_ew_load_##ID(x + i * st);                                     \
        }                                                                                                              \
        return buf;                                                                                                    \
    }                                                                                                                  \
    static void sm_store_##ID(uint8_t *o, int64_t st, const CT *v, int64_t n) {                                        \
        if ((const void *)o == (const void *)v) return;                                                                \
        if (st == (int64_t)sizeof(ST)) {                                                                               \
            MAG_ST_N_##ID((ST *)(void *)o, v, n);                                                                      \
        } else {                                                                                                       \
            for (int64_t i = 0; i < n; ++i) MAG_LANE_PUT(ID, ST, o + i * st, v[i]);                                    \
        }                                                                                                              \
    }                                                                                                                  \
    /* one lane of length len: the out lane at o (byte stride os), the input at x (stride xs) */                       \
    static void sm_lane_##ID(uint8_t *o, int64_t os, const uint8_t *x, int64_t xs, int64_t len, bool log_form) {       \
        CT buf[SOFTMAX_BUF];                                                                                           \
        bool direct = sizeof(ST) == sizeof(CT) && os == (int64_t)sizeof(ST);                                           \
        if (len <= SOFTMAX_BUF || (direct && xs == os)) { /* the whole lane at once: one exp per element */            \
            const CT *v = sm_load_##ID(buf, x, xs, len);                                                               \
            CT *w = direct ? (CT *)(void *)o : buf, m = MAG_FLT(sm_max, (CT)0)(v, len);                                \
            CT s = MAG_FLT(sm_exp_sum, (CT)0)(log_form ? NULL : w, v, len, m);                                         \
            MAG_FLT(sm_finish, (CT)0)(w, log_form ? v : w, len, m, log_form ? log(s) : 1 / s, log_form);               \
            sm_store_##ID(o, os, w, len);                                                                              \
            return;                                                                                                    \
        }                                                                                                              \
        CT m = -INFINITY, s = 0, c;                                                                                    \
        for (int64_t i = 0; i < len; i += SOFTMAX_BUF) {                                                               \
            int64_t k = len - i < SOFTMAX_BUF ? len - i : SOFTMAX_BUF;                                                 \
            CT cm = MAG_FLT(sm_max, (CT)0)(sm_load_##ID(buf, x + i * xs, xs, k), k);                                   \
            m = cm > m ? cm : m;                                                                                       \
        }                                                                                                              \
        for (int64_t i = 0; i < len; i += SOFTMAX_BUF) {                                                               \
            int64_t k = len - i < SOFTMAX_BUF ? len - i : SOFTMAX_BUF;                                                 \
            s += MAG_FLT(sm_exp_sum, (CT)0)(NULL, sm_load_##ID(buf, x + i * xs, xs, k), k, m);                         \
        }                                                                                                              \
        c = log_form ? log(s) : 1 / s;                                                                                 \
        for (int64_t i = 0; i < len; i += SOFTMAX_BUF) {                                                               \
            int64_t k = len - i < SOFTMAX_BUF ? len - i : SOFTMAX_BUF;                                                 \
            const CT *v = sm_load_##ID(buf, x + i * xs, xs, k);                                                        \
            if (!log_form) MAG_FLT(sm_exp_sum, (CT)0)(buf, v, k, m);                                                   \
            MAG_FLT(sm_finish, (CT)0)(buf, log_form ? v : buf, k, m, c, log_form);                                     \
            sm_store_##ID(o + i * os, os, buf, k);                                                                     \
        }                                                                                                              \
    }                                                                                                                  \
    /* w <= SOFTMAX_COLS lanes whose starts are sizeof(ST) apart, row by row */                                        \
    static void sm_cols_##ID(uint8_t *o, const uint8_t *x, int64_t w, mag_lane_t lo, mag_lane_t li, bool log_form) {   \
        CT m[SOFTMAX_COLS], c[SOFTMAX_COLS], buf[SOFTMAX_COLS];                                                        \
        const int64_t es = (int64_t)sizeof(ST);                                                                        \
        /* float32/float64 softmax keeps exp(x - m) in out for the last pass: one exp per element */                   \
        bool keep = !log_form && sizeof(ST) == sizeof(CT);                                                             \
        for (int64_t j = 0; j < w; ++j) m[j] = -INFINITY, c[j] = 0;                                                    \
        for (int64_t i = 0; i < li.len; ++i) {                                                                         \
            const CT *v = sm_load_##ID(buf, x + i * li.stride, es, w);                                                 \
            for (int64_t j = 0; j < w; ++j) m[j] = v[j] > m[j] ? v[j] : m[j];                                          \
        }                                                                                                              \
        for (int64_t i = 0; i < li.len; ++i) { /* c: the sums */                                                       \
            const CT *v = sm_load_##ID(buf, x + i * li.stride, es, w);                                                 \
            CT *e = keep ? (CT *)(void *)(o + i * lo.stride) : buf;                                                    \
            for (int64_t j = 0; j < w; ++j) {                                                                          \
                e[j] = MAG_FLT(mag_exp, (CT)0)(v[j] - m[j]);                                                           \
                c[j] += e[j];                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
        for (int64_t j = 0; j < w; ++j) c[j] = log_form ? log(c[j]) : 1 / c[j];                                        \
        for (int64_t i = 0; i < li.len; ++i) {                                                                         \
            uint8_t *out = o + i * lo.stride;                                                                          \
            if (keep) {                                                                                                \
                CT *e = (CT *)(void *)out;                                                                             \
                for (int64_t j = 0; j < w; ++j) e[j] *= c[j];                                                          \
                continue;                                                                                              \
            }                                                                                                          \
            const CT *v = sm_load_##ID(buf, x + i * li.stride, es, w);                                                 \
            for (int64_t j = 0; j < w; ++j) {                                                                          \
                CT d = v[j] - m[j];                                                                                    \
                buf[j] = log_form ? d - c[j] : MAG_FLT(mag_exp, (CT)0)(d) * c[j];                                      \
            }                                                                                                          \
            sm_store_##ID(out, es, buf, w);                                                                            \
        }                                                                                                              \
    }                                                                                                                  \
    static void row_softmax_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {         \
        int64_t dim = mag_scalar_as_int(a->attrs[0]);                                                                  \
        mag_lane_t lo = mag_lane_of(a->out, dim), li = mag_lane_of(a->in[0], dim);                                     \
        const int64_t es = (int64_t)sizeof(ST);                                                                        \
        bool log_form = a->op == MAG_OP_LOG_SOFTMAX;                                                                   \
        if (s[0] == es && s[1] == es && li.stride != es) {                                                             \
            for (int64_t r = 0, w; r < n; r += w) {                                                                    \
                w = n - r < SOFTMAX_COLS ? n - r : SOFTMAX_COLS;                                                       \
                sm_cols_##ID(p[0] + r * es, p[1] + r * es, w, lo, li, log_form);                                       \
            }                                                                                                          \
        } else {                                                                                                       \
            for (int64_t r = 0; r < n; ++r)                                                                            \
                sm_lane_##ID(p[0] + r * s[0], lo.stride, p[1] + r * s[1], li.stride, li.len, log_form);                \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_softmax_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                   \
        mag_run_lanes(a, ti, nt, mag_scalar_as_int(a->attrs[0]), 1, row_softmax_##ID, a);                              \
    }
MAG_FLOAT_DTYPES(SOFTMAX_KERNEL)
#undef SOFTMAX_KERNEL

#define SOFTMAX_REG(ID, ST, CT)                                                                                        \
    t[MAG_OP_SOFTMAX][MAG_DTYPE_##ID] = k_softmax_##ID;                                                                \
    t[MAG_OP_LOG_SOFTMAX][MAG_DTYPE_##ID] = k_softmax_##ID;
static void register_softmax(mag_kernel_table_t t) { MAG_FLOAT_DTYPES(SOFTMAX_REG) }
#undef SOFTMAX_REG
