/*
 * magnetron.h — the public C API of the magnetron tensor core.
 *
 * magnetron is a small machine-learning runtime. This header is everything a host
 * (the Python binding, a C program, a test) needs: status codes, dtypes, tensors,
 * views and the generic op entry point.
 *
 * Conventions
 *   - Every fallible call returns mag_status_t. On failure the thread-local message
 *     from mag_last_error() names the op, the shapes and the dtypes. Nothing aborts.
 *   - Tensors are reference counted: every function that hands out a tensor gives the
 *     caller one reference, released with mag_tensor_release().
 *   - Shapes and strides are in elements. A stride may be 0 (broadcast) or negative.
 *     Rank is 0..MAG_MAX_RANK; zero-size dimensions are legal.
 *   - Dimension arguments may be negative (counted from the end), as in PyTorch.
 *
 * A complete example (c = a + b):
 *
 *     int64_t shape[2] = {2, 3};
 *     mag_tensor_t *a, *b, *c = NULL;
 *     mag_tensor_empty(MAG_DTYPE_FLOAT32, 2, shape, &a);
 *     mag_tensor_empty(MAG_DTYPE_FLOAT32, 2, shape, &b);
 *     mag_tensor_fill(a, mag_scalar_float(1.0));
 *     mag_tensor_fill(b, mag_scalar_float(2.0));
 *     mag_tensor_t *in[2] = {a, b};
 *     if (mag_op(MAG_OP_ADD, in, 2, NULL, 0, &c) != MAG_OK)
 *         fprintf(stderr, "%s\n", mag_last_error());
 *     mag_tensor_release(a); mag_tensor_release(b); mag_tensor_release(c);
 *
 * The op set is the table in src/core/ops.def; docs/cheatsheet.md lists it.
 */
#ifndef MAGNETRON_H
#define MAGNETRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAG_MAX_RANK 16
#define MAG_MAX_ATTRS 8

/* ---- status codes: each maps to one Python exception type in the binding ---- */
typedef enum mag_status {
    MAG_OK = 0,
    MAG_ERR_VALUE,          /* bad shape, size or argument value      -> ValueError */
    MAG_ERR_TYPE,           /* unsupported dtype or argument type     -> TypeError */
    MAG_ERR_INDEX,          /* index or dim out of range              -> IndexError */
    MAG_ERR_MEMORY,         /* allocation failed                      -> MemoryError */
    MAG_ERR_RUNTIME,        /* valid input, invalid state (read-only) -> RuntimeError */
    MAG_ERR_ZERO_DIVISION,  /* integer division or modulo by zero     -> ZeroDivisionError */
    MAG_ERR_FORMAT,         /* corrupt or truncated file              -> magnetron.FormatError */
    MAG_ERR_UNSUPPORTED,    /* no kernel for this op/dtype/device     -> RuntimeError */
    MAG_ERR_IO,             /* the OS refused a file operation        -> OSError (errno kept) */
} mag_status_t;

/* The message of the last failure on this thread ("" when none). */
const char *mag_last_error(void);
/* The errno behind the last MAG_ERR_IO on this thread (0 when none). */
int mag_last_errno(void);

/* ---- dtypes (table: src/core/dtypes.def) ---- */
typedef enum mag_dtype {
#define X(id, name, ctype, size, flags, lo, hi) MAG_DTYPE_##id,
#include "../src/core/dtypes.def"
#undef X
    MAG_DTYPE__COUNT
} mag_dtype_t;

enum {
    MAG_DTF_FLOAT = 1 << 0,
    MAG_DTF_SIGNED_INT = 1 << 1,
    MAG_DTF_UNSIGNED_INT = 1 << 2,
    MAG_DTF_BOOL = 1 << 3,
};

typedef struct mag_dtype_info {
    const char *name; /* "float32" */
    size_t size;      /* bytes per element */
    uint32_t flags;   /* MAG_DTF_* */
    double min, max;  /* representable range (finite max for floats) */
} mag_dtype_info_t;

