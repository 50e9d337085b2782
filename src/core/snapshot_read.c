/*
 * The .mag reader. The file is mapped (or read) whole, then the header, metadata and tensor
 * directory are parsed with a cursor that checks every length against the bytes that are left
 * and every count against the smallest encoding it could have, before anything is allocated.
 * Tensors point into the file's memory; the memory is reference counted, so it lives as long
 * as the last tensor (or the snapshot) that uses it.
 */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct mapping {
    atomic_int_fast64_t refcount;
    uint8_t *base;
    size_t size;
    bool mapped; /* else a private heap copy */
} mapping_t;

struct mag_snapshot {
    mapping_t *map;
    char *path;
    uint32_t version;
    int64_t n_meta, n_tensors;
    char **keys;
    mag_value_t *values;
    mag_snapshot_tensor_info_t *tensors;
};

static void mapping_release(void *ctx) {
    mapping_t *m = ctx;
    if (atomic_fetch_sub(&m->refcount, 1) != 1) return;
    if (m->mapped) munmap(m->base, m->size);
    else free(m->base);
    free(m);
}

/* ---- the cursor ---- */
typedef struct reader {
    const char *path;
    const uint8_t *file;
    uint64_t pos, end; /* absolute offsets; end = end of the index */
} reader_t;

