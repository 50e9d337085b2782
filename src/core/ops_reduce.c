/*
 * Front ends of the reductions (sum ... logsumexp), softmax/log_softmax, topk and cumsum:
 * validation with messages that name the op, shape, dims and dtype; the result shape and dtype;
 * and the passes the kernels run (the plan is described in reduce.h).
 *
 * mean divides a sum; var/std first compute the mean as the center, then sum squared deviations
 * from it (two passes, more accurate than one-pass formulas); logsumexp first finds the max.
 */
#include "op.h"
#include "reduce.h"

#include <math.h>
#include <string.h>

/* One output is split into chunks while there are fewer than RED_UNITS units of >= RED_CHUNK elements. */
#define RED_UNITS 64
#define RED_CHUNK 16384

static bool is_float(mag_dtype_t dt) { return (mag_dtype_info(dt)->flags & MAG_DTF_FLOAT) != 0; }

/* Sums accumulate in float32 (32- and 16-bit floats), float64, or int64 (integers and booleans). */
static mag_dtype_t acc_dtype(mag_dtype_t dt) {
    if (dt == MAG_DTYPE_FLOAT64) return MAG_DTYPE_FLOAT64;
    return is_float(dt) ? MAG_DTYPE_FLOAT32 : MAG_DTYPE_INT64;
}

static double attr_float(mag_scalar_t a) {
    switch (a.kind) {
    case MAG_SCALAR_FLOAT: return a.f;
    case MAG_SCALAR_UINT: return (double)a.u;
    default: return (double)a.i;
    }
}

/* ---- reductions ---- */

typedef struct red_shape {
    uint64_t mask;         /* reduced dims of x (bit 0 for a reduced rank-0 tensor) */
    int64_t n_out, n_red;  /* outputs, and elements reduced into each */
    int64_t rank, shape[MAG_MAX_RANK]; /* the result */
} red_shape_t;

/* "(0, 2)" for the dims in mask */
static char *dims_str(char *buf, uint64_t mask) {
    char *p = buf;
    p += sprintf(p, "(");
    for (int d = 0; d < MAG_MAX_RANK; ++d)
        if (mask >> d & 1) p += sprintf(p, p == buf + 1 ? "%d" : ", %d", d);
    sprintf(p, mask && !(mask & (mask - 1)) ? ",)" : ")");
    return buf;
}

static mag_status_t red_shape(const char *op, const mag_tensor_t *x, const mag_scalar_t *attrs, int64_t n_attrs,
                              red_shape_t *rs) {
    int64_t m = -1;
    MAG_TRY(mag_attr_int(op, attrs, n_attrs, 0, -1, &m));
    bool keepdim = n_attrs > 1 && attrs[1].i != 0;
    uint64_t all = x->rank ? (UINT64_C(1) << x->rank) - 1 : 1;
    if (m >= 0 && ((uint64_t)m & ~all))
        return mag_error(MAG_ERR_INDEX, "%s: dims mask 0x%llx names dims out of range for a tensor of shape %s", op,
                         (unsigned long long)m, MAG_SHAPE(x));
    rs->mask = m < 0 ? all : (uint64_t)m;
    rs->n_out = rs->n_red = 1;
    rs->rank = 0;
    for (int64_t d = 0; d < x->rank; ++d) {
        bool red = rs->mask >> d & 1;
        if (red) rs->n_red *= x->shape[d];
        else rs->n_out *= x->shape[d];
        if (!red || keepdim) rs->shape[rs->rank++] = red ? 1 : x->shape[d];
    }
    return MAG_OK;
}

static mag_status_t check_reduce_dtype(mag_op_t op, const mag_tensor_t *x) {
    const char *name = mag_op_info(op)->name;
    switch (op) {
    case MAG_OP_MEAN:
    case MAG_OP_VAR:
    case MAG_OP_STD:
        if (!is_float(x->dtype))
            return mag_error(MAG_ERR_TYPE, "%s: expected a floating-point input, got %s (shape %s); cast it first%s",
                             name, MAG_DTNAME(x->dtype), MAG_SHAPE(x), op == MAG_OP_MEAN ? " or pass dtype=" : "");
        return MAG_OK;
    case MAG_OP_ARGMIN:
    case MAG_OP_ARGMAX:
        if (x->dtype == MAG_DTYPE_BOOLEAN)
            return mag_error(MAG_ERR_TYPE, "%s: boolean input (shape %s) is not supported; cast it to an integer type",
                             name, MAG_SHAPE(x));
        return MAG_OK;
    default: return MAG_OK;
    }
}

