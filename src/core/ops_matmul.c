/*
 * matmul with torch.matmul's semantics: 1-D . 1-D is a dot product, a 1-D left operand is a
 * row vector and a 1-D right operand a column vector (the added dim is dropped again), and
 * operands of rank > 2 are stacks of matrices whose batch dims broadcast. The kernel gets
 * A (..., M, K), B (..., K, N) and C (..., M, N) views of one rank (see cpu/kernels/matmul.c).
 */
#include "autograd.h"
#include "op.h"

#include <stdlib.h>
#include <string.h>

/* Operand views for the kernel: the batch dims of shape `batch`, then the two matrix dims. */
typedef struct mm_layout {
    int64_t rank;
    int64_t shape[3][MAG_MAX_RANK];   /* A, B, C */
    int64_t strides[3][MAG_MAX_RANK]; /* A, B, C */
} mm_layout_t;

/*
 * When B is one matrix shared by the whole batch and A's batch dims and M nest like one dim (a
 * contiguous activation times a weight), the batch folds into M: one large GEMM, no batch loop.
 */
static void fold_batch(mm_layout_t *l) {
    int64_t r = l->rank, nb = r - 2;
    if (nb == 0) return;
    for (int64_t d = 0; d < nb; ++d)
        if (l->shape[1][d] > 1 && l->strides[1][d] != 0) return;
    int64_t rows = l->shape[0][r - 2], step = l->strides[0][r - 2];
    for (int64_t d = nb - 1; d >= 0; --d) { /* A's dim d must step over all rows below it */
        if (l->shape[0][d] == 1) continue;
        if (rows > 1 && l->strides[0][d] != step * rows) return;
        if (rows == 1) step = l->strides[0][d];
        rows *= l->shape[0][d];
    }
    int64_t a_k = l->strides[0][r - 1], b_k = l->strides[1][r - 2], b_n = l->strides[1][r - 1], k = l->shape[1][r - 2];
    int64_t n = l->shape[2][r - 1];
    int64_t shapes[3][2] = {{rows, k}, {k, n}, {rows, n}}, strides[3][2] = {{step, a_k}, {b_k, b_n}, {n, 1}};
    for (int i = 0; i < 3; ++i) {
        memcpy(l->shape[i], shapes[i], sizeof(shapes[i]));
        memcpy(l->strides[i], strides[i], sizeof(strides[i]));
    }
    l->rank = 2;
}

