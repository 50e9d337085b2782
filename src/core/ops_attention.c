/*
 * Fused scaled dot-product attention: out = softmax(q @ k^T * scale + causal mask) @ v, forward only.
 *
 * q (..., Hq, Lq, E), k (..., Hkv, Lk, E), v (..., Hkv, Lk, Ev) share one dtype (float32, float16 or
 * bfloat16); out (..., Hq, Lq, Ev) has it too. Rank-2 inputs are one head. The batch dims broadcast;
 * query head h reads key/value head h / (Hq / Hkv) (grouped-query attention), in place: k and v may
 * be any strided views, e.g. a preallocated KV cache sliced to its current length.
 *
 * Attributes [scale, causal, causal_offset]: with causal, query i sees keys j <= i + causal_offset.
 * 0 is torch's is_causal (top-left aligned); Lk - Lq puts query i at absolute position Lk - Lq + i
 * (a KV-cache decode step or a prompt continued from a cache). A row that sees no key (or Lk = 0)
 * gives zeros, as torch 2.13 does for fully masked rows. An optional fourth input, a one-element
 * integer tensor, replaces causal_offset and is read when the kernel runs: k and v can then be a
 * whole preallocated cache (keys past the offset are never read) and a captured graph
 * (core/graph.c) attends over one more position on every replay.
 *
 * The front plans the work and the CPU kernel (cpu/kernels/attention.c) runs it. One work item is
 * a key/value head of one batch entry with up to ATT_ROWS query rows: ng of the heads sharing it
 * times ni consecutive queries, so the group's heads read each key once. When there are fewer items
 * than threads, the keys are split too (split-K): a first pass leaves per-split softmax partials in
 * a scratch tensor, a second pass combines them.
 */
#include "autograd.h"
#include "op.h"

#include <math.h>
#include <string.h>

#define ATT_ROWS 32          /* query rows per work item (the kernel's row block) */
#define ATT_SPLIT_KEYS 256   /* fewest keys worth a split of their own */

/* Internal attributes the kernel reads (after the op's three). */
enum {
    ATT_A_SCALE, ATT_A_CAUSAL, ATT_A_OFFSET, ATT_A_NG, ATT_A_NI, ATT_A_NSPLIT, ATT_A_PHASE,
    ATT_A_DYN_OFFSET, /* the last kernel input holds causal_offset (int64) */
    ATT_A__COUNT
};

static const char *OP = "scaled_dot_product_attention";

/* q, k, v as (batch..., H, L, E): the heads dim of a rank-2 input is 1. */
typedef struct att_dims {
    int64_t nb;                /* batch dims */
    int64_t h[3], l[3], e[3];  /* per operand */
} att_dims_t;