static mag_dtype_t reduce_result_dtype(mag_op_t op, mag_dtype_t dt) {
    switch (op) {
    case MAG_OP_SUM:
    case MAG_OP_PROD: return is_float(dt) ? dt : MAG_DTYPE_INT64;
    case MAG_OP_ARGMIN:
    case MAG_OP_ARGMAX: return MAG_DTYPE_INT64;
    case MAG_OP_ALL:
    case MAG_OP_ANY: return MAG_DTYPE_BOOLEAN;
    case MAG_OP_LOGSUMEXP: return is_float(dt) ? dt : MAG_DTYPE_FLOAT32;
    default: return dt;
    }
}

static int64_t red_chunks(int64_t n_out, int64_t n_red) {
    if (n_out == 0 || n_out >= RED_UNITS || n_red < 2 * RED_CHUNK) return 1;
    int64_t c = RED_UNITS / n_out, most = n_red / RED_CHUNK;
    return c < most ? c : most;
}

/* One kernel pass (see reduce.h). */
static mag_status_t red_pass(mag_op_t op, mag_tensor_t *out, mag_tensor_t *x, mag_tensor_t *extra, uint64_t mask,
                             int64_t chunks, mag_red_post_t post, double arg) {
    mag_scalar_t at[MAG_RED_N_ATTRS] = {
        [MAG_RED_MASK] = mag_scalar_int((int64_t)mask),
        [MAG_RED_CHUNKS] = mag_scalar_int(chunks),
        [MAG_RED_POST] = mag_scalar_int(post),
        [MAG_RED_ARG] = mag_scalar_float(arg),
    };
    mag_tensor_t *in[2] = {x, extra};
    /* outputs count as work too: an empty x still yields sums of 0, products of 1, ... */
    return mag_dispatch(op, x->dtype, out, in, extra ? 2 : 1, at, MAG_RED_N_ATTRS, x->numel + out->numel, false);
}

/* The op that combines the partial states of chunks (sums for everything built on sums). */
static mag_op_t combine_op(mag_op_t op) {
    switch (op) {
    case MAG_OP_MEAN:
    case MAG_OP_VAR:
    case MAG_OP_STD:
    case MAG_OP_LOGSUMEXP: return MAG_OP_SUM;
    default: return op;
    }
}

static mag_dtype_t partial_dtype(mag_op_t op, mag_dtype_t dt) {
    switch (op) {
    case MAG_OP_MIN:
    case MAG_OP_MAX: return dt;
    case MAG_OP_ALL:
    case MAG_OP_ANY: return MAG_DTYPE_BOOLEAN;
    case MAG_OP_ARGMIN:
    case MAG_OP_ARGMAX: return MAG_DTYPE_INT64;
    default: return acc_dtype(dt);
    }
}

/* argmin/argmax over chunks: the first chunk holding the extreme has the first index of it. */
static mag_status_t combine_arg(mag_op_t op, mag_tensor_t *idx, mag_tensor_t *vals, mag_tensor_t *res) {
    MAG_TRY(red_pass(op, res, vals, NULL, 1, 1, MAG_RED_POST_NONE, 0));
    int64_t *r = mag_tensor_data(res), n_out = res->numel;
    const int64_t *p = mag_tensor_data(idx);
    for (int64_t o = 0; o < n_out; ++o) r[o] = p[r[o] * n_out + o];
    return MAG_OK;
}

/* Reduce x into the contiguous res, through chunk partials when there are few outputs. */
static mag_status_t red_run(mag_op_t op, mag_tensor_t *x, mag_tensor_t *center, const red_shape_t *rs,
                            mag_red_post_t post, double arg, mag_tensor_t *res) {
    int64_t chunks = red_chunks(rs->n_out, rs->n_red);
    if (chunks == 1) return red_pass(op, res, x, center, rs->mask, 1, post, arg);
    bool arg_op = op == MAG_OP_ARGMIN || op == MAG_OP_ARGMAX;
    int64_t pshape[2] = {chunks, rs->n_out};
    mag_tensor_t *part = NULL, *vals = NULL;
    MAG_TRY(mag_tensor_empty(partial_dtype(op, x->dtype), 2, pshape, &part));
    mag_status_t s = arg_op ? mag_tensor_empty(x->dtype, 2, pshape, &vals) : MAG_OK;
    if (s == MAG_OK) s = red_pass(op, part, x, arg_op ? vals : center, rs->mask, chunks, MAG_RED_POST_NONE, 0);
    if (s == MAG_OK)
        s = arg_op ? combine_arg(op, part, vals, res) : red_pass(combine_op(op), res, part, center, 1, 1, post, arg);
    mag_tensor_release(part);
    mag_tensor_release(vals);
    return s;
}

