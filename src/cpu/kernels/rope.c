/*
 * ROPE (front end: src/core/ops_rope.c): per lane of the last dim, rotate the feature pairs of
 * x by the lane's cos/sin entries (already broadcast to x's leading dims). Pair i is features
 * (i, i + D/2) in rotate-half form, (2i, 2i + 1) interleaved. 16-bit floats round each product
 * and the sum to their dtype, as the unfused torch expression x * cos + rotate(x) * sin does: the
 * bfloat16 models then track transformers' bfloat16 runs (one rounding at the end drifts further).
 */
#include "lanes.h"

#define ROPE_ROUND(ID, v) MAG_LD_##ID(MAG_ST_##ID(v))
#define ROPE_KERNEL(ID, ST, CT)                                                                                        \
    static void row_rope_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {           \
        int64_t last = a->out->rank - 1;                                                                               \
        mag_lane_t lo = mag_lane_of(a->out, last), lx = mag_lane_of(a->in[0], last);                                   \
        mag_lane_t lc = mag_lane_of(a->in[1], last), ls = mag_lane_of(a->in[2], last);                                 \
        const int64_t es = (int64_t)sizeof(ST), h = lo.len / 2;                                                        \
        bool inter = mag_scalar_as_int(a->attrs[0]) != 0;                                                              \
        int64_t step = inter ? 2 : 1, mate = inter ? 1 : h; /* pair i: features i*step and i*step + mate */           \
        bool dense = lo.stride == es && lx.stride == es && lc.stride == es && ls.stride == es;                         \
        for (int64_t r = 0; r < n; ++r) {                                                                              \
            uint8_t *o = p[0] + r * s[0];                                                                              \
            const uint8_t *x = p[1] + r * s[1], *c = p[2] + r * s[2], *sn = p[3] + r * s[3];                           \
            if (dense) {                                                                                               \
                ST *O = (ST *)o;                                                                                       \
                const ST *X = (const ST *)x, *C = (const ST *)c, *S = (const ST *)sn;                                  \
                for (int64_t i = 0; i < h; ++i) {                                                                      \
                    CT x1 = MAG_LD_##ID(X[i * step]), x2 = MAG_LD_##ID(X[i * step + mate]);                            \
                    CT cv = MAG_LD_##ID(C[i]), sv = MAG_LD_##ID(S[i]);                                                 \
                    O[i * step] = MAG_ST_##ID(ROPE_ROUND(ID, x1 * cv) - ROPE_ROUND(ID, x2 * sv));                      \
                    O[i * step + mate] = MAG_ST_##ID(ROPE_ROUND(ID, x2 * cv) + ROPE_ROUND(ID, x1 * sv));               \
                }                                                                                                      \
                continue;                                                                                              \
            }                                                                                                          \
            for (int64_t i = 0; i < h; ++i) {                                                                          \
                int64_t j = i * step, k = j + mate;                                                                    \
                CT x1 = mag_ew_load_##ID(x + j * lx.stride), x2 = mag_ew_load_##ID(x + k * lx.stride);               \
                CT cv = mag_ew_load_##ID(c + i * lc.stride), sv = mag_ew_load_##ID(sn + i * ls.stride);              \
                MAG_LANE_PUT(ID, ST, o + j * lo.stride, ROPE_ROUND(ID, x1 * cv) - ROPE_ROUND(ID, x2 * sv));            \
                MAG_LANE_PUT(ID, ST, o + k * lo.stride, ROPE_ROUND(ID, x2 * cv) + ROPE_ROUND(ID, x1 * sv));            \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_rope_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                      \
        mag_run_lanes(a, ti, nt, a->out->rank - 1, 3, row_rope_##ID, a);                                               \
    }
MAG_FLOAT_DTYPES(ROPE_KERNEL)
#undef ROPE_KERNEL
#undef ROPE_ROUND

#define ROPE_REG(ID, ST, CT) t[MAG_OP_ROPE][MAG_DTYPE_##ID] = k_rope_##ID;
static void register_rope(mag_kernel_table_t t) { MAG_FLOAT_DTYPES(ROPE_REG) }
#undef ROPE_REG
