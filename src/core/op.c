/*
 * The op front end: validate -> infer shape and dtype -> allocate -> dispatch to the backend.
 * Elementwise kinds (unary, binary, compare) are served by mag_front_elementwise from their table
 * line alone; custom ops name their own front function in ops.def (src/core/ops_*.c).
 */
#include "autograd.h"
#include "op.h"

#include <string.h>

static const mag_op_info_t op_infos[MAG_OP__COUNT] = {
#define X(id, name, kind, nin, nattr, dtypes, flags, front, doc) [MAG_OP_##id] = {name, kind, nin, nattr, dtypes, flags, doc},
#include "ops.def"
#undef X
};

static const mag_front_fn fronts[MAG_OP__COUNT] = {
#define X(id, name, kind, nin, nattr, dtypes, flags, front, doc) [MAG_OP_##id] = front,
#include "ops.def"
#undef X
};

const mag_op_info_t *mag_op_info(mag_op_t op) { return (unsigned)op < MAG_OP__COUNT ? &op_infos[op] : NULL; }

bool mag_op_has_kernel(mag_op_t op, mag_dtype_t dt) {
    return (unsigned)op < MAG_OP__COUNT && (unsigned)dt < MAG_DTYPE__COUNT && mag_cpu_backend()->lookup(op, dt);
}

void mag_tensor_bump_version(mag_tensor_t *t) { atomic_fetch_add(&t->storage->version, 1); }

static int dtype_category(mag_dtype_t dt) {
    uint32_t f = mag_dtype_info(dt)->flags;
    return (f & MAG_DTF_FLOAT) ? 2 : (f & MAG_DTF_BOOL) ? 0 : 1;
}

bool mag_can_cast(mag_dtype_t from, mag_dtype_t to) { return dtype_category(to) >= dtype_category(from); }

mag_status_t mag_check_writable(const char *op, const mag_tensor_t *out) {
    if (out->storage->read_only)
        return mag_error(MAG_ERR_RUNTIME, "%s: the destination (shape %s) is read-only (e.g. a memory-mapped "
                                          "snapshot); clone() it first", op, MAG_SHAPE(out));
    if (mag_tensor_has_internal_overlap(out))
        return mag_error(MAG_ERR_RUNTIME,
                         "%s: more than one element of the destination (shape %s, strides %s) refers to a single "
                         "memory location; clone() it first",
                         op, MAG_SHAPE(out), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, out->rank, out->strides));
    return MAG_OK;
}

mag_status_t mag_launch(mag_kernel_fn fn, mag_op_t op, mag_dtype_t key, mag_tensor_t *out, mag_tensor_t *const *in,
                        int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs, int64_t work, bool single_thread) {
    const mag_backend_t *be = mag_cpu_backend();
    atomic_int status = MAG_OK;
    mag_run_shared_t shared = {0, 0, NULL};
    mag_kernel_args_t a = {op, out, in, n_in, attrs, n_attrs, {0, 0}, &status, &shared};
    if (op_infos[op].flags & MAG_OPF_RANDOM) a.rng = mag_rng_reserve((uint64_t)work); /* one block per element */
    if (work > 0) be->run(fn, &a, work, single_thread);
    if (out) mag_tensor_bump_version(out);
    int st = atomic_load(&status);
    if (st == MAG_ERR_ZERO_DIVISION)
        return mag_error(MAG_ERR_ZERO_DIVISION, "%s: integer division or modulo by zero (dtype %s, result shape %s)",
                         op_infos[op].name, MAG_DTNAME(key), out ? MAG_SHAPE(out) : "()");
    if (st == MAG_ERR_INDEX)
        return mag_error(MAG_ERR_INDEX, "%s: an index is out of bounds (result shape %s)", op_infos[op].name,
                         out ? MAG_SHAPE(out) : "()");
    if (st != MAG_OK) return mag_error((mag_status_t)st, "%s: kernel failed", op_infos[op].name);
    return MAG_OK;
}