const mag_dtype_info_t *mag_dtype_info(mag_dtype_t dt);
/* PyTorch's promotion of two tensor dtypes (int + float -> float, bf16 + f16 -> f32, ...). */
mag_dtype_t mag_dtype_promote(mag_dtype_t a, mag_dtype_t b);
/* Round-to-nearest-even conversions of the 16-bit float formats (NaN stays NaN). */
uint16_t mag_f32_to_f16(float x);
float mag_f16_to_f32(uint16_t h);
uint16_t mag_f32_to_bf16(float x);
float mag_bf16_to_f32(uint16_t h);

/* ---- scalars: values of op attributes and Python numbers ---- */
typedef enum mag_scalar_kind { MAG_SCALAR_INT, MAG_SCALAR_UINT, MAG_SCALAR_FLOAT, MAG_SCALAR_BOOL } mag_scalar_kind_t;
typedef struct mag_scalar {
    mag_scalar_kind_t kind;
    union {
        int64_t i;
        uint64_t u;
        double f;
    };
} mag_scalar_t;

mag_scalar_t mag_scalar_int(int64_t v);
mag_scalar_t mag_scalar_float(double v);
mag_scalar_t mag_scalar_bool(bool v);

/* ---- tensors ---- */
typedef struct mag_tensor mag_tensor_t;

typedef enum mag_owner { MAG_OWNER_HEAP, MAG_OWNER_MAPPED, MAG_OWNER_BORROWED } mag_owner_t;

/* Releases foreign memory (a DLPack producer, a mapping) when the last view dies. */
typedef void (*mag_deleter_fn)(void *ctx);

mag_status_t mag_tensor_empty(mag_dtype_t dt, int64_t rank, const int64_t *shape, mag_tensor_t **out);
/* Wrap foreign memory without copying; `deleter(ctx)` runs when the last view is released. */
mag_status_t mag_tensor_borrow(void *data, size_t nbytes, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                               const int64_t *strides, bool read_only, mag_owner_t owner, mag_deleter_fn deleter,
                               void *ctx, mag_tensor_t **out);
void mag_tensor_retain(mag_tensor_t *t);
void mag_tensor_release(mag_tensor_t *t);

mag_dtype_t mag_tensor_dtype(const mag_tensor_t *t);
int64_t mag_tensor_rank(const mag_tensor_t *t);
const int64_t *mag_tensor_shape(const mag_tensor_t *t);
const int64_t *mag_tensor_strides(const mag_tensor_t *t);
int64_t mag_tensor_offset(const mag_tensor_t *t);
int64_t mag_tensor_numel(const mag_tensor_t *t);
/* Address of element [0, ..., 0] (may be inside the storage when strides are negative). */
void *mag_tensor_data(const mag_tensor_t *t);
bool mag_tensor_is_contiguous(const mag_tensor_t *t);
bool mag_tensor_is_view(const mag_tensor_t *t);       /* made as a view of another tensor (its base is not) */
bool mag_tensor_is_read_only(const mag_tensor_t *t);
mag_owner_t mag_tensor_owner(const mag_tensor_t *t);
bool mag_tensor_requires_grad(const mag_tensor_t *t);
/* Only floating-point tensors may require gradients (RuntimeError otherwise, like PyTorch). */
mag_status_t mag_tensor_set_requires_grad(mag_tensor_t *t, bool on);
/* Identity of the underlying storage: equal for tensors that share memory. */
const void *mag_tensor_storage_id(const mag_tensor_t *t);
/* Bounds of the storage bytes (base pointer and size). */
void mag_tensor_storage_bytes(const mag_tensor_t *t, void **base, size_t *nbytes);

/* ---- views: no copy, share storage ---- */
/* view: like torch.view, one -1 allowed; fails where PyTorch's view fails. */
mag_status_t mag_tensor_view(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out);
/* reshape: a view when possible, else a contiguous copy. */
mag_status_t mag_tensor_reshape(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out);
mag_status_t mag_tensor_permute(mag_tensor_t *t, int64_t rank, const int64_t *dims, mag_tensor_t **out);
mag_status_t mag_tensor_transpose(mag_tensor_t *t, int64_t d0, int64_t d1, mag_tensor_t **out);
/* Elements start, start+step, ... (length of them) along dim; step may be negative. */
mag_status_t mag_tensor_slice(mag_tensor_t *t, int64_t dim, int64_t start, int64_t length, int64_t step,
                              mag_tensor_t **out);
