/* The op front end's internals, shared by op.c and the custom ops in ops_*.c. */
#ifndef MAG_OP_H
#define MAG_OP_H

#include "../backend.h"

/* Validate, infer, allocate and dispatch one custom op (see ops.def for the argument layout). */
typedef mag_status_t (*mag_front_fn)(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                     int64_t n_attrs, mag_tensor_t **out);

#define X(id, name, kind, nin, nattr, dtypes, flags, front, doc)                                                     \
    mag_status_t front(mag_op_t, mag_tensor_t *const *, int64_t, const mag_scalar_t *, int64_t, mag_tensor_t **);
#include "ops.def"
#undef X

/* Look up the kernel for (op, key dtype) and run it over `work` elements. */
mag_status_t mag_dispatch(mag_op_t op, mag_dtype_t key, mag_tensor_t *out, mag_tensor_t *const *in, int64_t n_in,
                          const mag_scalar_t *attrs, int64_t n_attrs, int64_t work, bool single_thread);
/* Run kernel fn of (op, key) over `work` elements now (what mag_dispatch does after the lookup; a graph replay). */
mag_status_t mag_launch(mag_kernel_fn fn, mag_op_t op, mag_dtype_t key, mag_tensor_t *out, mag_tensor_t *const *in,
                        int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs, int64_t work, bool single_thread);
/* Graph capture (graph.c): whether this thread records its launches, the refusal of ops a replay
 * cannot repeat (MAG_OPF_HOST, autograd recording), and the recording of one launch. */
bool mag_graph_capturing(void);
mag_status_t mag_graph_check(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_tensor_t *dst);
mag_status_t mag_graph_record(mag_kernel_fn fn, mag_op_t op, mag_dtype_t key, mag_tensor_t *out,
                              mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs,
                              int64_t work, bool single_thread);
/* A destination must be writable and must not have two elements at one address. */
mag_status_t mag_check_writable(const char *op, const mag_tensor_t *out);
/* The dtype categories bool < integer < float: a result may be written into an output of the same or higher one. */
bool mag_can_cast(mag_dtype_t from, mag_dtype_t to);
void mag_tensor_bump_version(mag_tensor_t *t);
/*
 * Where a result goes. Without a destination it is a new tensor. With one (the in-place and out=
 * forms), the kernel writes straight into it when that is safe: same dtype and, for elementwise
 * ops, no input overlapping it other than in the identical layout (x.tril_() reads each element
 * before writing it). Otherwise a private result is copied into the destination at the end.
 * open checks the destination (writable, shape) and sets res; close hands res out or copies it
 * (when s is MAG_OK) and releases what is left.
 */
typedef struct mag_dest {
    const char *name;
    mag_tensor_t *dst; /* the caller's destination, or NULL */
    mag_tensor_t *res; /* where the kernel writes */
} mag_dest_t;
mag_status_t mag_dest_open(mag_dest_t *d, const char *name, mag_tensor_t *dst, mag_dtype_t dt, int64_t rank,
                           const int64_t *shape, mag_tensor_t *const *in, int64_t n_in, bool elementwise);
mag_status_t mag_dest_close(mag_dest_t *d, mag_status_t s, mag_tensor_t **out);
/* Integer attribute i (def when absent); a float or an out-of-range value is an error naming the op. */
mag_status_t mag_attr_int(const char *name, const mag_scalar_t *attrs, int64_t n_attrs, int64_t i, int64_t def,
                          int64_t *v);

#endif
