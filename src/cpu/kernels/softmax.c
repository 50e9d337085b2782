/*
 * softmax and log_softmax along one dim, numerically stable: with m the lane's max,
 * softmax = exp(x - m) / sum(exp(x - m)) and log_softmax = x - m - log(sum(exp(x - m))).
 * 16-bit floats compute in float32. A NaN in a lane makes the whole lane NaN, as in torch.
 */
#include "lanes.h"

#include <tgmath.h>

#define SOFTMAX_KERNEL(ID, ST, CT)                                                                                     \
    static void row_softmax_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {       \
        int64_t dim = mag_scalar_as_int(a->attrs[0]);                                                                  \
        mag_lane_t lo = mag_lane_of(a->out, dim), li = mag_lane_of(a->in[0], dim);                                     \
        bool log_form = a->op == MAG_OP_LOG_SOFTMAX;                                                                   \
        for (int64_t r = 0; r < n; ++r) {                                                                              \
            uint8_t *o = p[0] + r * s[0];                                                                              \
            const uint8_t *x = p[1] + r * s[1];                                                                        \
            CT m = -INFINITY, l[4] = {0};                                                                              \
            for (int64_t i = 0; i < li.len; ++i) {                                                                     \
                CT v = mag_lane_load_##ID(x + i * li.stride);                                                          \
                m = v > m ? v : m;                                                                                     \
            }                                                                                                          \
            for (int64_t i = 0; i < li.len; ++i) l[i & 3] += exp(mag_lane_load_##ID(x + i * li.stride) - m);          \
            CT sum = (l[0] + l[1]) + (l[2] + l[3]), log_sum = log(sum);                                                  \
            for (int64_t i = 0; i < li.len; ++i) {                                                                     \
                CT v = mag_lane_load_##ID(x + i * li.stride);                                                          \
                MAG_LANE_PUT(ID, ST, o + i * lo.stride, log_form ? (v - m) - log_sum : exp(v - m) / sum);              \
            }                                                                                                          \
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
