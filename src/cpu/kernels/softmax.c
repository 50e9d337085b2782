/*
 * softmax and log_softmax along one dim, numerically stable: with m the lane's max,
 * softmax = exp(x - m) / sum(exp(x - m)) and log_softmax = (x - m) - log(sum(exp(x - m))).
 * 16-bit floats compute in float32. A NaN in a lane makes the whole lane NaN, as in torch.
 * Neighbouring lanes that are adjacent in memory (softmax over a strided dim) are done
 * SOFTMAX_COLS at a time, side by side, so memory is read in order.
 */
#include "lanes.h"

#include <tgmath.h>

#define SOFTMAX_COLS 16

#define SOFTMAX_KERNEL(ID, ST, CT)                                                                                     \
    /* w lanes whose starts are sizeof(ST) apart (or one lane) */                                                      \
    static void softmax_lanes_##ID(uint8_t *o, const uint8_t *x, int64_t w, mag_lane_t lo, mag_lane_t li,              \
                                   bool log_form) {                                                                    \
        CT m[SOFTMAX_COLS], sum[SOFTMAX_COLS], scale[SOFTMAX_COLS];                                                    \
        const int64_t es = (int64_t)sizeof(ST);                                                                        \
        for (int64_t j = 0; j < w; ++j) m[j] = -INFINITY, sum[j] = 0;                                                  \
        for (int64_t i = 0; i < li.len; ++i)                                                                           \
            for (int64_t j = 0; j < w; ++j) {                                                                          \
                CT v = mag_ew_load_##ID(x + i * li.stride + j * es);                                                 \
                m[j] = v > m[j] ? v : m[j];                                                                            \
            }                                                                                                          \
        /* float32/float64 softmax keeps exp(x - m) in out for the last pass: one exp per element */                   \
        bool keep = !log_form && sizeof(ST) == sizeof(CT);                                                             \
        for (int64_t i = 0; i < li.len; ++i)                                                                           \
            for (int64_t j = 0; j < w; ++j) {                                                                          \
                CT e = exp(mag_ew_load_##ID(x + i * li.stride + j * es) - m[j]);                                     \
                sum[j] += e;                                                                                           \
                if (keep) MAG_LANE_PUT(ID, ST, o + i * lo.stride + j * es, e);                                         \
            }                                                                                                          \
        for (int64_t j = 0; j < w; ++j) scale[j] = log_form ? log(sum[j]) : 1 / sum[j];                                \
        for (int64_t i = 0; i < li.len; ++i)                                                                           \
            for (int64_t j = 0; j < w; ++j) {                                                                          \
                uint8_t *out = o + i * lo.stride + j * es;                                                             \
                CT d = keep ? mag_ew_load_##ID(out) : mag_ew_load_##ID(x + i * li.stride + j * es) - m[j];         \
                MAG_LANE_PUT(ID, ST, out, log_form ? d - scale[j] : (keep ? d : exp(d)) * scale[j]);                   \
            }                                                                                                          \
    }                                                                                                                  \
    static void row_softmax_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {         \
        int64_t dim = mag_scalar_as_int(a->attrs[0]);                                                                  \
        mag_lane_t lo = mag_lane_of(a->out, dim), li = mag_lane_of(a->in[0], dim);                                     \
        const int64_t es = (int64_t)sizeof(ST);                                                                        \
        bool side_by_side = s[0] == es && s[1] == es && li.stride != es;                                               \
        for (int64_t r = 0, w; r < n; r += w) {                                                                        \
            w = side_by_side ? (n - r < SOFTMAX_COLS ? n - r : SOFTMAX_COLS) : 1;                                      \
            softmax_lanes_##ID(p[0] + r * s[0], p[1] + r * s[1], w, lo, li, a->op == MAG_OP_LOG_SOFTMAX);              \
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