mag_status_t mag_dispatch(mag_op_t op, mag_dtype_t key, mag_tensor_t *out, mag_tensor_t *const *in, int64_t n_in,
                          const mag_scalar_t *attrs, int64_t n_attrs, int64_t work, bool single_thread) {
    const mag_backend_t *be = mag_cpu_backend();
    mag_kernel_fn fn = be->lookup(op, key);
    if (!fn)
        return mag_error(MAG_ERR_UNSUPPORTED, "%s: no %s kernel for dtype %s", op_infos[op].name, be->name,
                         MAG_DTNAME(key));
    if (mag_graph_capturing()) MAG_TRY(mag_graph_record(fn, op, key, out, in, n_in, attrs, n_attrs, work, single_thread));
    return mag_launch(fn, op, key, out, in, n_in, attrs, n_attrs, work, single_thread);
}

/* Cast `t` to dt when needed; *tmp holds a reference to release (or NULL). */
static mag_status_t as_dtype(mag_tensor_t *t, mag_dtype_t dt, mag_tensor_t **res, mag_tensor_t **tmp) {
    *tmp = NULL;
    *res = t;
    if (t->dtype == dt) return MAG_OK;
    MAG_TRY(mag_tensor_cast(t, dt, tmp));
    *res = *tmp;
    return MAG_OK;
}

