/*
 * Front ends of the selection and structure ops: gather, index_select, masked_fill, where,
 * tril/triu, one_hot, multinomial, repeat, cat and stack. Each validates, infers the result and
 * hands the kernel views that make the work elementwise where it can: masked_fill and tril/triu
 * run the `where` kernel (with a rank-0 fill value and, for tril/triu, a boolean band mask);
 * repeat, cat and stack run the copy kernel into views of the result.
 */
#include "op.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ---- */

/* A header over t's storage with the given layout (not marking t as a view: it is private to the op). */
static mag_status_t private_view(const mag_tensor_t *t, int64_t rank, const int64_t *shape, const int64_t *strides,
                                 int64_t offset, mag_tensor_t **out) {
    *out = mag_tensor_new_view(t->storage, t->dtype, rank, shape, strides, offset);
    return *out ? MAG_OK : mag_error(MAG_ERR_MEMORY, "out of memory allocating a tensor header");
}

/* A rank-0 tensor of dtype dt holding v. */
static mag_status_t scalar_tensor(mag_dtype_t dt, mag_scalar_t v, mag_tensor_t **out) {
    MAG_TRY(mag_tensor_empty(dt, 0, NULL, out));
    mag_status_t s = mag_tensor_fill(*out, v);
    if (s != MAG_OK) mag_tensor_release(*out);
    return s;
}

/* t as contiguous int64 (a private copy unless t already is one); check the index dtype first. */
static mag_status_t dense_int64(const char *name, const char *what, mag_tensor_t *t, mag_tensor_t **out) {
    if (!(mag_dtype_info(t->dtype)->flags & (MAG_DTF_SIGNED_INT | MAG_DTF_UNSIGNED_INT)))
        return mag_error(MAG_ERR_TYPE, "%s: %s must be an integer tensor, got %s (shape %s)", name, what,
                         MAG_DTNAME(t->dtype), MAG_SHAPE(t));
    if (t->dtype == MAG_DTYPE_INT64) return mag_tensor_contiguous(t, out);
    return mag_tensor_cast(t, MAG_DTYPE_INT64, out);
}

/* ---- gather, index_select ---- */

/* Every index value in [0, size); like PyTorch, negative indices are out of range here. */
static mag_status_t check_index_values(const char *name, const mag_tensor_t *idx, int64_t dim, int64_t size) {
    const int64_t *v = mag_tensor_data(idx);
    for (int64_t i = 0; i < idx->numel; ++i)
        if (v[i] < 0 || v[i] >= size)
            return mag_error(MAG_ERR_INDEX, "%s: index %lld is out of bounds for dimension %lld with size %lld", name,
                             (long long)v[i], (long long)dim, (long long)size);
    return MAG_OK;
}

/*
 * Both ops become out[p] = x[p + idx[p] * stride(dim)] over the output positions p: the kernel
 * sees x with the output's shape and a zero stride along dim, and an index of the output's shape
 * (index_select's vector broadcast along the other dims).
 */