mag_status_t mag_front_matmul(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in, (void)attrs, (void)n_attrs;
    mag_tensor_t *a = in[0], *b = in[1];
    if (a->rank == 0 || b->rank == 0)
        return mag_error(MAG_ERR_VALUE, "matmul: both operands need at least 1 dim, got shapes %s and %s", MAG_SHAPE(a),
                         MAG_SHAPE(b));
    mag_dtype_t dt = mag_dtype_promote(a->dtype, b->dtype);
    if (!(mag_op_info(op)->dtypes & (1u << dt)))
        return mag_error(MAG_ERR_TYPE, "matmul: unsupported dtypes %s and %s (shapes %s and %s)", MAG_DTNAME(a->dtype),
                         MAG_DTNAME(b->dtype), MAG_SHAPE(a), MAG_SHAPE(b));
    int64_t m = a->rank > 1 ? a->shape[a->rank - 2] : 1, k = a->shape[a->rank - 1];
    int64_t kb = b->shape[b->rank > 1 ? b->rank - 2 : 0], n = b->rank > 1 ? b->shape[b->rank - 1] : 1;
    if (k != kb)
        return mag_error(MAG_ERR_VALUE, "matmul: shapes %s and %s cannot be multiplied (%lld columns vs %lld rows)",
                         MAG_SHAPE(a), MAG_SHAPE(b), (long long)k, (long long)kb);
    int64_t na = a->rank > 2 ? a->rank - 2 : 0, nbb = b->rank > 2 ? b->rank - 2 : 0, nb, batch[MAG_MAX_RANK];
    if (mag_broadcast_shape(na, a->shape, nbb, b->shape, &nb, batch) != MAG_OK)
        return mag_error(MAG_ERR_VALUE, "matmul: the batch dims of shapes %s and %s cannot be broadcast together",
                         MAG_SHAPE(a), MAG_SHAPE(b));
    int64_t rank = 0, shape[MAG_MAX_RANK];
    memcpy(shape, batch, (size_t)nb * sizeof(int64_t));
    rank = nb;
    if (a->rank > 1) shape[rank++] = m;
    if (b->rank > 1) shape[rank++] = n;
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, "matmul", *out, dt, rank, shape, in, 2, false));
    mag_tensor_t *res = d.res;
    mag_tensor_t *ta = a, *tb = b, *views[3] = {NULL, NULL, NULL};
    mag_status_t s = a->dtype == dt ? MAG_OK : mag_tensor_cast(a, dt, &ta);
    if (s == MAG_OK && b->dtype != dt) s = mag_tensor_cast(b, dt, &tb);
    int64_t work = 0;
    if (s == MAG_OK && res->numel > 0 && k == 0) s = mag_tensor_fill(res, mag_scalar_int(0));
    if (s == MAG_OK && res->numel > 0 && k > 0) {
        mm_layout_t l = {.rank = nb + 2};
        mag_tensor_t *src[3] = {ta, tb, res};
        int64_t rows[3] = {m, k, m}, cols[3] = {k, n, n};
        for (int i = 0; i < 3; ++i) {
            l.shape[i][nb] = rows[i];
            l.shape[i][nb + 1] = cols[i];
            for (int64_t d = 0; d < nb; ++d) l.shape[i][d] = batch[d];
        }
        for (int i = 0; i < 2; ++i) { /* right-aligned batch dims; missing or size-1 ones broadcast */
            const mag_tensor_t *t = src[i];
            int64_t t_nb = t->rank > 2 ? t->rank - 2 : 0;
            for (int64_t d = 0; d < nb; ++d) {
                int64_t td = d - (nb - t_nb);
                l.strides[i][d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
            }
        }
        /* matrix strides; a 1-D operand is a row (A) or a column (B) vector */
        l.strides[0][nb] = ta->rank > 1 ? ta->strides[ta->rank - 2] : 0;
        l.strides[0][nb + 1] = ta->strides[ta->rank - 1];
        l.strides[1][nb] = tb->strides[tb->rank > 1 ? tb->rank - 2 : 0];
        l.strides[1][nb + 1] = tb->rank > 1 ? tb->strides[tb->rank - 1] : 0;
        mag_contiguous_strides(nb + 2, l.shape[2], l.strides[2]);
        fold_batch(&l);
        for (int i = 0; i < 3 && s == MAG_OK; ++i) {
            views[i] = mag_tensor_new_view(src[i]->storage, dt, l.rank, l.shape[i], l.strides[i], src[i]->offset);
            if (!views[i]) s = mag_error(MAG_ERR_MEMORY, "matmul: out of memory allocating a tensor header");
        }
        if (__builtin_mul_overflow(res->numel, k, &work)) work = INT64_MAX;
    }
    if (s == MAG_OK && work > 0) s = mag_dispatch(op, dt, views[2], views, 2, NULL, 0, work, false);
    for (int i = 0; i < 3; ++i) mag_tensor_release(views[i]);
    if (ta != a) mag_tensor_release(ta);
    if (tb != b) mag_tensor_release(tb);
    return mag_dest_close(&d, s, out);
}

/* Whether t's dims before the last step like one dim of rows; *rs is then the row stride. */
static bool rows_fold(const mag_tensor_t *t, int64_t *rs) {
    int64_t rows = 1, step = t->rank > 0 ? t->shape[t->rank - 1] : 1;
    for (int64_t d = t->rank - 2; d >= 0; --d) {
        if (t->shape[d] == 1) continue;
        if (rows > 1 && t->strides[d] != step * rows) return false;
        if (rows == 1) step = t->strides[d];
        rows *= t->shape[d];
    }
    *rs = step;
    return true;
}

/*
 * x (..., K) times n nn.Linear weights W_i (N_i, K), the products side by side in one result
 * (..., N_1 + ... + N_n): a transformer layer's q/k/v or gate/up projections as one launch, whose
 * threads go from one weight to the next without waiting for each other, and without joining the
 * weights (which would copy them). The kernel gets x as (M, K) rows and the result as (M, N).
 */
