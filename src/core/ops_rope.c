/*
 * ROPE: rotary position embedding (Su et al. 2021) as one op. x (..., D) has its feature pairs
 * rotated by the angles whose cosines and sines are cos and sin (..., D/2), broadcast against
 * x's leading dims: "rotate half" pairs feature i with i + D/2 (Llama, Qwen, GPT-NeoX),
 * interleaved (attr 0) pairs 2i with 2i + 1 (GPT-J). cos and sin are used in x's dtype (as
 * transformers rounds them); 16-bit floats round like the unfused expression (see the kernel).
 */
#include "op.h"

#include <string.h>

/* t (rank r_t) broadcast to `rank` dims of `shape`, as a view: the kernel walks all three alike. */
static mag_status_t broadcast_view(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **view) {
    int64_t strides[MAG_MAX_RANK];
    for (int64_t d = 0; d < rank; ++d) {
        int64_t td = d - (rank - t->rank);
        strides[d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
    }
    *view = mag_tensor_new_view(t->storage, t->dtype, rank, shape, strides, t->offset);
    return *view ? MAG_OK : mag_error(MAG_ERR_MEMORY, "rope: out of memory allocating a tensor header");
}

mag_status_t mag_front_rope(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                            int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0], *cos = in[1], *sin = in[2];
    int64_t interleaved;
    MAG_TRY(mag_attr_int("rope", attrs, n_attrs, 0, 0, &interleaved));
    if (!(mag_op_info(op)->dtypes & (1u << x->dtype)) || !(mag_dtype_info(cos->dtype)->flags & MAG_DTF_FLOAT) ||
        !(mag_dtype_info(sin->dtype)->flags & MAG_DTF_FLOAT))
        return mag_error(MAG_ERR_TYPE, "rope: x, cos and sin must be floating point, got %s, %s and %s",
                         MAG_DTNAME(x->dtype), MAG_DTNAME(cos->dtype), MAG_DTNAME(sin->dtype));
    int64_t d = x->rank ? x->shape[x->rank - 1] : 0;
    if (x->rank == 0 || d % 2)
        return mag_error(MAG_ERR_VALUE, "rope: x needs a last dim of even size, got shape %s", MAG_SHAPE(x));
    int64_t shape[MAG_MAX_RANK], rank;
    memcpy(shape, x->shape, sizeof(shape));
    shape[x->rank - 1] = d / 2;
    mag_tensor_t *angles[2] = {cos, sin};
    for (int i = 0; i < 2; ++i) {
        const mag_tensor_t *t = angles[i];
        int64_t bshape[MAG_MAX_RANK];
        if (mag_broadcast_shape(x->rank, shape, t->rank, t->shape, &rank, bshape) != MAG_OK || rank != x->rank ||
            memcmp(bshape, shape, (size_t)rank * sizeof(int64_t)))
            return mag_error(MAG_ERR_VALUE, "rope: %s of shape %s does not broadcast to %s (x of shape %s, D/2 angles)",
                             i ? "sin" : "cos", MAG_SHAPE(t), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, x->rank, shape),
                             MAG_SHAPE(x));
    }
    mag_tensor_t *cast[2] = {NULL, NULL}, *views[3] = {x, NULL, NULL};
    mag_dest_t dest;
    MAG_TRY(mag_dest_open(&dest, "rope", *out, x->dtype, x->rank, x->shape, in, 0, false));
    mag_status_t s = MAG_OK;
    for (int i = 0; i < 2 && s == MAG_OK; ++i) {
        mag_tensor_t *t = angles[i];
        if (t->dtype != x->dtype && (s = mag_tensor_cast(t, x->dtype, &cast[i])) == MAG_OK) t = cast[i];
        if (s == MAG_OK) s = broadcast_view(t, x->rank, shape, &views[i + 1]);
    }
    if (s == MAG_OK) {
        mag_scalar_t a = mag_scalar_int(interleaved != 0);
        s = mag_dispatch(op, x->dtype, dest.res, views, 3, &a, 1, x->numel, false);
    }
    for (int i = 0; i < 2; ++i) {
        mag_tensor_release(cast[i]);
        mag_tensor_release(views[i + 1]);
    }
    return mag_dest_close(&dest, s, out);
}