mag_status_t mag_front_gather(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *x = in[0], *index = in[1];
    int64_t dim = 0;
    MAG_TRY(mag_attr_int(name, attrs, n_attrs, 0, 0, &dim));
    MAG_TRY(mag_norm_dim(name, dim, x->rank, &dim));
    int64_t size = x->rank ? x->shape[dim] : 1;
    int64_t rank = x->rank, shape[MAG_MAX_RANK];
    if (op == MAG_OP_GATHER) {
        if (index->rank != x->rank)
            return mag_error(MAG_ERR_VALUE, "gather: the index (shape %s) must have the rank of the input (shape %s)",
                             MAG_SHAPE(index), MAG_SHAPE(x));
        for (int64_t d = 0; d < rank; ++d)
            if (d != dim && index->shape[d] > x->shape[d])
                return mag_error(MAG_ERR_VALUE,
                                 "gather: the index (shape %s) may be no larger than the input (shape %s) apart from "
                                 "dimension %lld",
                                 MAG_SHAPE(index), MAG_SHAPE(x), (long long)dim);
        memcpy(shape, index->shape, sizeof(shape));
    } else {
        if (index->rank > 1)
            return mag_error(MAG_ERR_INDEX, "index_select: the index must be a vector, got shape %s", MAG_SHAPE(index));
        if (rank == 0 && index->numel != 1)
            return mag_error(MAG_ERR_INDEX, "index_select: the index of a rank-0 input must have one value, got shape %s",
                             MAG_SHAPE(index));
        memcpy(shape, x->shape, sizeof(shape));
        if (rank) shape[dim] = index->numel;
    }
    mag_tensor_t *idx = NULL, *idx_v = NULL, *x_v = NULL;
    MAG_TRY(dense_int64(name, "the index", index, &idx));
    mag_status_t s = check_index_values(name, idx, dim, size);
    int64_t xst[MAG_MAX_RANK], ist[MAG_MAX_RANK] = {0};
    memcpy(xst, x->strides, sizeof(xst));
    if (rank) xst[dim] = 0;
    if (op == MAG_OP_GATHER) mag_contiguous_strides(rank, shape, ist);
    else if (rank) ist[dim] = 1;
    if (s == MAG_OK) s = private_view(x, rank, shape, xst, x->offset, &x_v);
    if (s == MAG_OK) s = private_view(idx, rank, shape, ist, idx->offset, &idx_v);
    mag_dest_t d;
    if (s == MAG_OK) s = mag_dest_open(&d, name, *out, x->dtype, rank, shape, in, 2, false);
    if (s == MAG_OK) {
        mag_tensor_t *args[2] = {x_v, idx_v};
        mag_scalar_t step = mag_scalar_int(rank ? x->strides[dim] * (int64_t)mag_dtype_info(x->dtype)->size : 0);
        s = mag_dest_close(&d, mag_dispatch(op, x->dtype, d.res, args, 2, &step, 1, d.res->numel, false), out);
    }
    mag_tensor_release(x_v);
    mag_tensor_release(idx_v);
    mag_tensor_release(idx);
    return s;
}

/* ---- where, masked_fill, tril/triu: the `where` kernel, out = c ? a : b ---- */

static mag_status_t run_where(mag_op_t op, const char *name, mag_tensor_t *c, mag_tensor_t *a, mag_tensor_t *b,
                              mag_dtype_t dt, int64_t rank, const int64_t *shape, mag_tensor_t *const *caller_in,
                              int64_t n_caller_in, mag_tensor_t **out) {
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, name, *out, dt, rank, shape, caller_in, n_caller_in, true));
    mag_tensor_t *args[3] = {c, a, b};
    return mag_dest_close(&d, mag_dispatch(op, dt, d.res, args, 3, NULL, 0, d.res->numel, false), out);
}

static mag_status_t check_bool(const char *name, const char *what, const mag_tensor_t *t) {
    if (t->dtype != MAG_DTYPE_BOOLEAN)
        return mag_error(MAG_ERR_TYPE, "%s: %s must be a boolean tensor, got %s (shape %s)", name, what,
                         MAG_DTNAME(t->dtype), MAG_SHAPE(t));
    return MAG_OK;
}

mag_status_t mag_front_where(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                             int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in, (void)attrs, (void)n_attrs;
    mag_tensor_t *c = in[0], *a = in[1], *b = in[2];
    MAG_TRY(check_bool("where", "the condition", c));
    int64_t rank_ca, shape_ca[MAG_MAX_RANK], rank, shape[MAG_MAX_RANK];
    if (mag_broadcast_shape(c->rank, c->shape, a->rank, a->shape, &rank_ca, shape_ca) != MAG_OK ||
        mag_broadcast_shape(rank_ca, shape_ca, b->rank, b->shape, &rank, shape) != MAG_OK)
        return mag_error(MAG_ERR_VALUE, "where: shapes %s (condition), %s and %s cannot be broadcast together",
                         MAG_SHAPE(c), MAG_SHAPE(a), MAG_SHAPE(b));
    mag_dtype_t dt = mag_dtype_promote(a->dtype, b->dtype);
    mag_tensor_t *ta = a, *tb = b;
    mag_status_t s = a->dtype == dt ? MAG_OK : mag_tensor_cast(a, dt, &ta);
    if (s == MAG_OK && b->dtype != dt) s = mag_tensor_cast(b, dt, &tb);
    if (s == MAG_OK) s = run_where(op, "where", c, ta, tb, dt, rank, shape, in, 3, out);
    if (ta != a) mag_tensor_release(ta);
    if (tb != b) mag_tensor_release(tb);
    return s;
}