mag_status_t mag_tensor_select(mag_tensor_t *t, int64_t dim, int64_t index, mag_tensor_t **out);
mag_status_t mag_tensor_unsqueeze(mag_tensor_t *t, int64_t dim, mag_tensor_t **out);
/* squeeze: dims == NULL removes every size-1 dim; else only the listed ones that have size 1. */
mag_status_t mag_tensor_squeeze(mag_tensor_t *t, int64_t ndims, const int64_t *dims, mag_tensor_t **out);
/* expand: -1 keeps a size; new leading dims allowed; size-1 dims broadcast with stride 0. */
mag_status_t mag_tensor_expand(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out);
/* A view of arbitrary shape/strides/offset inside t's storage, bounds-checked. */
mag_status_t mag_tensor_as_strided(mag_tensor_t *t, int64_t rank, const int64_t *shape, const int64_t *strides,
                                   int64_t offset, mag_tensor_t **out);
/* Broadcast shape of two shapes (NumPy rules). */
mag_status_t mag_broadcast_shape(int64_t ra, const int64_t *a, int64_t rb, const int64_t *b, int64_t *rank_out,
                                 int64_t *shape_out);

/* ---- ops (table: src/core/ops.def) ---- */
typedef enum mag_op {
#define X(id, name, kind, nin, nattr, dtypes, flags, front, doc) MAG_OP_##id,
#include "../src/core/ops.def"
#undef X
    MAG_OP__COUNT
} mag_op_t;

typedef enum mag_op_kind {
    MAG_OPK_UNARY,     /* elementwise, out = f(in0); ints promote to float32 for float math */
    MAG_OPK_BINARY,    /* elementwise with broadcasting and promotion */
    MAG_OPK_COMPARE,   /* elementwise with broadcasting, boolean result */
    MAG_OPK_CUSTOM,    /* validation and shape inference of its own in src/core/ops_*.c */
} mag_op_kind_t;

/* Dtype sets of ops (masks over 1 << mag_dtype_t). */
#define MAG_DTM(dt) (1u << MAG_DTYPE_##dt)
#define MAG_DTM_FLOAT (MAG_DTM(FLOAT32) | MAG_DTM(FLOAT16) | MAG_DTM(BFLOAT16) | MAG_DTM(FLOAT64))
#define MAG_DTM_SINT (MAG_DTM(INT8) | MAG_DTM(INT16) | MAG_DTM(INT32) | MAG_DTM(INT64))
#define MAG_DTM_UINT (MAG_DTM(UINT8) | MAG_DTM(UINT16) | MAG_DTM(UINT32) | MAG_DTM(UINT64))
#define MAG_DTM_INT (MAG_DTM_SINT | MAG_DTM_UINT)
#define MAG_DTM_NUMERIC (MAG_DTM_FLOAT | MAG_DTM_INT)
#define MAG_DTM_ALL (MAG_DTM_NUMERIC | MAG_DTM(BOOLEAN))

enum {
    MAG_OPF_INPLACE = 1 << 0, /* has an in-place twin (`name_`) */
    MAG_OPF_NOGRAD = 1 << 1,  /* not differentiable (integer results, fills, random) */
    MAG_OPF_RANDOM = 1 << 2,  /* draws from the counter-based generator */
    MAG_OPF_INT_TO_FLOAT = 1 << 3, /* integer/boolean inputs compute (and return) float32 */
    MAG_OPF_HOST = 1 << 4,    /* the front end reads tensor values on the host: no graph capture */
};

typedef struct mag_op_info {
    const char *name;
    mag_op_kind_t kind;
    int n_inputs; /* -1: any number (cat, stack, indexing) */
    int n_attrs;  /* -1: any number */
    uint32_t dtypes; /* dtype mask of the first input (the output for factories) */
    uint32_t flags;
    const char *doc;
} mag_op_info_t;

const mag_op_info_t *mag_op_info(mag_op_t op);
/* Whether the CPU kernel table in use has a kernel for (op, dtype). */
bool mag_op_has_kernel(mag_op_t op, mag_dtype_t dt);

/*
 * Run an op. `inputs` and `attrs` follow the op's table line. If *out is NULL a new tensor is
 * allocated and returned; otherwise the result is written into *out (in-place forms, copy_),
 * which must have the result's shape, be writable, and not partially overlap an input.
 */
