/* Internal definitions shared by the core and the backends (never included by hosts). */
#ifndef MAG_INTERNAL_H
#define MAG_INTERNAL_H

#include "magnetron.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAG_ALIGN 64

/* Nanoseconds on the monotonic clock (spin limits, graph profiles). */
static inline uint64_t mag_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A float32's bits and back (always inlined: kernel loops call them and must still vectorise). */
static inline __attribute__((always_inline)) uint32_t mag_fbits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static inline __attribute__((always_inline)) float mag_bitsf(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

typedef struct mag_storage {
    atomic_int_fast64_t refcount;
    uint8_t *data;
    size_t nbytes;
    mag_owner_t owner;
    bool read_only;
    mag_deleter_fn deleter; /* foreign memory: called with deleter_ctx on the last release */
    void *deleter_ctx;
    atomic_uint_fast64_t version; /* bumped by every write; autograd checks saved tensors */
} mag_storage_t;

struct mag_tensor {
    atomic_int_fast64_t refcount;
    mag_storage_t *storage;
    mag_dtype_t dtype;
    int64_t rank;
    int64_t numel;
    int64_t offset; /* in elements, from storage->data */
    bool is_view;
    bool requires_grad;
    struct mag_tensor *grad; /* accumulated gradient of a leaf */
    struct mag_node *node;   /* the op that produced this tensor (autograd), NULL for leaves */
    struct mag_tensor *view_base; /* for views: the tensor whose storage they view (retained), else NULL */
    int64_t shape[MAG_MAX_RANK];
    int64_t strides[MAG_MAX_RANK];
};

/* ---- errors (error.c) ---- */
/* Record a message for mag_last_error() and return `st`; printf-style. */
mag_status_t mag_error(mag_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed OS call: records errno (mag_last_errno) and appends strerror(err) to the message. */
mag_status_t mag_error_io(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define MAG_TRY(expr)                                                                                                  \
    do {                                                                                                               \
        mag_status_t st_ = (expr);                                                                                     \
        if (st_ != MAG_OK) return st_;                                                                                 \
    } while (0)

/* "(2, 3)" into buf; returns buf. Buffers of MAG_SHAPE_STR_LEN hold any shape. */
#define MAG_SHAPE_STR_LEN (MAG_MAX_RANK * 22 + 4)
char *mag_shape_str(char *buf, int64_t rank, const int64_t *shape);
#define MAG_SHAPE(t) mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, (t)->rank, (t)->shape)
#define MAG_DTNAME(dt) (mag_dtype_info(dt)->name)

/* ---- allocation (alloc.c): 64-byte aligned, cached by size ---- */
void *mag_alloc(size_t nbytes);
void mag_free(void *p, size_t nbytes);

/* ---- tensors (tensor.c) ---- */
/* A new tensor header over `st` (retained) with the given layout. */
mag_tensor_t *mag_tensor_new_view(mag_storage_t *st, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                                  const int64_t *strides, int64_t offset);
void mag_contiguous_strides(int64_t rank, const int64_t *shape, int64_t *strides);
/* The element count of a shape; ValueError for a bad rank or negative size, MemoryError on overflow (names `op`). */
mag_status_t mag_checked_numel(const char *op, int64_t rank, const int64_t *shape, int64_t *numel);
/* Normalise a possibly negative dim against rank (rank 0 accepts -1 and 0); IndexError names `op`. */
mag_status_t mag_norm_dim(const char *op, int64_t dim, int64_t rank, int64_t *out);
/* Byte range [lo, hi) of storage touched by t (hi == lo for empty tensors). */
void mag_tensor_byte_span(const mag_tensor_t *t, int64_t *lo, int64_t *hi);
/* Whether every element of t's layout (shape, strides, offset) lies in the first nbytes of its storage;
   overflow-checked, so hostile strides cannot wrap around into bounds. */
bool mag_layout_in_bounds(const mag_tensor_t *t, size_t nbytes);
bool mag_tensors_overlap(const mag_tensor_t *a, const mag_tensor_t *b);
bool mag_tensor_same_layout(const mag_tensor_t *a, const mag_tensor_t *b);
/* True when two elements of t share an address (stride 0 or overlapping strides). */
bool mag_tensor_has_internal_overlap(const mag_tensor_t *t);

/* ---- random numbers (rng.c): Philox4x32-10, counter-based ---- */
typedef struct mag_philox_key {
    uint64_t seed;
    uint64_t offset; /* counter base, advanced by each random op */
} mag_philox_key_t;
/* Reserve `n` 128-bit counter blocks for one op; the key is what its kernels use. */
mag_philox_key_t mag_rng_reserve(uint64_t n_blocks);
/* Four 32-bit random words for counter block `i`. */
void mag_philox4x32(mag_philox_key_t key, uint64_t i, uint32_t out[4]);

#endif