/* Whether v converts to dt without overflow (PyTorch refuses fill values that do not). */
static bool scalar_fits(mag_scalar_t v, mag_dtype_t dt) {
    const mag_dtype_info_t *di = mag_dtype_info(dt);
    if (di->flags & MAG_DTF_BOOL || v.kind == MAG_SCALAR_BOOL) return true;
    if (di->flags & MAG_DTF_FLOAT) {
        double x = v.kind == MAG_SCALAR_FLOAT ? v.f : v.kind == MAG_SCALAR_UINT ? (double)v.u : (double)v.i;
        return !isfinite(x) || fabs(x) <= di->max;
    }
    switch (v.kind) {
    case MAG_SCALAR_UINT: return dt == MAG_DTYPE_UINT64 || (v.u <= INT64_MAX && (double)v.u <= di->max);
    case MAG_SCALAR_INT: return (double)v.i >= di->min && (dt == MAG_DTYPE_INT64 || (double)v.i <= di->max);
    default: /* the max + 1 bound is exact in double even where max itself is not (int64, uint64) */
        return isfinite(v.f) && trunc(v.f) >= di->min && trunc(v.f) < di->max + 1.0;
    }
}

mag_status_t mag_front_masked_fill(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                   int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0], *mask = in[1], *value;
    MAG_TRY(check_bool("masked_fill", "the mask", mask));
    if (n_attrs < 1) return mag_error(MAG_ERR_VALUE, "masked_fill: the fill value is missing");
    if (!scalar_fits(attrs[0], x->dtype))
        return mag_error(MAG_ERR_VALUE, "masked_fill: the value cannot be converted to %s without overflow",
                         MAG_DTNAME(x->dtype));
    int64_t rank, shape[MAG_MAX_RANK];
    if (mag_broadcast_shape(x->rank, x->shape, mask->rank, mask->shape, &rank, shape) != MAG_OK)
        return mag_error(MAG_ERR_VALUE, "masked_fill: a mask of shape %s cannot be broadcast to the input shape %s",
                         MAG_SHAPE(mask), MAG_SHAPE(x));
    MAG_TRY(scalar_tensor(x->dtype, attrs[0], &value));
    mag_status_t s = run_where(op, "masked_fill", mask, value, x, x->dtype, rank, shape, in, 2, out);
    mag_tensor_release(value);
    return s;
}

/* tril keeps column - row <= diagonal, triu column - row >= diagonal: a boolean (M, N) band mask. */
mag_status_t mag_front_tri(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                           int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *x = in[0];
    int64_t diag = 0;
    MAG_TRY(mag_attr_int(name, attrs, n_attrs, 0, 0, &diag));
    if (x->rank < 2)
        return mag_error(MAG_ERR_VALUE, "%s: the input must have at least 2 dims, got shape %s", name, MAG_SHAPE(x));
    int64_t m = x->shape[x->rank - 2], n = x->shape[x->rank - 1];
    mag_tensor_t *band, *zero = NULL;
    MAG_TRY(mag_tensor_empty(MAG_DTYPE_BOOLEAN, 2, x->shape + x->rank - 2, &band));
    uint8_t *b = mag_tensor_data(band);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) b[i * n + j] = op == MAG_OP_TRIL ? j - i <= diag : j - i >= diag;
    mag_status_t s = scalar_tensor(x->dtype, mag_scalar_int(0), &zero);
    if (s == MAG_OK) s = run_where(op, name, band, x, zero, x->dtype, x->rank, x->shape, in, 1, out);
    mag_tensor_release(band);
    mag_tensor_release(zero);
    return s;
}

/* ---- one_hot, multinomial ---- */