/* var/std: the mean as the center, then the sum of squared deviations over max(0, n - correction). */
static mag_status_t run_var(mag_op_t op, mag_tensor_t *x, const red_shape_t *rs, double correction,
                            mag_tensor_t *res) {
    mag_tensor_t *mean;
    MAG_TRY(mag_tensor_empty(acc_dtype(x->dtype), 1, &rs->n_out, &mean));
    mag_status_t s = red_run(MAG_OP_MEAN, x, NULL, rs, MAG_RED_POST_DIV, (double)rs->n_red, mean);
    double dof = fmax(0.0, (double)rs->n_red - correction);
    if (s == MAG_OK)
        s = red_run(op, x, mean, rs, op == MAG_OP_STD ? MAG_RED_POST_DIV_SQRT : MAG_RED_POST_DIV, dof, res);
    mag_tensor_release(mean);
    return s;
}

/* The logsumexp center: the max, with infinities replaced by 0 so that exp(x - c) stays defined (as torch). */
static mag_status_t lse_center(mag_tensor_t *x, const red_shape_t *rs, mag_tensor_t **center) {
    mag_dtype_t acc = acc_dtype(x->dtype);
    mag_tensor_t *m = NULL, *c = NULL;
    MAG_TRY(mag_tensor_empty(x->dtype, 1, &rs->n_out, &m));
    mag_status_t s = rs->n_red ? red_run(MAG_OP_MAX, x, NULL, rs, MAG_RED_POST_NONE, 0, m)
                               : mag_tensor_fill(m, mag_scalar_float(0)); /* empty: log(0) + 0 = -inf */
    if (s == MAG_OK && m->dtype != acc) s = mag_tensor_cast(m, acc, &c);
    else if (s == MAG_OK) {
        c = m;
        m = NULL;
    }
    mag_tensor_release(m);
    if (s != MAG_OK) return s;
    if (acc == MAG_DTYPE_FLOAT32) {
        float *v = mag_tensor_data(c);
        for (int64_t i = 0; i < c->numel; ++i) v[i] = isinf(v[i]) ? 0.0f : v[i];
    } else {
        double *v = mag_tensor_data(c);
        for (int64_t i = 0; i < c->numel; ++i) v[i] = isinf(v[i]) ? 0.0 : v[i];
    }
    *center = c;
    return MAG_OK;
}

static mag_status_t run_logsumexp(mag_tensor_t *x, const red_shape_t *rs, mag_tensor_t *res) {
    mag_tensor_t *xf = NULL, *center = NULL;
    if (!is_float(x->dtype)) MAG_TRY(mag_tensor_cast(x, MAG_DTYPE_FLOAT32, &xf));
    mag_tensor_t *src = xf ? xf : x;
    mag_status_t s = lse_center(src, rs, &center);
    if (s == MAG_OK) s = red_run(MAG_OP_LOGSUMEXP, src, center, rs, MAG_RED_POST_LOG_ADD, 0, res);
    mag_tensor_release(center);
    mag_tensor_release(xf);
    return s;
}

mag_status_t mag_front_reduce(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *x = in[0];
    red_shape_t rs;
    MAG_TRY(check_reduce_dtype(op, x));
    MAG_TRY(red_shape(name, x, attrs, n_attrs, &rs));
    double correction = (op == MAG_OP_VAR || op == MAG_OP_STD) && n_attrs > 2 ? attr_float(attrs[2]) : 1.0;
    if (!isfinite(correction))
        return mag_error(MAG_ERR_VALUE, "%s: correction must be finite, got %g", name, correction);
    bool has_identity = op != MAG_OP_MIN && op != MAG_OP_MAX && op != MAG_OP_ARGMIN && op != MAG_OP_ARGMAX;
    if (!has_identity && rs.n_red == 0) /* even when there are no outputs, as torch */
        return mag_error(MAG_ERR_INDEX, "%s: cannot reduce over dims %s of the empty tensor of shape %s (%s has no "
                         "identity); reduce over non-empty dims",
                         name, dims_str((char[MAG_MAX_RANK * 4 + 4]){0}, rs.mask), MAG_SHAPE(x), name);
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, name, *out, reduce_result_dtype(op, x->dtype), rs.rank, rs.shape, in, 1, false));
    mag_status_t s;
    switch (op) {
    case MAG_OP_MEAN: s = red_run(op, x, NULL, &rs, MAG_RED_POST_DIV, (double)rs.n_red, d.res); break;
    case MAG_OP_VAR:
    case MAG_OP_STD: s = run_var(op, x, &rs, correction, d.res); break;
    case MAG_OP_LOGSUMEXP: s = run_logsumexp(x, &rs, d.res); break;
    default: s = red_run(op, x, NULL, &rs, MAG_RED_POST_NONE, 0, d.res); break;
    }
    return mag_dest_close(&d, s, out);
}