mag_status_t mag_front_linear_concat(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                     int64_t n_attrs, mag_tensor_t **out) {
    (void)attrs, (void)n_attrs;
    static const char *OP = "linear_concat";
    mag_tensor_t *x = in[0];
    if (n_in < 2)
        return mag_error(MAG_ERR_VALUE, "%s: expected x and at least one weight, got %lld inputs", OP, (long long)n_in);
    if (x->rank == 0) return mag_error(MAG_ERR_VALUE, "%s: x needs at least 1 dim, got shape %s", OP, MAG_SHAPE(x));
    mag_dtype_t dt = x->dtype;
    if (!(mag_op_info(op)->dtypes & (1u << dt)))
        return mag_error(MAG_ERR_TYPE, "%s: unsupported dtype %s of x (shape %s; float32, float16 or bfloat16)", OP,
                         MAG_DTNAME(dt), MAG_SHAPE(x));
    int64_t k = x->shape[x->rank - 1], n = 0;
    for (int64_t i = 1; i < n_in; ++i) {
        const mag_tensor_t *w = in[i];
        if (w->dtype != dt)
            return mag_error(MAG_ERR_TYPE, "%s: weight %lld is %s but x is %s (shapes %s and %s)", OP, (long long)i - 1,
                             MAG_DTNAME(w->dtype), MAG_DTNAME(dt), MAG_SHAPE(w), MAG_SHAPE(x));
        if (w->rank != 2 || w->shape[1] != k)
            return mag_error(MAG_ERR_VALUE, "%s: weight %lld has shape %s, expected (N, %lld) for x of shape %s", OP,
                             (long long)i - 1, MAG_SHAPE(w), (long long)k, MAG_SHAPE(x));
        if (__builtin_add_overflow(n, w->shape[0], &n))
            return mag_error(MAG_ERR_VALUE, "%s: the weights' rows overflow int64", OP);
    }
    if (mag_needs_grad(in, n_in))
        return mag_error(MAG_ERR_RUNTIME,
                         "%s: the fused kernel is forward-only and an input requires grad (x %s); "
                         "nn.functional.linear_concat differentiates through linear and cat",
                         OP, MAG_SHAPE(x));
    int64_t shape[MAG_MAX_RANK], m = 1;
    for (int64_t d = 0; d + 1 < x->rank; ++d) m *= shape[d] = x->shape[d];
    shape[x->rank - 1] = n;
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, OP, *out, dt, x->rank, shape, in, n_in, false));
    mag_tensor_t *rows = x, *views[2] = {NULL, NULL};
    int64_t rs = 0;
    mag_status_t s = rows_fold(x, &rs) ? MAG_OK : mag_tensor_contiguous(x, &rows);
    if (s == MAG_OK && rows != x) rows_fold(rows, &rs);
    if (s == MAG_OK && d.res->numel > 0 && k == 0) s = mag_tensor_fill(d.res, mag_scalar_int(0));
    if (s == MAG_OK && d.res->numel > 0 && k > 0) {
        int64_t xs[2] = {m, k}, xst[2] = {rs, rows->strides[rows->rank - 1]}, ys[2] = {m, n}, yst[2] = {n, 1}, work;
        views[0] = mag_tensor_new_view(rows->storage, dt, 2, xs, xst, rows->offset);
        views[1] = mag_tensor_new_view(d.res->storage, dt, 2, ys, yst, d.res->offset);
        if (!views[0] || !views[1]) s = mag_error(MAG_ERR_MEMORY, "%s: out of memory allocating a tensor header", OP);
        mag_tensor_t **kin = s == MAG_OK ? malloc((size_t)n_in * sizeof(*kin)) : NULL; /* x as rows, the weights */
        if (s == MAG_OK && !kin) s = mag_error(MAG_ERR_MEMORY, "%s: out of memory", OP);
        if (s == MAG_OK) {
            kin[0] = views[0];
            memcpy(kin + 1, in + 1, (size_t)(n_in - 1) * sizeof(*kin));
            if (__builtin_mul_overflow(m * n, k, &work)) work = INT64_MAX;
            s = mag_dispatch(op, dt, views[1], kin, n_in, NULL, 0, work, false);
        }
        free(kin);
    }
    for (int i = 0; i < 2; ++i) mag_tensor_release(views[i]);
    if (rows != x) mag_tensor_release(rows);
    return mag_dest_close(&d, s, out);
}
