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
/* A destination must be writable and must not have two elements at one address. */
mag_status_t mag_check_writable(const char *op, const mag_tensor_t *out);
/* The dtype categories bool < integer < float: a result may be written into an output of the same or higher one. */
bool mag_can_cast(mag_dtype_t from, mag_dtype_t to);
void mag_tensor_bump_version(mag_tensor_t *t);

#endif