mag_status_t mag_front_one_hot(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                               int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0], *v;
    int64_t classes = -1;
    MAG_TRY(mag_attr_int("one_hot", attrs, n_attrs, 0, -1, &classes));
    if (classes < -1) return mag_error(MAG_ERR_VALUE, "one_hot: num_classes must be >= -1, got %lld", (long long)classes);
    if (x->rank >= MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "one_hot: the result of an input of shape %s would exceed rank %d",
                         MAG_SHAPE(x), MAG_MAX_RANK);
    MAG_TRY(dense_int64("one_hot", "the input", x, &v));
    const int64_t *vals = mag_tensor_data(v);
    int64_t lo = 0, hi = -1;
    for (int64_t i = 0; i < v->numel; ++i) {
        if (!i || vals[i] < lo) lo = vals[i];
        if (!i || vals[i] > hi) hi = vals[i];
    }
    mag_status_t s = MAG_OK;
    if (classes == -1) {
        if (v->numel == 0) s = mag_error(MAG_ERR_VALUE, "one_hot: cannot infer num_classes from an empty tensor");
        classes = hi + 1;
    }
    if (s == MAG_OK && v->numel && (lo < 0 || hi >= classes))
        s = mag_error(MAG_ERR_INDEX, "one_hot: class value %lld is out of range [0, %lld)",
                      (long long)(lo < 0 ? lo : hi), (long long)classes);
    int64_t shape[MAG_MAX_RANK];
    memcpy(shape, x->shape, sizeof(shape));
    shape[x->rank] = classes;
    mag_dest_t d;
    if (s == MAG_OK) s = mag_dest_open(&d, "one_hot", *out, MAG_DTYPE_INT64, x->rank + 1, shape, in, 1, false);
    if (s == MAG_OK) s = mag_dest_close(&d, mag_dispatch(op, x->dtype, d.res, &v, 1, NULL, 0, d.res->numel, false), out);
    mag_tensor_release(v);
    return s;
}

/* Rows of probabilities must be finite, >= 0 and have a positive sum (PyTorch's checks). */
static mag_status_t check_probabilities(const mag_tensor_t *p, int64_t rows, int64_t n) {
    const double *v = mag_tensor_data(p);
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
            double x = v[r * n + j];
            if (!(x >= 0 && isfinite(x)))
                return mag_error(MAG_ERR_VALUE, "multinomial: probabilities must be finite and >= 0, got %g (row %lld)",
                                 x, (long long)r);
            sum += x;
        }
        if (!(sum > 0) || isinf(sum))
            return mag_error(MAG_ERR_VALUE, "multinomial: the probabilities of row %lld sum to %g (need a finite sum > 0)",
                             (long long)r, sum);
    }
    return MAG_OK;
}

mag_status_t mag_front_multinomial(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                   int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *p = in[0], *p64;
    int64_t samples = 1, replacement = 0;
    MAG_TRY(mag_attr_int("multinomial", attrs, n_attrs, 0, 1, &samples));
    MAG_TRY(mag_attr_int("multinomial", attrs, n_attrs, 1, 0, &replacement));
    if (!(mag_dtype_info(p->dtype)->flags & MAG_DTF_FLOAT))
        return mag_error(MAG_ERR_TYPE, "multinomial: probabilities must be floating point, got %s (shape %s)",
                         MAG_DTNAME(p->dtype), MAG_SHAPE(p));
    if (p->rank < 1 || p->rank > 2)
        return mag_error(MAG_ERR_VALUE, "multinomial: probabilities must be 1-D or 2-D, got shape %s", MAG_SHAPE(p));
    if (samples <= 0)
        return mag_error(MAG_ERR_VALUE, "multinomial: num_samples must be positive, got %lld", (long long)samples);
    int64_t n = p->shape[p->rank - 1], rows = p->rank == 2 ? p->shape[0] : 1;
    if (!replacement && samples > n)
        return mag_error(MAG_ERR_VALUE,
                         "multinomial: cannot draw %lld samples from %lld categories without replacement (shape %s)",
                         (long long)samples, (long long)n, MAG_SHAPE(p));
    if (n == 0 && rows > 0)
        return mag_error(MAG_ERR_VALUE, "multinomial: no categories to draw from (shape %s)", MAG_SHAPE(p));
    MAG_TRY(mag_tensor_cast(p, MAG_DTYPE_FLOAT64, &p64));
    mag_status_t s = check_probabilities(p64, rows, n);
    int64_t shape[2] = {rows, samples}, draws;
    if (__builtin_mul_overflow(rows, replacement ? samples : n, &draws))
        s = mag_error(MAG_ERR_VALUE, "multinomial: too many samples (%lld rows x %lld)", (long long)rows,
                      (long long)samples);
    mag_dest_t d;
    if (s == MAG_OK) s = mag_dest_open(&d, "multinomial", *out, MAG_DTYPE_INT64, p->rank, shape + 2 - p->rank, in, 1, false);
    if (s == MAG_OK) {
        mag_scalar_t kattrs[2] = {mag_scalar_int(samples), mag_scalar_bool(replacement != 0)};
        /* one random block per draw (with replacement) or per category (without) */
        s = mag_dest_close(&d, mag_dispatch(op, p->dtype, d.res, &p64, 1, kattrs, 2, draws, false), out);
    }
    mag_tensor_release(p64);
    return s;
}

