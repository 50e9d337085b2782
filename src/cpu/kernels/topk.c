/*
 * topk along one dim: a heap of the k best (value, index) pairs seen so far, whose root is the
 * worst of them, then a heap sort from best to worst. "Best" is a total order: larger (smaller
 * when largest is false) values first, NaN above every number as in torch, and the lower index
 * first among equal values, so results are deterministic. The indices go to in1.
 */
#include "lanes.h"

#include <stdlib.h>

#define TOPK_KERNEL(ID, ST, CT)                                                                                        \
    typedef struct topk_pair_##ID {                                                                                    \
        CT v;                                                                                                          \
        int64_t i;                                                                                                     \
    } topk_pair_##ID##_t;                                                                                              \
    /* does x rank before y? */                                                                                        \
    static inline bool topk_before_##ID(topk_pair_##ID##_t x, topk_pair_##ID##_t y, bool largest) {                    \
        bool xn = x.v != x.v, yn = y.v != y.v;                                                                         \
        if (xn || yn) return xn && yn ? x.i < y.i : xn == largest;                                                     \
        if (x.v != y.v) return largest ? x.v > y.v : x.v < y.v;                                                        \
        return x.i < y.i;                                                                                              \
    }                                                                                                                  \
    /* restore the heap (every parent ranks after its children) below h[p] */                                          \
    static void topk_sift_down_##ID(topk_pair_##ID##_t *h, int64_t n, int64_t p, bool largest) {                       \
        for (int64_t c; (c = 2 * p + 1) < n; p = c) {                                                                  \
            if (c + 1 < n && topk_before_##ID(h[c], h[c + 1], largest)) ++c;                                           \
            if (!topk_before_##ID(h[p], h[c], largest)) return;                                                        \
            topk_pair_##ID##_t t = h[p];                                                                               \
            h[p] = h[c];                                                                                               \
            h[c] = t;                                                                                                  \
        }                                                                                                              \
    }                                                                                                                  \
    static void topk_sift_up_##ID(topk_pair_##ID##_t *h, int64_t p, bool largest) {                                    \
        for (int64_t q; p > 0 && topk_before_##ID(h[q = (p - 1) / 2], h[p], largest); p = q) {                         \
            topk_pair_##ID##_t t = h[p];                                                                               \
            h[p] = h[q];                                                                                               \
            h[q] = t;                                                                                                  \
        }                                                                                                              \
    }                                                                                                                  \
    typedef struct topk_state_##ID {                                                                                   \
        mag_kernel_args_t a;                                                                                           \
        topk_pair_##ID##_t *heap;                                                                                      \
    } topk_state_##ID##_t;                                                                                             \
    static void row_topk_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {            \
        topk_pair_##ID##_t *h = ((const topk_state_##ID##_t *)(uintptr_t)a)->heap;                                     \
        int64_t dim = mag_scalar_as_int(a->attrs[1]);                                                                  \
        bool largest = mag_scalar_as_int(a->attrs[2]) != 0;                                                            \
        mag_lane_t lv = mag_lane_of(a->out, dim), lx = mag_lane_of(a->in[0], dim), li = mag_lane_of(a->in[1], dim);    \
        int64_t k = lv.len;                                                                                            \
        for (int64_t r = 0; r < n && k > 0; ++r) {                                                                     \
            const uint8_t *x = p[1] + r * s[1];                                                                        \
            int64_t m = 0;                                                                                             \
            for (int64_t j = 0; j < lx.len; ++j) {                                                                     \
                topk_pair_##ID##_t e = {mag_ew_load_##ID(x + j * lx.stride), j};                                     \
                if (m < k) {                                                                                           \
                    h[m] = e;                                                                                          \
                    topk_sift_up_##ID(h, m++, largest);                                                                \
                } else if (topk_before_##ID(e, h[0], largest)) {                                                       \
                    h[0] = e;                                                                                          \
                    topk_sift_down_##ID(h, m, 0, largest);                                                             \
                }                                                                                                      \
            }                                                                                                          \
            for (int64_t end = m - 1; end > 0; --end) { /* the worst goes last */                                      \
                topk_pair_##ID##_t t = h[0];                                                                           \
                h[0] = h[end];                                                                                         \
                h[end] = t;                                                                                            \
                topk_sift_down_##ID(h, end, 0, largest);                                                               \
            }                                                                                                          \
            for (int64_t j = 0; j < m; ++j) {                                                                          \
                MAG_LANE_PUT(ID, ST, p[0] + r * s[0] + j * lv.stride, h[j].v);                                         \
                memcpy(p[2] + r * s[2] + j * li.stride, &h[j].i, sizeof(int64_t));                                     \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_topk_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                      \
        int64_t k = mag_lane_of(a->out, mag_scalar_as_int(a->attrs[1])).len;                                           \
        topk_state_##ID##_t st = {.a = *a, .heap = malloc((size_t)(k > 0 ? k : 1) * sizeof(topk_pair_##ID##_t))};      \
        if (!st.heap) {                                                                                                \
            atomic_store(a->status, MAG_ERR_MEMORY);                                                                   \
            return;                                                                                                    \
        }                                                                                                              \
        mag_run_lanes(a, ti, nt, mag_scalar_as_int(a->attrs[1]), 2, row_topk_##ID, &st.a);                             \
        free(st.heap);                                                                                                 \
    }
MAG_NUMERIC_DTYPES(TOPK_KERNEL)
#undef TOPK_KERNEL

#define TOPK_REG(ID, ST, CT) t[MAG_OP_TOPK][MAG_DTYPE_##ID] = k_topk_##ID;
static void register_topk(mag_kernel_table_t t) { MAG_NUMERIC_DTYPES(TOPK_REG) }
#undef TOPK_REG