static mag_status_t check_inputs(mag_tensor_t *const *in, att_dims_t *d, int64_t *batch) {
    mag_tensor_t *q = in[0], *k = in[1], *v = in[2];
    if (q->rank < 2 || k->rank != q->rank || v->rank != q->rank)
        return mag_error(MAG_ERR_VALUE, "%s: q, k and v need one rank >= 2, got shapes %s, %s and %s", OP,
                         MAG_SHAPE(q), MAG_SHAPE(k), MAG_SHAPE(v));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return mag_error(MAG_ERR_TYPE, "%s: q, k and v must share one dtype, got %s, %s and %s (shapes %s, %s, %s)", OP,
                         MAG_DTNAME(q->dtype), MAG_DTNAME(k->dtype), MAG_DTNAME(v->dtype), MAG_SHAPE(q),
                         MAG_SHAPE(k), MAG_SHAPE(v));
    if (!(mag_op_info(MAG_OP_SDPA)->dtypes & (1u << q->dtype)))
        return mag_error(MAG_ERR_TYPE, "%s: the fused kernel takes float32, float16 or bfloat16, got %s (shape %s)", OP,
                         MAG_DTNAME(q->dtype), MAG_SHAPE(q));
    int64_t r = q->rank;
    d->nb = r > 2 ? r - 3 : 0;
    for (int i = 0; i < 3; ++i) {
        const mag_tensor_t *t = in[i];
        d->h[i] = r > 2 ? t->shape[r - 3] : 1;
        d->l[i] = t->shape[r - 2];
        d->e[i] = t->shape[r - 1];
    }
    if (d->e[1] != d->e[0] || d->l[2] != d->l[1] || d->h[2] != d->h[1])
        return mag_error(MAG_ERR_VALUE,
                         "%s: shapes q %s, k %s, v %s do not fit (..., Hq, Lq, E), (..., Hkv, Lk, E), (..., Hkv, Lk, Ev)",
                         OP, MAG_SHAPE(q), MAG_SHAPE(k), MAG_SHAPE(v));
    if (d->h[1] == 0 ? d->h[0] != 0 : d->h[0] % d->h[1] != 0)
        return mag_error(MAG_ERR_VALUE, "%s: %lld query heads are not a multiple of %lld key/value heads (q %s, k %s)",
                         OP, (long long)d->h[0], (long long)d->h[1], MAG_SHAPE(q), MAG_SHAPE(k));
    int64_t n1, b1[MAG_MAX_RANK], n2;
    if (mag_broadcast_shape(d->nb, q->shape, d->nb, k->shape, &n1, b1) != MAG_OK ||
        mag_broadcast_shape(n1, b1, d->nb, v->shape, &n2, batch) != MAG_OK)
        return mag_error(MAG_ERR_VALUE, "%s: the batch dims of q %s, k %s and v %s cannot be broadcast together", OP,
                         MAG_SHAPE(q), MAG_SHAPE(k), MAG_SHAPE(v));
    return MAG_OK;
}

/* t viewed as (batch..., H, L, E) with the broadcast batch shape (stride 0 where t has size 1). */
static mag_tensor_t *kernel_view(const mag_tensor_t *t, int64_t nb, const int64_t *batch, int64_t h) {
    int64_t shape[MAG_MAX_RANK], strides[MAG_MAX_RANK], r = t->rank;
    for (int64_t i = 0; i < nb; ++i) {
        shape[i] = batch[i];
        strides[i] = t->shape[i] == 1 ? 0 : t->strides[i];
    }
    shape[nb] = h;
    strides[nb] = r > 2 ? t->strides[r - 3] : 0;
    for (int i = 0; i < 2; ++i) {
        shape[nb + 1 + i] = t->shape[r - 2 + i];
        strides[nb + 1 + i] = t->strides[r - 2 + i];
    }
    return mag_tensor_new_view(t->storage, t->dtype, nb + 3, shape, strides, t->offset);
}

/* Split the keys when the items leave threads idle and each split keeps enough keys. */
static int64_t plan_splits(int64_t items, int64_t lk) {
    int64_t threads = (int64_t)mag_num_threads();
    if (items >= threads || lk < 2 * ATT_SPLIT_KEYS) return 1;
    int64_t want = (threads + items - 1) / items, most = lk / ATT_SPLIT_KEYS;
    return want < most ? want : most;
}

