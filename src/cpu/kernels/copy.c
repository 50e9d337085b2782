/* COPY: out = in0 converted to out's dtype (every pair of dtypes), broadcast to out's shape. */
#include "common.h"

#define CAST_ROW(SID, SST, SCT, DID, DST, DCT)                                                                         \
    static void row_cast_##SID##_##DID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) { \
        (void)a;                                                                                                       \
        if (s[0] == sizeof(DST) && s[1] == sizeof(SST)) {                                                              \
            DST *o = (DST *)p[0];                                                                                      \
            const SST *x = (const SST *)p[1];                                                                          \
            for (int64_t i = 0; i < n; ++i) o[i] = MAG_ST_##DID(MAG_LD_##SID(x[i]));                                   \
            return;                                                                                                    \
        }                                                                                                              \
        uint8_t *o = p[0];                                                                                             \
        const uint8_t *x = p[1];                                                                                       \
        for (int64_t i = 0; i < n; ++i, o += s[0], x += s[1]) {                                                        \
            SST v;                                                                                                     \
            memcpy(&v, x, sizeof(v));                                                                                  \
            DST r = MAG_ST_##DID(MAG_LD_##SID(v));                                                                     \
            memcpy(o, &r, sizeof(r));                                                                                  \
        }                                                                                                              \
    }

/* every (source, destination) pair: the X-list picks the source, the lines the destination */
#define CAST_ROWS_FOR(SID, SST, SCT)                                                                                   \
    CAST_ROW(SID, SST, SCT, FLOAT32, float, float)                                                                     \
    CAST_ROW(SID, SST, SCT, FLOAT16, uint16_t, float)                                                                  \
    CAST_ROW(SID, SST, SCT, BFLOAT16, uint16_t, float)                                                                 \
    CAST_ROW(SID, SST, SCT, FLOAT64, double, double)                                                                   \
    CAST_ROW(SID, SST, SCT, BOOLEAN, uint8_t, bool)                                                                    \
    CAST_ROW(SID, SST, SCT, INT8, int8_t, int8_t)                                                                      \
    CAST_ROW(SID, SST, SCT, INT16, int16_t, int16_t)                                                                   \
    CAST_ROW(SID, SST, SCT, INT32, int32_t, int32_t)                                                                   \
    CAST_ROW(SID, SST, SCT, INT64, int64_t, int64_t)                                                                   \
    CAST_ROW(SID, SST, SCT, UINT8, uint8_t, uint8_t)                                                                   \
    CAST_ROW(SID, SST, SCT, UINT16, uint16_t, uint16_t)                                                                \
    CAST_ROW(SID, SST, SCT, UINT32, uint32_t, uint32_t)                                                                \
    CAST_ROW(SID, SST, SCT, UINT64, uint64_t, uint64_t)
MAG_ALL_DTYPES(CAST_ROWS_FOR)

#define CAST_TABLE_ROW(SID, SST, SCT)                                                                                  \
    [MAG_DTYPE_##SID] = {                                                                                              \
        [MAG_DTYPE_FLOAT32] = row_cast_##SID##_FLOAT32, [MAG_DTYPE_FLOAT16] = row_cast_##SID##_FLOAT16,               \
        [MAG_DTYPE_BFLOAT16] = row_cast_##SID##_BFLOAT16, [MAG_DTYPE_FLOAT64] = row_cast_##SID##_FLOAT64,             \
        [MAG_DTYPE_BOOLEAN] = row_cast_##SID##_BOOLEAN, [MAG_DTYPE_INT8] = row_cast_##SID##_INT8,                     \
        [MAG_DTYPE_INT16] = row_cast_##SID##_INT16, [MAG_DTYPE_INT32] = row_cast_##SID##_INT32,                       \
        [MAG_DTYPE_INT64] = row_cast_##SID##_INT64, [MAG_DTYPE_UINT8] = row_cast_##SID##_UINT8,                       \
        [MAG_DTYPE_UINT16] = row_cast_##SID##_UINT16, [MAG_DTYPE_UINT32] = row_cast_##SID##_UINT32,                   \
        [MAG_DTYPE_UINT64] = row_cast_##SID##_UINT64},
static const mag_row_fn cast_rows[MAG_DTYPE__COUNT][MAG_DTYPE__COUNT] = {MAG_ALL_DTYPES(CAST_TABLE_ROW)};

/* Same-dtype copies move bytes: one row function per element size. */
#define MOVE_ROW(T)                                                                                                    \
    static void row_move_##T(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {           \
        (void)a;                                                                                                       \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                                                  \
            memcpy(p[0], p[1], (size_t)n * sizeof(T));                                                                 \
            return;                                                                                                    \
        }                                                                                                              \
        uint8_t *o = p[0];                                                                                             \
        const uint8_t *x = p[1];                                                                                       \
        for (int64_t i = 0; i < n; ++i, o += s[0], x += s[1]) memcpy(o, x, sizeof(T));                                 \
    }
MOVE_ROW(uint8_t)
MOVE_ROW(uint16_t)
MOVE_ROW(uint32_t)
MOVE_ROW(uint64_t)

static void k_copy(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    mag_dtype_t sd = a->in[0]->dtype, dd = a->out->dtype;
    mag_row_fn row = cast_rows[sd][dd];
    if (sd == dd) {
        switch (mag_dtype_info(dd)->size) {
        case 1: row = row_move_uint8_t; break;
        case 2: row = row_move_uint16_t; break;
        case 4: row = row_move_uint32_t; break;
        default: row = row_move_uint64_t; break;
        }
    }
    mag_run_rows(a, ti, nt, 1, row);
}

static void register_copy(mag_kernel_table_t t) {
    for (int d = 0; d < MAG_DTYPE__COUNT; ++d) t[MAG_OP_COPY][d] = k_copy;
}
