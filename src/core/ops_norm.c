/*
 * Front end of rms_norm and layer_norm (attributes and inputs in reduce.h): validation with
 * messages that name the op, shapes and dtypes; the kernel then gets contiguous operands, the
 * weight and bias in their own dtype (x's, or float32 for a 16-bit x: torch's mixed mode).
 */
#include "op.h"
#include "reduce.h"

#include <string.h>

static bool is_float(mag_dtype_t dt) { return (mag_dtype_info(dt)->flags & MAG_DTF_FLOAT) != 0; }

static bool is_16bit(mag_dtype_t dt) { return dt == MAG_DTYPE_FLOAT16 || dt == MAG_DTYPE_BFLOAT16; }

/* weight or bias p: the shape of x's last k dims and x's dtype (or float32 for 16-bit x). */
static mag_status_t check_param(const char *op, const char *what, const mag_tensor_t *x, int64_t k,
                                const mag_tensor_t *p) {
    char xs[MAG_SHAPE_STR_LEN], ns[MAG_SHAPE_STR_LEN];
    mag_shape_str(ns, k, x->shape + x->rank - k);
    if (p->rank != k || memcmp(p->shape, x->shape + x->rank - k, (size_t)k * sizeof(int64_t)))
        return mag_error(MAG_ERR_VALUE,
                         "%s: %s of shape %s does not match normalized_shape %s of the input of shape %s", op, what,
                         MAG_SHAPE(p), ns, mag_shape_str(xs, x->rank, x->shape));
    if (p->dtype != x->dtype && !(is_16bit(x->dtype) && p->dtype == MAG_DTYPE_FLOAT32))
        return mag_error(MAG_ERR_TYPE,
                         "%s: %s dtype %s does not match the input dtype %s (%s shape %s, input shape %s)%s", op,
                         what, MAG_DTNAME(p->dtype), MAG_DTNAME(x->dtype), what, MAG_SHAPE(p),
                         mag_shape_str(xs, x->rank, x->shape),
                         is_16bit(x->dtype) ? "; 16-bit inputs also take float32 parameters" : "");
    return MAG_OK;
}

static mag_status_t check_attrs(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                int64_t n_attrs) {
    const char *name = mag_op_info(op)->name;
    const mag_tensor_t *x = in[0];
    if (n_in < 1) return mag_error(MAG_ERR_VALUE, "%s: expected an input tensor", name);
    if (!is_float(x->dtype))
        return mag_error(MAG_ERR_TYPE, "%s: expected a floating-point input, got %s (shape %s); cast it first", name,
                         MAG_DTNAME(x->dtype), MAG_SHAPE(x));
    if (n_attrs != MAG_NORM_N_ATTRS || attrs[MAG_NORM_DIMS].kind == MAG_SCALAR_FLOAT)
        return mag_error(MAG_ERR_VALUE, "%s: expected the attributes [dims, eps, has_weight, has_bias, round_first]",
                         name);
    int64_t k = attrs[MAG_NORM_DIMS].i;
    bool hw = attrs[MAG_NORM_HAS_WEIGHT].i != 0, hb = attrs[MAG_NORM_HAS_BIAS].i != 0;
    if (k < 1 || k > x->rank)
        return mag_error(MAG_ERR_VALUE, "%s: normalized_shape must name 1 to %lld trailing dims of the input of shape "
                         "%s, got %lld dims", name, (long long)x->rank, MAG_SHAPE(x), (long long)k);
    if (op == MAG_OP_RMS_NORM && hb) return mag_error(MAG_ERR_VALUE, "rms_norm: takes no bias");
    if (n_in != 1 + hw + hb)
        return mag_error(MAG_ERR_VALUE, "%s: expected %d inputs (x%s%s), got %lld", name, 1 + hw + hb,
                         hw ? ", weight" : "", hb ? ", bias" : "", (long long)n_in);
    if (hw) MAG_TRY(check_param(name, "weight", x, k, in[1]));
    if (hb) MAG_TRY(check_param(name, "bias", x, k, in[1 + hw]));
    return MAG_OK;
}

mag_status_t mag_front_norm(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                            int64_t n_attrs, mag_tensor_t **out) {
    MAG_TRY(check_attrs(op, in, n_in, attrs, n_attrs));
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *x = in[0], *args[3] = {NULL, NULL, NULL};
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, name, *out, x->dtype, x->rank, x->shape, in, n_in, false));
    mag_status_t s = MAG_OK;
    for (int64_t i = 0; i < n_in && s == MAG_OK; ++i) s = mag_tensor_contiguous(in[i], &args[i]);
    if (s == MAG_OK) s = mag_dispatch(op, x->dtype, d.res, args, n_in, attrs, n_attrs, x->numel, false);
    for (int i = 0; i < 3; ++i) mag_tensor_release(args[i]);
    return mag_dest_close(&d, s, out);
}