mag_status_t mag_op(mag_op_t op, mag_tensor_t *const *inputs, int64_t n_inputs, const mag_scalar_t *attrs,
                    int64_t n_attrs, mag_tensor_t **out);

/* Convenience forms of common ops. */
mag_status_t mag_tensor_fill(mag_tensor_t *t, mag_scalar_t v);
mag_status_t mag_tensor_cast(mag_tensor_t *t, mag_dtype_t dt, mag_tensor_t **out); /* always copies */
mag_status_t mag_tensor_contiguous(mag_tensor_t *t, mag_tensor_t **out);           /* t itself if contiguous */
mag_status_t mag_tensor_copy_(mag_tensor_t *dst, mag_tensor_t *src);                /* src broadcast to dst */
/* Read one element (by multi-index) as a scalar of the tensor's kind. */
mag_status_t mag_tensor_get(const mag_tensor_t *t, const int64_t *index, mag_scalar_t *out);

/* ---- graph capture ----
 * Between begin and end, every kernel this thread launches runs and is recorded; replay launches
 * them again on the same tensors (held by the graph), skipping every front end: the data of those
 * tensors may change between replays, their shapes and storage may not. Ops whose front end reads
 * tensor values on the host (MAG_OPF_HOST) and ops that autograd records fail while capturing. */
typedef struct mag_graph mag_graph_t;
mag_status_t mag_graph_begin(mag_graph_t **out);
mag_status_t mag_graph_end(mag_graph_t *g);
mag_status_t mag_graph_replay(mag_graph_t *g);
/* A replay that also times each launch: ns (mag_graph_launches entries) gets launch i's wall time in ns[i]. */
mag_status_t mag_graph_replay_timed(mag_graph_t *g, int64_t *ns);
/* Launch i's op name and result tensor (borrowed; NULL for an op without one or i out of range). */
const char *mag_graph_launch_op(const mag_graph_t *g, int64_t i);
mag_tensor_t *mag_graph_launch_out(const mag_graph_t *g, int64_t i);
int64_t mag_graph_launches(const mag_graph_t *g);
void mag_graph_free(mag_graph_t *g); /* also ends a capture in progress */

/* ---- autograd ---- */
/* Grad mode is thread-local; mag_set_grad_enabled returns the previous state so callers can restore it. */
bool mag_grad_enabled(void);
bool mag_set_grad_enabled(bool on);
/* Accumulate d(t)/d(leaf) * grad into every leaf's .grad; grad NULL means ones (t must have one element). */
mag_status_t mag_tensor_backward(mag_tensor_t *t, mag_tensor_t *grad, bool retain_graph);
bool mag_tensor_is_leaf(const mag_tensor_t *t);
mag_tensor_t *mag_tensor_grad(const mag_tensor_t *t); /* borrowed; NULL when none */
mag_status_t mag_tensor_set_grad(mag_tensor_t *t, mag_tensor_t *grad); /* NULL clears */
const char *mag_tensor_grad_fn(const mag_tensor_t *t); /* name of the op that made t, or NULL */
/* Shares storage, no history, requires_grad false. */
mag_status_t mag_tensor_detach(mag_tensor_t *t, mag_tensor_t **out);
/* Whether table op `op` has a gradient (float ops need one unless flagged MAG_OPF_NOGRAD). */
bool mag_op_has_grad(mag_op_t op);

/* ---- runtime context ---- */
void mag_manual_seed(uint64_t seed);
/* Threads the CPU kernels use, the caller included (default: the CPUs this process may use, after
 * affinity and cgroup quota, or MAGNETRON_NUM_THREADS). Resizing is safe at any time. */
uint32_t mag_num_threads(void);
mag_status_t mag_set_num_threads(uint32_t n);

/* ---- CPU: detection and kernel variants ----
 * The CPU kernels are compiled once per ISA level ("generic", "avx2", "avx512", "avx512_spr";
 * "neon", "neon_bf16" on aarch64). At start-up the best one this CPU and OS run is chosen;
 * MAGNETRON_CPU_VARIANT=<name> forces one ("auto" or empty: the best). */
#define MAG_MAX_CPU_VARIANTS 8

