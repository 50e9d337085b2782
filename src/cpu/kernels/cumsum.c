/*
 * cumsum along one dim. Like torch, float32 and float64 accumulate in float64, 16-bit floats in
 * float32, integers and booleans in int64 (wrapping on overflow), which is also their result type.
 */
#include "lanes.h"

/* A: accumulator type, OID/OT: result dtype and its storage type */
#define CUMSUM_KERNEL(ID, ST, CT, A, OID, OT)                                                                          \
    static void row_cumsum_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {          \
        int64_t dim = mag_scalar_as_int(a->attrs[0]);                                                                  \
        mag_lane_t lo = mag_lane_of(a->out, dim), li = mag_lane_of(a->in[0], dim);                                     \
        for (int64_t r = 0; r < n; ++r) {                                                                              \
            uint8_t *o = p[0] + r * s[0];                                                                              \
            const uint8_t *x = p[1] + r * s[1];                                                                        \
            A acc = 0;                                                                                                 \
            for (int64_t i = 0; i < li.len; ++i) {                                                                     \
                acc += (A)mag_ew_load_##ID(x + i * li.stride);                                                       \
                MAG_LANE_PUT(OID, OT, o + i * lo.stride, acc);                                                         \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_cumsum_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                    \
        mag_run_lanes(a, ti, nt, mag_scalar_as_int(a->attrs[0]), 1, row_cumsum_##ID, a);                               \
    }
#define CUMSUM_FLOAT(ID, ST, CT) CUMSUM_KERNEL(ID, ST, CT, CUMSUM_ACC_##ID, ID, ST)
#define CUMSUM_INTEGRAL(ID, ST, CT) CUMSUM_KERNEL(ID, ST, CT, int64_t, INT64, int64_t)
#define CUMSUM_ACC_FLOAT32 double
#define CUMSUM_ACC_FLOAT64 double
#define CUMSUM_ACC_FLOAT16 float
#define CUMSUM_ACC_BFLOAT16 float
MAG_FLOAT_DTYPES(CUMSUM_FLOAT)
MAG_INT_DTYPES(CUMSUM_INTEGRAL)
MAG_BOOL_DTYPES(CUMSUM_INTEGRAL)

#define CUMSUM_REG(ID, ST, CT) t[MAG_OP_CUMSUM][MAG_DTYPE_##ID] = k_cumsum_##ID;
static void register_cumsum(mag_kernel_table_t t) { MAG_ALL_DTYPES(CUMSUM_REG) }
#undef CUMSUM_REG
#undef CUMSUM_KERNEL
#undef CUMSUM_FLOAT
#undef CUMSUM_INTEGRAL
#undef CUMSUM_ACC_FLOAT32
#undef CUMSUM_ACC_FLOAT64
#undef CUMSUM_ACC_FLOAT16
#undef CUMSUM_ACC_BFLOAT16