/* ---- repeat, cat, stack: the copy kernel into views of the result ---- */

/*
 * repeat: with x padded to the number of sizes, result dim d (size r_d * s_d) is viewed as the
 * pair (r_d, s_d); the source is x with a zero stride on every r_d. Pairs with r_d == 1 or
 * s_d == 1 need one dim only.
 */
mag_status_t mag_front_repeat(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0];
    if (n_attrs < x->rank)
        return mag_error(MAG_ERR_VALUE, "repeat: %lld sizes given for a tensor of shape %s (need at least its rank)",
                         (long long)n_attrs, MAG_SHAPE(x));
    if (n_attrs > MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "repeat: %lld sizes exceed the maximum rank %d", (long long)n_attrs,
                         MAG_MAX_RANK);
    int64_t rank = n_attrs, shape[MAG_MAX_RANK], src_shape[MAG_MAX_RANK], src_st[MAG_MAX_RANK];
    int64_t pair_shape[2 * MAG_MAX_RANK], pair_src[2 * MAG_MAX_RANK], pair_dst[2 * MAG_MAX_RANK], res_st[MAG_MAX_RANK];
    for (int64_t d = 0; d < rank; ++d) {
        int64_t xd = d - (rank - x->rank), r = 1;
        MAG_TRY(mag_attr_int("repeat", attrs, n_attrs, d, 1, &r));
        if (r < 0) return mag_error(MAG_ERR_VALUE, "repeat: sizes must be >= 0, got %lld", (long long)r);
        src_shape[d] = xd < 0 ? 1 : x->shape[xd];
        src_st[d] = xd < 0 ? 0 : x->strides[xd];
        if (__builtin_mul_overflow(r, src_shape[d], &shape[d]))
            return mag_error(MAG_ERR_VALUE, "repeat: the result of repeating shape %s is too large", MAG_SHAPE(x));
    }
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, "repeat", *out, x->dtype, rank, shape, in, 1, false));
    mag_status_t s = MAG_OK;
    if (d.res->numel > 0) {
        mag_contiguous_strides(rank, shape, res_st);
        int64_t k = 0;
        for (int64_t i = 0; i < rank; ++i) {
            int64_t r = shape[i] / src_shape[i];
            if (r > 1) pair_shape[k] = r, pair_src[k] = 0, pair_dst[k++] = res_st[i] * src_shape[i];
            if (src_shape[i] > 1 || r == 1) pair_shape[k] = src_shape[i], pair_src[k] = src_st[i], pair_dst[k++] = res_st[i];
        }
        mag_tensor_t *src = NULL, *dst = NULL;
        if (k > MAG_MAX_RANK)
            s = mag_error(MAG_ERR_VALUE, "repeat: repeating shape %s this way needs a view of rank %lld > %d",
                          MAG_SHAPE(x), (long long)k, MAG_MAX_RANK);
        if (s == MAG_OK) s = private_view(x, k, pair_shape, pair_src, x->offset, &src);
        if (s == MAG_OK) s = private_view(d.res, k, pair_shape, pair_dst, d.res->offset, &dst);
        if (s == MAG_OK) s = mag_dispatch(op, x->dtype, dst, &src, 1, NULL, 0, dst->numel, false);
        mag_tensor_release(src);
        mag_tensor_release(dst);
    }
    return mag_dest_close(&d, s, out);
}