static mag_status_t run(mag_op_t op, mag_tensor_t *const *views, mag_tensor_t *offset, const att_dims_t *d,
                        int64_t n_batch, mag_scalar_t *ka) {
    int64_t hq = d->h[0], hkv = d->h[1], lq = d->l[0], lk = d->l[1];
    int64_t g = hq / hkv, ng = g < ATT_ROWS ? g : ATT_ROWS, ni = ATT_ROWS / ng;
    if (ni > lq) ni = lq;
    int64_t items = n_batch * hkv * ((g + ng - 1) / ng) * ((lq + ni - 1) / ni);
    int64_t nsplit = plan_splits(items, lk);
    ka[ATT_A_NG] = mag_scalar_int(ng);
    ka[ATT_A_NI] = mag_scalar_int(ni);
    ka[ATT_A_NSPLIT] = mag_scalar_int(nsplit);
    ka[ATT_A_PHASE] = mag_scalar_int(0);
    /* multiply-adds, roughly; never 0, so that rows without keys (Lk or E = 0) still get their zeros */
    int64_t rows = n_batch * hq * lq, work;
    if (__builtin_mul_overflow(rows, lk + 1, &work) || __builtin_mul_overflow(work, d->e[0] + d->e[2] + 1, &work))
        work = INT64_MAX;
    /* kernel inputs: q, k, v, the split partials (nsplit > 1), the offset tensor (ATT_A_DYN_OFFSET) */
    mag_tensor_t *in[5] = {views[0], views[1], views[2]}, *partial = NULL;
    int64_t n_in = 3;
    if (nsplit > 1) { /* per (item, split, row): running max, running sum, the unnormalised output */
        int64_t shape[2] = {items * nsplit * ng * ni, d->e[2] + 2};
        MAG_TRY(mag_tensor_empty(MAG_DTYPE_FLOAT32, 2, shape, &partial));
        in[n_in++] = partial;
    }
    if (offset) in[n_in++] = offset;
    mag_status_t s = mag_dispatch(op, views[3]->dtype, views[3], in, n_in, ka, ATT_A__COUNT, work, false);
    if (s == MAG_OK && partial) {
        ka[ATT_A_PHASE] = mag_scalar_int(1);
        s = mag_dispatch(op, views[3]->dtype, views[3], in, n_in, ka, ATT_A__COUNT, partial->numel, false);
    }
    mag_tensor_release(partial);
    return s;
}

/*
 * Whether q (rank >= 3) is laid out as (batch..., L, H, E), heads inside its rows: the projection
 * of a transformer viewed per head and transposed to (batch..., H, L, E). The result then keeps
 * that layout, as torch's CPU flash attention does, so that the usual transpose(-3, -2) and
 * reshape to (batch..., L, H * E) after attention is a view rather than a copy.
 */
static bool heads_inside_rows(const mag_tensor_t *q) {
    int64_t r = q->rank;
    return r > 2 && q->shape[r - 3] > 1 && q->shape[r - 2] > 1 && q->strides[r - 3] < q->strides[r - 2];
}

/* A new (batch..., H, L, E) tensor stored as (batch..., L, H, E): the view with heads and rows swapped. */
static mag_status_t rows_outside_heads(mag_dtype_t dt, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    int64_t stored[MAG_MAX_RANK], strides[MAG_MAX_RANK];
    memcpy(stored, shape, (size_t)rank * sizeof(int64_t));
    stored[rank - 3] = shape[rank - 2], stored[rank - 2] = shape[rank - 3];
    mag_tensor_t *base;
    MAG_TRY(mag_tensor_empty(dt, rank, stored, &base));
    memcpy(strides, base->strides, (size_t)rank * sizeof(int64_t));
    strides[rank - 3] = base->strides[rank - 2], strides[rank - 2] = base->strides[rank - 3];
    *out = mag_tensor_new_view(base->storage, dt, rank, shape, strides, base->offset);
    mag_tensor_release(base);
    return *out ? MAG_OK : mag_error(MAG_ERR_MEMORY, "%s: out of memory allocating a tensor header", OP);
}