static mag_status_t bad(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static mag_status_t bad(const char *path, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return mag_error(MAG_ERR_FORMAT, "load: '%s': %s", path, msg);
}

static mag_status_t need(reader_t *r, uint64_t n, const char *what) {
    if (n > r->end - r->pos)
        return bad(r->path, "%s at byte %llu needs %llu bytes but the index ends %llu bytes later", what,
                   (unsigned long long)r->pos, (unsigned long long)n, (unsigned long long)(r->end - r->pos));
    return MAG_OK;
}

static mag_status_t rd_u32(reader_t *r, const char *what, uint32_t *v) {
    MAG_TRY(need(r, 4, what));
    *v = snap_rd32(r->file + r->pos);
    r->pos += 4;
    return MAG_OK;
}

static mag_status_t rd_u64(reader_t *r, const char *what, uint64_t *v) {
    MAG_TRY(need(r, 8, what));
    *v = snap_rd64(r->file + r->pos);
    r->pos += 8;
    return MAG_OK;
}

static mag_status_t rd_bytes(reader_t *r, const char *what, const uint8_t **s, uint64_t *n) {
    MAG_TRY(rd_u64(r, what, n));
    MAG_TRY(need(r, *n, what));
    *s = r->file + r->pos;
    r->pos += *n;
    return MAG_OK;
}

/* A key or tensor name, copied out NUL-terminated. */
static mag_status_t rd_name(reader_t *r, const char *what, int64_t i, char **out) {
    const uint8_t *s;
    uint64_t n;
    MAG_TRY(rd_bytes(r, what, &s, &n));
    if (!mag_snap_valid_name(s, n))
        return bad(r->path, "%s %lld is not 1..%d bytes of UTF-8 without NUL (%llu bytes at byte %llu)", what,
                   (long long)i, SNAP_MAX_NAME, (unsigned long long)n, (unsigned long long)(r->pos - n));
    *out = malloc(n + 1);
    if (!*out) return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    memcpy(*out, s, n);
    (*out)[n] = 0;
    return MAG_OK;
}

/* ---- metadata ---- */
static mag_status_t rd_scalar(reader_t *r, const char *key, uint32_t type, mag_value_t *v) {
    v->type = (mag_value_type_t)type;
    switch (type) {
    case MAG_VALUE_U64:
    case MAG_VALUE_I64:
    case MAG_VALUE_F64: return rd_u64(r, key, &v->u64); /* the union shares the 8 bytes */
    case MAG_VALUE_BOOL:
        MAG_TRY(need(r, 1, key));
        if (r->file[r->pos] > 1)
            return bad(r->path, "metadata '%s': a bool must be 0 or 1, found %u", key, r->file[r->pos]);
        v->b = r->file[r->pos++] != 0;
        return MAG_OK;
    case MAG_VALUE_STRING:
    case MAG_VALUE_BYTES: {
        const uint8_t *s;
        MAG_TRY(rd_bytes(r, key, &s, &v->len));
        v->str = (const char *)s;
        return MAG_OK;
    }
    default: return bad(r->path, "metadata '%s': unknown value type %u", key, type);
    }
}

static mag_status_t rd_value(reader_t *r, const char *key, mag_value_t *v) {
    uint32_t type;
    MAG_TRY(rd_u32(r, key, &type));
    if (type != MAG_VALUE_ARRAY) return rd_scalar(r, key, type, v);
    uint32_t elem;
    uint64_t count;
    MAG_TRY(rd_u32(r, key, &elem));
    if (elem == MAG_VALUE_ARRAY) return bad(r->path, "metadata '%s': arrays of arrays are not allowed", key);
    if (elem > MAG_VALUE_ARRAY) return bad(r->path, "metadata '%s': unknown array element type %u", key, elem);
    MAG_TRY(rd_u64(r, key, &count));
    uint64_t min_size = elem == MAG_VALUE_BOOL ? 1 : 8;
    if (count > (r->end - r->pos) / min_size)
        return bad(r->path, "metadata '%s': an array of %llu elements cannot fit in the %llu bytes left in the index",
                   key, (unsigned long long)count, (unsigned long long)(r->end - r->pos));
    v->type = MAG_VALUE_ARRAY;
    v->elem_type = (mag_value_type_t)elem;
    v->len = count;
    v->items = NULL;
    if (!count) return MAG_OK;
    mag_value_t *items = calloc(count, sizeof(*items));
    if (!items) return mag_error(MAG_ERR_MEMORY, "load: out of memory for metadata '%s'", key);
    v->items = items;
    for (uint64_t i = 0; i < count; ++i) MAG_TRY(rd_scalar(r, key, elem, &items[i]));
    return MAG_OK;
}

/* ---- tensor directory ---- */
static mag_status_t rd_tensor(reader_t *r, int64_t i, uint64_t data_offset, uint64_t data_size, uint32_t alignment,
                              mag_snapshot_tensor_info_t *t) {
    MAG_TRY(rd_name(r, "tensor name", i, (char **)&t->name));
    const char *nm = t->name;
    uint32_t code, rank;
    MAG_TRY(rd_u32(r, nm, &code));
    if (!mag_snap_dtype_from_code(code, &t->dtype)) return bad(r->path, "tensor '%s': unknown dtype code %u", nm, code);
    MAG_TRY(rd_u32(r, nm, &rank));
    if (rank > MAG_MAX_RANK) return bad(r->path, "tensor '%s': rank %u exceeds %d", nm, rank, MAG_MAX_RANK);
    t->rank = rank;
    int64_t numel = 1;
    bool overflow = false, empty = false;
    for (uint32_t d = 0; d < rank; ++d) {
        uint64_t dim;
        MAG_TRY(rd_u64(r, nm, &dim));
        if (dim > (uint64_t)INT64_MAX) return bad(r->path, "tensor '%s': dimension %u is %llu", nm, d, (unsigned long long)dim);
        t->shape[d] = (int64_t)dim;
        empty |= dim == 0;
        overflow |= __builtin_mul_overflow(numel, t->shape[d], &numel);
    }
    uint64_t rel, expected;
    MAG_TRY(rd_u64(r, nm, &rel));
    MAG_TRY(rd_u64(r, nm, &t->nbytes));
    MAG_TRY(rd_u32(r, nm, &t->crc32c));
    if (empty) numel = 0, overflow = false; /* a zero dim empties any product */
    if (overflow || __builtin_mul_overflow((uint64_t)numel, (uint64_t)mag_dtype_info(t->dtype)->size, &expected))
        return bad(r->path, "tensor '%s': shape %s has more elements than can be addressed", nm,
                   mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, t->rank, t->shape));
    if (t->nbytes != expected)
        return bad(r->path, "tensor '%s': byte length %llu does not match shape %s of %s (%llu bytes)", nm,
                   (unsigned long long)t->nbytes, mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, t->rank, t->shape),
                   MAG_DTNAME(t->dtype), (unsigned long long)expected);
    if (rel % alignment)
        return bad(r->path, "tensor '%s': data offset %llu is not a multiple of the alignment %u", nm,
                   (unsigned long long)rel, alignment);
    if (rel > data_size || t->nbytes > data_size - rel)
        return bad(r->path, "tensor '%s': data [%llu, %llu + %llu) lies outside the %llu-byte data section", nm,
                   (unsigned long long)rel, (unsigned long long)rel, (unsigned long long)t->nbytes,
                   (unsigned long long)data_size);
    t->offset = data_offset + rel;
    return MAG_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const mag_snapshot_tensor_info_t *x = *(mag_snapshot_tensor_info_t *const *)a, *y = *(mag_snapshot_tensor_info_t *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static mag_status_t check_overlaps(const mag_snapshot_t *s) {
    mag_snapshot_tensor_info_t **byoff = malloc((size_t)(s->n_tensors ? s->n_tensors : 1) * sizeof(*byoff));
    if (!byoff) return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    int64_t n = 0;
    for (int64_t i = 0; i < s->n_tensors; ++i)
        if (s->tensors[i].nbytes) byoff[n++] = &s->tensors[i];
    qsort(byoff, (size_t)n, sizeof(*byoff), cmp_offset);
    mag_status_t st = MAG_OK;
    for (int64_t i = 1; i < n && st == MAG_OK; ++i)
        if (byoff[i - 1]->offset + byoff[i - 1]->nbytes > byoff[i]->offset)
            st = bad(s->path, "tensors '%s' and '%s' overlap in the data section", byoff[i - 1]->name, byoff[i]->name);
    free(byoff);
    return st;
}

/* ---- header ---- */
static mag_status_t parse(mag_snapshot_t *s) {
    const uint8_t *f = s->map->base;
    uint64_t size = s->map->size;
    const char *path = s->path;
    if (memcmp(f, SNAP_MAGIC, 8)) return bad(path, "not a .mag snapshot (bad magic bytes)");
    s->version = snap_rd32(f + SNAP_H_VERSION);
    if (s->version != MAG_SNAPSHOT_VERSION)
        return bad(path, "format version %u is not supported (this reader knows version %d)", s->version,
                   MAG_SNAPSHOT_VERSION);
    uint32_t flags = snap_rd32(f + SNAP_H_FLAGS), alignment = snap_rd32(f + SNAP_H_ALIGNMENT);
    if (flags) return bad(path, "unknown header flags 0x%x", flags);
    if (alignment < SNAP_MIN_ALIGN || alignment > SNAP_MAX_ALIGN || (alignment & (alignment - 1)))
        return bad(path, "alignment %u is not a power of two in [%d, %d]", alignment, SNAP_MIN_ALIGN, SNAP_MAX_ALIGN);
    uint64_t n_meta = snap_rd64(f + SNAP_H_METADATA_COUNT), n_tensors = snap_rd64(f + SNAP_H_TENSOR_COUNT);
    uint64_t index_size = snap_rd64(f + SNAP_H_INDEX_SIZE), data_offset = snap_rd64(f + SNAP_H_DATA_OFFSET);
    uint64_t data_size = snap_rd64(f + SNAP_H_DATA_SIZE);
    if (data_offset > size || data_size > size - data_offset)
        return bad(path, "the file is truncated: the header describes %llu + %llu bytes, the file has %llu",
                   (unsigned long long)data_offset, (unsigned long long)data_size, (unsigned long long)size);
    if (data_offset + data_size != size)
        return bad(path, "%llu unexpected bytes after the data section", (unsigned long long)(size - data_offset - data_size));
    if (data_offset < SNAP_HEADER_SIZE || index_size > data_offset - SNAP_HEADER_SIZE)
        return bad(path, "the index (%llu bytes) overruns the data section at byte %llu", (unsigned long long)index_size,
                   (unsigned long long)data_offset);
    if (data_offset % alignment)
        return bad(path, "data offset %llu is not a multiple of the alignment %u", (unsigned long long)data_offset, alignment);
    uint32_t stored = snap_rd32(f + SNAP_CRC_FIELD), crc = mag_snap_header_crc(f, data_offset);
    if (stored != crc)
        return bad(path, "header checksum mismatch (stored 0x%08x, computed 0x%08x): the header or directory is corrupt",
                   stored, crc);
    for (uint64_t p = SNAP_HEADER_SIZE + index_size; p < data_offset; ++p)
        if (f[p]) return bad(path, "non-zero padding byte at %llu before the data section", (unsigned long long)p);
    if (n_meta > index_size / SNAP_MIN_KV_SIZE || n_tensors > index_size / SNAP_MIN_TENSOR_SIZE)
        return bad(path, "%llu metadata entries and %llu tensors cannot fit in a %llu-byte index",
                   (unsigned long long)n_meta, (unsigned long long)n_tensors, (unsigned long long)index_size);

    s->keys = calloc(n_meta ? n_meta : 1, sizeof(*s->keys));
    s->values = calloc(n_meta ? n_meta : 1, sizeof(*s->values));
    s->tensors = calloc(n_tensors ? n_tensors : 1, sizeof(*s->tensors));
    if (!s->keys || !s->values || !s->tensors) return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    reader_t r = {.path = path, .file = f, .pos = SNAP_HEADER_SIZE, .end = SNAP_HEADER_SIZE + index_size};
    for (uint64_t i = 0; i < n_meta; ++i) {
        MAG_TRY(rd_name(&r, "metadata key", (int64_t)i, &s->keys[i]));
        s->n_meta = (int64_t)i + 1; /* owns keys[i] (and values[i]'s items) from here on */
        MAG_TRY(rd_value(&r, s->keys[i], &s->values[i]));
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
        s->n_tensors = (int64_t)i + 1;
        MAG_TRY(rd_tensor(&r, (int64_t)i, data_offset, data_size, alignment, &s->tensors[i]));
    }
    if (r.pos != r.end)
        return bad(path, "%llu bytes of the index are left over after the last tensor entry",
                   (unsigned long long)(r.end - r.pos));
    const char *dup = mag_snap_find_duplicate((const char *const *)s->keys, s->n_meta);
    if (dup) return bad(path, "metadata key '%s' appears twice", dup);
    const char **names = malloc((size_t)(s->n_tensors ? s->n_tensors : 1) * sizeof(*names));
    if (!names) return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    for (int64_t i = 0; i < s->n_tensors; ++i) names[i] = s->tensors[i].name;
    dup = mag_snap_find_duplicate(names, s->n_tensors);
    free(names);
    if (dup) return bad(path, "tensor name '%s' appears twice", dup);
    return check_overlaps(s);
}

/* ---- opening ---- */
static mag_status_t read_whole(int fd, const char *path, size_t size, uint8_t **out) {
    uint8_t *buf = NULL;
    /* 2 MiB pages where the OS gives them, as for a mapping: the weights stream faster (snapshot_write.c) */
    size_t align = size >= ((size_t)2 << 20) ? (size_t)2 << 20 : 4096;
    if (posix_memalign((void **)&buf, align, size ? size : 1))
        return mag_error(MAG_ERR_MEMORY, "load: out of memory reading %zu bytes of '%s'", size, path);
#if defined(MADV_HUGEPAGE)
    if (align > 4096) madvise(buf, size, MADV_HUGEPAGE);
#endif
    for (size_t done = 0; done < size;) {
        ssize_t n = pread(fd, buf + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            free(buf);
            return mag_error_io(err, "load: reading '%s'", path);
        }
        done += (size_t)n;
    }
    *out = buf;
    return MAG_OK;
}

static mag_status_t map_file(const char *path, bool use_mmap, mapping_t **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mag_error_io(errno, "load: cannot open '%s'", path);
    struct stat st;
    if (fstat(fd, &st)) {
        int err = errno;
        close(fd);
        return mag_error_io(err, "load: cannot stat '%s'", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return mag_error_io(S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "load: '%s' is not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size < SNAP_HEADER_SIZE) {
        close(fd);
        return bad(path, "the file is %zu bytes, shorter than the %d-byte header", size, SNAP_HEADER_SIZE);
    }
    uint8_t *base = NULL;
    mag_status_t s = MAG_OK;
    if (use_mmap) {
        base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) s = mag_error_io(errno, "load: cannot map '%s'", path);
#if defined(MADV_HUGEPAGE)
        /* decode streams every weight once per token: 2 MiB pages spare it the 4 KiB pages' TLB misses */
        else madvise(base, size, MADV_HUGEPAGE);
#endif
    } else {
        s = read_whole(fd, path, size, &base);
    }
    close(fd);
    if (s != MAG_OK) return s;
    mapping_t *m = malloc(sizeof(*m));
    if (!m) {
        if (use_mmap) munmap(base, size);
        else free(base);
        return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    }
    atomic_init(&m->refcount, 1);
    m->base = base;
    m->size = size;
    m->mapped = use_mmap;
    *out = m;
    return MAG_OK;
}

mag_status_t mag_snapshot_open(const char *path, uint32_t flags, mag_snapshot_t **out) {
    mag_snapshot_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return mag_error(MAG_ERR_MEMORY, "load: out of memory");
    }
    mag_status_t st = map_file(path, flags & MAG_SNAPSHOT_MMAP, &s->map);
    if (st == MAG_OK) st = parse(s);
    if (st == MAG_OK && (flags & MAG_SNAPSHOT_VERIFY)) st = mag_snapshot_verify(s, -1);
    if (st != MAG_OK) {
        mag_snapshot_close(s);
        return st;
    }
    *out = s;
    return MAG_OK;
}

void mag_snapshot_close(mag_snapshot_t *s) {
    if (!s) return;
    for (int64_t i = 0; i < s->n_meta; ++i) {
        free(s->keys[i]);
        if (s->values[i].type == MAG_VALUE_ARRAY) free((void *)s->values[i].items);
    }
    for (int64_t i = 0; i < s->n_tensors; ++i) free((void *)s->tensors[i].name);
    free(s->keys);
    free(s->values);
    free(s->tensors);
    if (s->map) mapping_release(s->map);
    free(s->path);
    free(s);
}

/* ---- queries ---- */
uint32_t mag_snapshot_version(const mag_snapshot_t *s) { return s->version; }
const char *mag_snapshot_path(const mag_snapshot_t *s) { return s->path; }
int64_t mag_snapshot_tensor_count(const mag_snapshot_t *s) { return s->n_tensors; }
int64_t mag_snapshot_metadata_count(const mag_snapshot_t *s) { return s->n_meta; }

void mag_snapshot_bytes(const mag_snapshot_t *s, const void **base, size_t *nbytes) {
    *base = s->map->base;
    *nbytes = s->map->size;
}

const mag_snapshot_tensor_info_t *mag_snapshot_tensor_info(const mag_snapshot_t *s, int64_t i) {
    return i >= 0 && i < s->n_tensors ? &s->tensors[i] : NULL;
}

int64_t mag_snapshot_find(const mag_snapshot_t *s, const char *name) {
    for (int64_t i = 0; i < s->n_tensors; ++i)
        if (!strcmp(s->tensors[i].name, name)) return i;
    return -1;
}

static mag_status_t check_index(const char *what, int64_t i, int64_t n) {
    if (i < 0 || i >= n)
        return mag_error(MAG_ERR_INDEX, "%s: index %lld is out of range for %lld entries", what, (long long)i, (long long)n);
    return MAG_OK;
}

mag_status_t mag_snapshot_metadata_at(const mag_snapshot_t *s, int64_t i, const char **key, const mag_value_t **value) {
    MAG_TRY(check_index("snapshot metadata", i, s->n_meta));
    *key = s->keys[i];
    *value = &s->values[i];
    return MAG_OK;
}

mag_status_t mag_snapshot_tensor(mag_snapshot_t *s, int64_t i, mag_tensor_t **out) {
    MAG_TRY(check_index("snapshot tensor", i, s->n_tensors));
    const mag_snapshot_tensor_info_t *t = &s->tensors[i];
    atomic_fetch_add(&s->map->refcount, 1);
    mag_status_t st = mag_tensor_borrow(s->map->base + t->offset, t->nbytes, t->dtype, t->rank, t->shape, NULL,
                                        s->map->mapped, s->map->mapped ? MAG_OWNER_MAPPED : MAG_OWNER_HEAP,
                                        mapping_release, s->map, out);
    if (st != MAG_OK) mapping_release(s->map);
    return st;
}

mag_status_t mag_snapshot_verify(const mag_snapshot_t *s, int64_t i) {
    if (i < 0) {
        for (int64_t k = 0; k < s->n_tensors; ++k) MAG_TRY(mag_snapshot_verify(s, k));
        return MAG_OK;
    }
    MAG_TRY(check_index("snapshot verify", i, s->n_tensors));
    const mag_snapshot_tensor_info_t *t = &s->tensors[i];
    uint32_t crc = mag_crc32c(0, s->map->base + t->offset, t->nbytes);
    if (crc != t->crc32c)
        return bad(s->path, "tensor '%s': data checksum mismatch (stored 0x%08x, computed 0x%08x)", t->name, t->crc32c,
                   crc);
    return MAG_OK;
}