typedef struct mag_cpu_info {
    char vendor[16];                /* CPUID vendor ("GenuineIntel", "AuthenticAMD") or "ARM" */
    char model[64];                 /* brand string ("" where the CPU has none) */
    uint32_t family, model_number, stepping; /* CPUID signature (0 off x86) */
    uint32_t cpus;                  /* CPUs this process may use: the default thread count */
    uint64_t features;              /* bit i set: feature mag_cpu_feature_name(i) is usable (CPU and OS) */
    const char *variant;            /* kernel variant in use; NULL when selection failed */
    uint32_t n_variants;            /* variants built, lowest ISA level first */
    const char *variants[MAG_MAX_CPU_VARIANTS];
    bool variant_runs[MAG_MAX_CPU_VARIANTS]; /* this machine can run variants[i] */
} mag_cpu_info_t;

/* Choose the kernel variant and thread count (done once, by the first op at the latest). Fails with
 * MAG_ERR_VALUE when MAGNETRON_CPU_VARIANT names a variant this build lacks or this machine cannot
 * run (every op then fails: no kernel is selected), or when MAGNETRON_NUM_THREADS is not an
 * integer in [1, 1024] (the default count is used). Later calls return the same outcome. */
mag_status_t mag_cpu_init(void);
/* Fill *out; returns mag_cpu_init()'s status (out is filled either way). */
mag_status_t mag_cpu_info(mag_cpu_info_t *out);
/* Name of CPU feature bit `bit` ("avx2", "amx_tile", "asimddp", ...); NULL past the last. */
const char *mag_cpu_feature_name(uint32_t bit);
/* Live bytes held by tensors and bytes parked in the caching allocator. */
void mag_alloc_stats(size_t *live_bytes, size_t *cached_bytes);
void mag_alloc_trim(void);

/* ---- .mag snapshots (the format: docs/format.md) ----
 *
 * Reading maps the file (or reads it into private memory) and validates the header, the
 * metadata and the tensor directory: every count, length, offset and shape is bounds- and
 * overflow-checked and the header checksum is verified, so a bad file gives MAG_ERR_FORMAT
 * with a message naming the file and the problem. Tensors handed out point into the mapping
 * (read-only) and keep it alive after mag_snapshot_close().
 *
 *     mag_snapshot_t *s;
 *     if (mag_snapshot_open("model.mag", MAG_SNAPSHOT_MMAP, &s) != MAG_OK) puts(mag_last_error());
 *     for (int64_t i = 0; i < mag_snapshot_tensor_count(s); ++i) {
 *         mag_tensor_t *t;
 *         mag_snapshot_tensor(s, i, &t);  // zero copy
 *         ...
 *         mag_tensor_release(t);
 *     }
 *     mag_snapshot_close(s);
 *
 * Writing is atomic: data goes to a temporary file in the target's directory, which is
 * fsync'ed and renamed into place by mag_snapshot_write_commit(); any failure (or
 * mag_snapshot_write_abort()) removes it. Declare every tensor first (the layout is fixed by
 * then), then write each one's data, then commit:
 *
 *     mag_snapshot_writer_t *w;
 *     int64_t i;
 *     mag_snapshot_write_begin("out.mag", &w);
 *     mag_snapshot_write_metadata(w, "general.architecture", &(mag_value_t){.type = MAG_VALUE_STRING,
 *                                 .len = 4, .str = "gpt2"});
 *     mag_snapshot_write_declare(w, "wte.weight", MAG_DTYPE_FLOAT32, 2, shape, &i);
 *     mag_snapshot_write_tensor(w, i, t);
 *     mag_snapshot_write_commit(w);  // frees w, whatever happens
 */
#define MAG_SNAPSHOT_VERSION 1
#define MAG_SNAPSHOT_ALIGNMENT 64 /* what the writer uses; readers accept any power of two in [64, 65536] */

/* CRC32C (Castagnoli): hardware instructions when the CPU has them. Start with crc = 0. */
uint32_t mag_crc32c(uint32_t crc, const void *data, size_t n);
uint32_t mag_crc32c_portable(uint32_t crc, const void *data, size_t n); /* the table path, for tests */
const char *mag_crc32c_impl(void);                                      /* "sse4.2", "armv8-crc" or "table" */