mag_status_t mag_dest_open(mag_dest_t *d, const char *name, mag_tensor_t *dst, mag_dtype_t dt, int64_t rank,
                           const int64_t *shape, mag_tensor_t *const *in, int64_t n_in, bool elementwise) {
    d->name = name;
    d->dst = dst;
    d->res = NULL;
    if (dst) {
        MAG_TRY(mag_check_writable(name, dst));
        if (dst->rank != rank || memcmp(dst->shape, shape, (size_t)rank * sizeof(int64_t)))
            return mag_error(MAG_ERR_VALUE, "%s: the destination of shape %s does not match the result shape %s", name,
                             MAG_SHAPE(dst), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        if (!mag_can_cast(dt, dst->dtype))
            return mag_error(MAG_ERR_TYPE, "%s: the result type %s cannot be written into a destination of type %s",
                             name, MAG_DTNAME(dt), MAG_DTNAME(dst->dtype));
        bool direct = elementwise && dst->dtype == dt;
        for (int64_t i = 0; i < n_in && direct; ++i)
            direct = !mag_tensors_overlap(dst, in[i]) || mag_tensor_same_layout(dst, in[i]);
        if (direct) {
            mag_tensor_retain(dst);
            d->res = dst;
            return MAG_OK;
        }
    }
    return mag_tensor_empty(dt, rank, shape, &d->res);
}

mag_status_t mag_dest_close(mag_dest_t *d, mag_status_t s, mag_tensor_t **out) {
    if (s == MAG_OK && d->dst && d->res != d->dst) s = mag_tensor_copy_(d->dst, d->res);
    if (s != MAG_OK || d->dst) {
        mag_tensor_release(d->res);
        return s;
    }
    *out = d->res;
    return MAG_OK;
}

mag_status_t mag_attr_int(const char *name, const mag_scalar_t *attrs, int64_t n_attrs, int64_t i, int64_t def,
                          int64_t *v) {
    if (i >= n_attrs) {
        *v = def;
        return MAG_OK;
    }
    if (attrs[i].kind == MAG_SCALAR_FLOAT)
        return mag_error(MAG_ERR_TYPE, "%s: attribute %lld must be an integer, got %g", name, (long long)i, attrs[i].f);
    if (attrs[i].kind == MAG_SCALAR_UINT && attrs[i].u > INT64_MAX)
        return mag_error(MAG_ERR_VALUE, "%s: attribute %lld is too large", name, (long long)i);
    *v = attrs[i].i;
    return MAG_OK;
}

mag_status_t mag_front_elementwise(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                   int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    const mag_op_info_t *info = &op_infos[op];
    mag_tensor_t *a = in[0], *b = info->n_inputs > 1 ? in[1] : NULL;
    mag_dtype_t compute = b ? mag_dtype_promote(a->dtype, b->dtype) : a->dtype;
    if ((info->flags & MAG_OPF_INT_TO_FLOAT) && !(mag_dtype_info(compute)->flags & MAG_DTF_FLOAT))
        compute = MAG_DTYPE_FLOAT32;
    if (!(info->dtypes & (1u << compute))) {
        if (b)
            return mag_error(MAG_ERR_TYPE, "%s: unsupported dtypes %s and %s (shapes %s and %s)", info->name,
                             MAG_DTNAME(a->dtype), MAG_DTNAME(b->dtype), MAG_SHAPE(a), MAG_SHAPE(b));
        return mag_error(MAG_ERR_TYPE, "%s: unsupported dtype %s (shape %s)", info->name, MAG_DTNAME(a->dtype),
                         MAG_SHAPE(a));
    }
    mag_dtype_t result_dt = info->kind == MAG_OPK_COMPARE ? MAG_DTYPE_BOOLEAN : compute;
    int64_t rank = a->rank, shape[MAG_MAX_RANK];
    memcpy(shape, a->shape, sizeof(shape));
    if (b) {
        mag_status_t s = mag_broadcast_shape(a->rank, a->shape, b->rank, b->shape, &rank, shape);
        if (s != MAG_OK)
            return mag_error(s, "%s: shapes %s and %s cannot be broadcast together", info->name, MAG_SHAPE(a),
                             MAG_SHAPE(b));
    }
    mag_tensor_t *ta, *tb = NULL, *tmp_a, *tmp_b = NULL;
    mag_dest_t d;
    MAG_TRY(mag_dest_open(&d, info->name, *out, result_dt, rank, shape, in, b ? 2 : 1, true));
    mag_status_t s = as_dtype(a, compute, &ta, &tmp_a);
    if (s == MAG_OK && b) s = as_dtype(b, compute, &tb, &tmp_b);
    if (s == MAG_OK) {
        mag_tensor_t *args[2] = {ta, tb};
        s = mag_dispatch(op, compute, d.res, args, b ? 2 : 1, attrs, n_attrs, d.res->numel, false);
    }
    mag_tensor_release(tmp_a);
    mag_tensor_release(tmp_b);
    return mag_dest_close(&d, s, out);
}

mag_status_t mag_op(mag_op_t op, mag_tensor_t *const *inputs, int64_t n_inputs, const mag_scalar_t *attrs,
                    int64_t n_attrs, mag_tensor_t **out) {
    const mag_op_info_t *info = mag_op_info(op);
    if (!info) return mag_error(MAG_ERR_VALUE, "unknown op %d", (int)op);
    if (!out) return mag_error(MAG_ERR_VALUE, "%s: no output slot given", info->name);
    if ((info->n_inputs >= 0 && n_inputs != info->n_inputs) || n_inputs < 0)
        return mag_error(MAG_ERR_VALUE, "%s: expected %d inputs, got %lld", info->name, info->n_inputs,
                         (long long)n_inputs);
    if ((info->n_attrs >= 0 && n_attrs > info->n_attrs) || n_attrs < 0)
        return mag_error(MAG_ERR_VALUE, "%s: expected at most %d attributes, got %lld", info->name, info->n_attrs,
                         (long long)n_attrs);
    for (int64_t i = 0; i < n_inputs; ++i)
        if (!inputs[i]) return mag_error(MAG_ERR_VALUE, "%s: input %lld is missing", info->name, (long long)i);
    mag_autograd_enter(); /* ops called from inside this one record nothing */
    mag_tensor_t *dst = *out;
    mag_status_t s = mag_graph_check(op, inputs, n_inputs, dst);
    if (s == MAG_OK && dst && mag_grad_recording() && (dst->requires_grad || mag_needs_grad(inputs, n_inputs))) {
        s = mag_grad_inplace(op, inputs, n_inputs, attrs, n_attrs, dst);
    } else if (s == MAG_OK) {
        s = fronts[op](op, inputs, n_inputs, attrs, n_attrs, out);
        if (s == MAG_OK && !dst && mag_needs_grad(inputs, n_inputs)) {
            s = mag_grad_record_op(op, inputs, n_inputs, attrs, n_attrs, *out);
            if (s != MAG_OK) {
                mag_tensor_release(*out);
                *out = NULL;
            }
        }
    }
    mag_autograd_leave();
    return s;
}