/* cat and stack: check the inputs and find the result's dtype and shape. Stack adds dim of size n. */
static mag_status_t cat_shape(mag_op_t op, mag_tensor_t *const *in, int64_t n, int64_t dim_attr, int64_t *dim,
                              int64_t *rank, int64_t *shape, mag_dtype_t *dt, int64_t *ref) {
    const char *name = mag_op_info(op)->name;
    if (n < 1) return mag_error(MAG_ERR_VALUE, "%s: expected a non-empty list of tensors", name);
    *dt = in[0]->dtype;
    for (int64_t i = 1; i < n; ++i) *dt = mag_dtype_promote(*dt, in[i]->dtype);
    /* like PyTorch, cat skips 1-D empty tensors (the legacy "no data" placeholder) */
    *ref = 0;
    if (op == MAG_OP_CAT)
        while (*ref < n - 1 && in[*ref]->rank == 1 && in[*ref]->numel == 0) ++*ref;
    const mag_tensor_t *r = in[*ref];
    if (op == MAG_OP_STACK && r->rank >= MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "stack: inputs of shape %s would give a result above rank %d", MAG_SHAPE(r),
                         MAG_MAX_RANK);
    *rank = r->rank + (op == MAG_OP_STACK);
    MAG_TRY(mag_norm_dim(name, dim_attr, *rank, dim));
    for (int64_t i = 0; i < n; ++i) {
        const mag_tensor_t *t = in[i];
        if (op == MAG_OP_CAT && t->rank == 0)
            return mag_error(MAG_ERR_VALUE, "cat: the rank-0 tensor at position %lld cannot be concatenated", (long long)i);
        if (op == MAG_OP_CAT && t->rank == 1 && t->numel == 0 && i != *ref) continue;
        bool same = t->rank == r->rank;
        for (int64_t d = 0; same && d < t->rank; ++d) same = t->shape[d] == r->shape[d] || (op == MAG_OP_CAT && d == *dim);
        if (!same && op == MAG_OP_STACK)
            return mag_error(MAG_ERR_VALUE, "stack: every tensor must have the same shape, got %s (tensor %lld) and %s",
                             MAG_SHAPE(t), (long long)i, MAG_SHAPE(r));
        if (!same)
            return mag_error(MAG_ERR_VALUE, "cat: tensor %lld has shape %s, expected %s except in dimension %lld",
                             (long long)i, MAG_SHAPE(t), MAG_SHAPE(r), (long long)*dim);
    }
    int64_t total = 0;
    for (int64_t i = 0; op == MAG_OP_CAT && i < n; ++i)
        if (in[i]->rank == r->rank) total += in[i]->shape[*dim];
    for (int64_t d = 0, j = 0; d < *rank; ++d)
        shape[d] = op == MAG_OP_STACK && d == *dim ? n : r->shape[j++];
    if (op == MAG_OP_CAT) shape[*dim] = total;
    return MAG_OK;
}

mag_status_t mag_front_cat(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                           int64_t n_attrs, mag_tensor_t **out) {
    const char *name = mag_op_info(op)->name;
    int64_t dim_attr = 0, dim = 0, rank = 0, shape[MAG_MAX_RANK], ref = 0, res_st[MAG_MAX_RANK], src_st[MAG_MAX_RANK];
    mag_dtype_t dt = MAG_DTYPE_FLOAT32;
    MAG_TRY(mag_attr_int(name, attrs, n_attrs, 0, 0, &dim_attr));
    MAG_TRY(cat_shape(op, in, n_in, dim_attr, &dim, &rank, shape, &dt, &ref));
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, name, *out, dt, rank, shape, in, n_in, false));
    mag_contiguous_strides(rank, shape, res_st);
    mag_status_t s = MAG_OK;
    int64_t at = 0, piece[MAG_MAX_RANK];
    memcpy(piece, shape, sizeof(piece));
    for (int64_t i = 0; i < n_in && s == MAG_OK; ++i) {
        mag_tensor_t *t = in[i], *src = NULL, *dst = NULL;
        if (t->rank + (op == MAG_OP_STACK) != rank) continue; /* a skipped empty 1-D tensor */
        piece[dim] = op == MAG_OP_STACK ? 1 : t->shape[dim];
        for (int64_t k = 0, j = 0; k < rank; ++k) src_st[k] = op == MAG_OP_STACK && k == dim ? 0 : t->strides[j++];
        s = private_view(t, rank, piece, src_st, t->offset, &src);
        if (s == MAG_OK) s = private_view(d.res, rank, piece, res_st, d.res->offset + at * res_st[dim], &dst);
        if (s == MAG_OK && dst->numel) s = mag_dispatch(op, dt, dst, &src, 1, NULL, 0, dst->numel, false);
        at += piece[dim];
        mag_tensor_release(src);
        mag_tensor_release(dst);
    }
    return mag_dest_close(&d, s, out);
}