/* Metadata values. Codes are the format's (docs/format.md) and never change. */
typedef enum mag_value_type {
    MAG_VALUE_U64 = 0,
    MAG_VALUE_I64 = 1,
    MAG_VALUE_F64 = 2,
    MAG_VALUE_BOOL = 3,
    MAG_VALUE_STRING = 4, /* UTF-8, not NUL-terminated */
    MAG_VALUE_BYTES = 5,
    MAG_VALUE_ARRAY = 6,  /* of one non-array type */
} mag_value_type_t;

typedef struct mag_value {
    mag_value_type_t type;
    mag_value_type_t elem_type; /* ARRAY: the type of every element */
    uint64_t len;               /* STRING/BYTES: bytes; ARRAY: elements */
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        bool b;
        const char *str;                /* STRING/BYTES */
        const struct mag_value *items;  /* ARRAY */
    };
} mag_value_t;

typedef struct mag_snapshot mag_snapshot_t;

typedef struct mag_snapshot_tensor_info {
    const char *name; /* NUL-terminated UTF-8 */
    mag_dtype_t dtype;
    int64_t rank;
    int64_t shape[MAG_MAX_RANK];
    uint64_t offset; /* absolute file offset of the data */
    uint64_t nbytes;
    uint32_t crc32c; /* of the data bytes */
} mag_snapshot_tensor_info_t;

enum {
    MAG_SNAPSHOT_MMAP = 1 << 0,   /* map read-only (else read into private, writable memory) */
    MAG_SNAPSHOT_VERIFY = 1 << 1, /* also verify every tensor's data checksum now */
};

mag_status_t mag_snapshot_open(const char *path, uint32_t flags, mag_snapshot_t **out);
/* Frees the directory and metadata; tensors already handed out stay valid. */
void mag_snapshot_close(mag_snapshot_t *s);
uint32_t mag_snapshot_version(const mag_snapshot_t *s);
const char *mag_snapshot_path(const mag_snapshot_t *s);
/* Base address and size of the mapped (or read) file. */
void mag_snapshot_bytes(const mag_snapshot_t *s, const void **base, size_t *nbytes);
int64_t mag_snapshot_tensor_count(const mag_snapshot_t *s);
/* Directory entry i (in file order); NULL when i is out of range. */
const mag_snapshot_tensor_info_t *mag_snapshot_tensor_info(const mag_snapshot_t *s, int64_t i);
/* The index of the tensor called `name`, or -1. */
int64_t mag_snapshot_find(const mag_snapshot_t *s, const char *name);
/* Tensor i, pointing into the file's memory (read-only when mapped). */
mag_status_t mag_snapshot_tensor(mag_snapshot_t *s, int64_t i, mag_tensor_t **out);
int64_t mag_snapshot_metadata_count(const mag_snapshot_t *s);
/* Key and value of metadata entry i; the pointers live as long as the snapshot. */
mag_status_t mag_snapshot_metadata_at(const mag_snapshot_t *s, int64_t i, const char **key, const mag_value_t **value);
/* Recompute tensor i's data checksum (MAG_ERR_FORMAT on a mismatch); i = -1 checks every tensor. */
mag_status_t mag_snapshot_verify(const mag_snapshot_t *s, int64_t i);

typedef struct mag_snapshot_writer mag_snapshot_writer_t;

mag_status_t mag_snapshot_write_begin(const char *path, mag_snapshot_writer_t **out);
/* Copies key and value. Keys are non-empty UTF-8 without NUL, unique; allowed until the first write. */
mag_status_t mag_snapshot_write_metadata(mag_snapshot_writer_t *w, const char *key, const mag_value_t *value);
/* Reserve room for a tensor; *index is what mag_snapshot_write_tensor takes. Names are unique. */
mag_status_t mag_snapshot_write_declare(mag_snapshot_writer_t *w, const char *name, mag_dtype_t dt, int64_t rank,
                                        const int64_t *shape, int64_t *index);
/* Write the data of declared tensor `index` (t must have its dtype and shape; any layout). */
mag_status_t mag_snapshot_write_tensor(mag_snapshot_writer_t *w, int64_t index, mag_tensor_t *t);
/* Write the header and directory, fsync and rename into place. Frees w in every case. */
mag_status_t mag_snapshot_write_commit(mag_snapshot_writer_t *w);
/* Remove the temporary file and free w. */
void mag_snapshot_write_abort(mag_snapshot_writer_t *w);

#ifdef __cplusplus
}
#endif
#endif