mag_status_t mag_front_sdpa(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                            int64_t n_attrs, mag_tensor_t **out) {
    if (n_in != 3 && n_in != 4)
        return mag_error(MAG_ERR_VALUE, "%s: expected q, k, v and an optional offset tensor, got %lld inputs", OP,
                         (long long)n_in);
    att_dims_t d = {0};
    int64_t batch[MAG_MAX_RANK];
    MAG_TRY(check_inputs(in, &d, batch));
    mag_tensor_t *offset_t = n_in == 4 ? in[3] : NULL;
    if (offset_t && (offset_t->numel != 1 || !(mag_dtype_info(offset_t->dtype)->flags &
                                               (MAG_DTF_SIGNED_INT | MAG_DTF_UNSIGNED_INT))))
        return mag_error(MAG_ERR_VALUE, "%s: the causal offset tensor must hold one integer, got %s of shape %s", OP,
                         MAG_DTNAME(offset_t->dtype), MAG_SHAPE(offset_t));
    if (mag_needs_grad(in, 3))
        return mag_error(MAG_ERR_RUNTIME,
                         "%s: the fused kernel is forward-only and an input requires grad (q %s, k %s, v %s); "
                         "nn.functional.scaled_dot_product_attention differentiates through composed ops",
                         OP, MAG_SHAPE(in[0]), MAG_SHAPE(in[1]), MAG_SHAPE(in[2]));
    double scale = 1.0 / sqrt((double)(d.e[0] > 0 ? d.e[0] : 1));
    if (n_attrs > 0) {
        if (attrs[0].kind != MAG_SCALAR_FLOAT)
            return mag_error(MAG_ERR_TYPE, "%s: scale must be a float", OP);
        scale = attrs[0].f;
    }
    int64_t causal, offset, lq = d.l[0];
    MAG_TRY(mag_attr_int(OP, attrs, n_attrs, 1, 0, &causal));
    MAG_TRY(mag_attr_int(OP, attrs, n_attrs, 2, 0, &offset));
    int64_t rank = d.nb + 3, shape[MAG_MAX_RANK], n_batch = 1;
    for (int64_t i = 0; i < d.nb; ++i) n_batch *= shape[i] = batch[i];
    shape[d.nb] = d.h[0], shape[d.nb + 1] = lq, shape[d.nb + 2] = d.e[2];
    int64_t numel, strides[MAG_MAX_RANK];
    MAG_TRY(mag_checked_numel(OP, rank, shape, &numel));
    mag_contiguous_strides(rank, shape, strides);
    /* the result has q's rank (a rank-2 q has no heads dim); k and v are read while it is written */
    mag_dest_t dest;
    if (!*out && heads_inside_rows(in[0])) {
        MAG_TRY(rows_outside_heads(in[0]->dtype, rank, shape, &dest.res));
        dest.name = OP, dest.dst = NULL;
        memcpy(strides, dest.res->strides, (size_t)rank * sizeof(int64_t));
    } else {
        MAG_TRY(mag_dest_open(&dest, OP, *out, in[0]->dtype, in[0]->rank, in[0]->rank > 2 ? shape : shape + 1, in, 3,
                              false));
    }
    mag_tensor_t *views[4] = {NULL, NULL, NULL, NULL};
    mag_status_t s = MAG_OK;
    for (int i = 0; i < 4 && s == MAG_OK; ++i) {
        views[i] = i < 3 ? kernel_view(in[i], d.nb, batch, d.h[i])
                         : mag_tensor_new_view(dest.res->storage, dest.res->dtype, rank, shape, strides, dest.res->offset);
        if (!views[i]) s = mag_error(MAG_ERR_MEMORY, "%s: out of memory allocating a tensor header", OP);
    }
    mag_scalar_t ka[ATT_A__COUNT] = {mag_scalar_float(scale), mag_scalar_int(causal != 0), mag_scalar_int(offset)};
    ka[ATT_A_DYN_OFFSET] = mag_scalar_int(offset_t != NULL);
    mag_tensor_t *offset64 = NULL; /* the kernel reads an int64 */
    if (s == MAG_OK && offset_t && offset_t->dtype == MAG_DTYPE_INT64) mag_tensor_retain(offset64 = offset_t);
    else if (s == MAG_OK && offset_t) s = mag_tensor_cast(offset_t, MAG_DTYPE_INT64, &offset64);
    if (s == MAG_OK && numel > 0) s = run(op, views, offset64, &d, n_batch, ka);
    mag_tensor_release(offset64);
    for (int i = 0; i < 4; ++i) mag_tensor_release(views[i]);
    return mag_dest_close(&dest, s, out);
}
