/*
 * matmul with torch.matmul's semantics: 1-D . 1-D is a dot product, a 1-D left operand is a
 * row vector and a 1-D right operand a column vector (the added dim is dropped again), and
 * operands of rank > 2 are stacks of matrices whose batch dims broadcast. The kernel gets
 * A (..., M, K), B (..., K, N) and C (..., M, N) views of one rank (see cpu/kernels/matmul.c).
 */
#include "op.h"

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