/* ---- ops along one dim ---- */

static mag_status_t dim_attr(const char *op, const mag_tensor_t *x, const mag_scalar_t *attrs, int64_t n_attrs,
                             int64_t i, int64_t *dim) {
    int64_t d;
    MAG_TRY(mag_attr_int(op, attrs, n_attrs, i, -1, &d));
    return mag_norm_dim(op, d, x->rank, dim);
}

/* The single-dim kernels take the normalised dim; a rank-0 tensor is one lane of length 1. */
static mag_status_t run_along(mag_op_t op, mag_tensor_t *x, mag_dtype_t rdt, int64_t dim, mag_tensor_t **out) {
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, mag_op_info(op)->name, *out, rdt, x->rank, x->shape, &x, 1, false));
    mag_scalar_t a = mag_scalar_int(dim);
    mag_status_t s = mag_dispatch(op, x->dtype, d.res, &x, 1, &a, 1, x->numel, false);
    return mag_dest_close(&d, s, out);
}

mag_status_t mag_front_softmax(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                               int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *x = in[0];
    if (!is_float(x->dtype))
        return mag_error(MAG_ERR_TYPE, "%s: expected a floating-point input, got %s (shape %s); cast it first", name,
                         MAG_DTNAME(x->dtype), MAG_SHAPE(x));
    int64_t dim;
    MAG_TRY(dim_attr(name, x, attrs, n_attrs, 0, &dim));
    return run_along(op, x, x->dtype, dim, out);
}

mag_status_t mag_front_cumsum(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0];
    int64_t dim;
    MAG_TRY(dim_attr("cumsum", x, attrs, n_attrs, 0, &dim));
    return run_along(op, x, is_float(x->dtype) ? x->dtype : MAG_DTYPE_INT64, dim, out);
}

mag_status_t mag_front_topk(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                            int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0], *idx = in[1];
    if (x->dtype == MAG_DTYPE_BOOLEAN)
        return mag_error(MAG_ERR_TYPE, "topk: boolean input (shape %s) is not supported; cast it to an integer type",
                         MAG_SHAPE(x));
    if (n_attrs < 1) return mag_error(MAG_ERR_VALUE, "topk: k is required");
    int64_t k = 0, dim;
    MAG_TRY(mag_attr_int("topk", attrs, n_attrs, 0, 0, &k));
    MAG_TRY(dim_attr("topk", x, attrs, n_attrs, 1, &dim));
    int64_t size = x->rank ? x->shape[dim] : 1;
    if (k < 0 || k > size)
        return mag_error(MAG_ERR_VALUE, "topk: k = %lld is out of range for dimension %lld of size %lld (shape %s)",
                         (long long)k, (long long)dim, (long long)size, MAG_SHAPE(x));
    int64_t shape[MAG_MAX_RANK];
    memcpy(shape, x->shape, sizeof(shape));
    if (x->rank) shape[dim] = k; /* rank 0 gives its element, whatever k (as torch) */
    if (idx->dtype != MAG_DTYPE_INT64 || idx->rank != x->rank ||
        memcmp(idx->shape, shape, (size_t)x->rank * sizeof(int64_t)))
        return mag_error(MAG_ERR_VALUE, "topk: the index destination must be int64 of shape %s, got %s of shape %s",
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, x->rank, shape), MAG_DTNAME(idx->dtype),
                         MAG_SHAPE(idx));
    MAG_TRY(mag_check_writable("topk", idx));
    if (mag_tensors_overlap(idx, x))
        return mag_error(MAG_ERR_VALUE, "topk: the index destination overlaps the input");
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, "topk", *out, x->dtype, x->rank, shape, in, 1, false));
    mag_scalar_t a[4] = {mag_scalar_int(k), mag_scalar_int(dim), mag_scalar_bool(n_attrs < 3 || attrs[2].i != 0),
                         mag_scalar_bool(n_attrs < 4 || attrs[3].i != 0)};
    mag_tensor_t *args[2] = {x, idx};
    mag_status_t s = mag_dispatch(op, x->dtype, d.res, args, 2, a, 4, x->numel, false);
    if (s == MAG_OK) mag_tensor_bump_version(idx);
    return mag_dest_close(&d, s, out);
}
