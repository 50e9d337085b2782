// Zero-copy interop: the buffer protocol (both directions) and DLPack (both directions).
#include "common.h"

#include <cstdlib>
#include <cstring>

// ---- DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html) ----
extern "C" {
struct DLDevice {
    int32_t device_type; // kDLCPU = 1
    int32_t device_id;
};
struct DLDataType {
    uint8_t code; // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
    uint8_t bits;
    uint16_t lanes;
};
struct DLTensor {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
};
struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(DLManagedTensor *);
};
struct DLPackVersion {
    uint32_t major, minor;
};
struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(DLManagedTensorVersioned *);
    uint64_t flags;
    DLTensor dl_tensor;
};
}
enum { kDLCPU = 1, kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };
static constexpr uint64_t DLPACK_FLAG_READ_ONLY = 1;

static DLDataType dl_dtype(mag_dtype_t dt) {
    const mag_dtype_info_t *i = mag_dtype_info(dt);
    uint8_t code = dt == MAG_DTYPE_BFLOAT16               ? kDLBfloat
                   : (i->flags & MAG_DTF_FLOAT)           ? kDLFloat
                   : (i->flags & MAG_DTF_BOOL)            ? kDLBool
                   : (i->flags & MAG_DTF_UNSIGNED_INT)    ? kDLUInt
                                                          : kDLInt;
    return DLDataType{code, (uint8_t)(i->size * 8), 1};
}

static bool from_dl_dtype(DLDataType d, mag_dtype_t *out) {
    if (d.lanes != 1) return false;
    for (int i = 0; i < MAG_DTYPE__COUNT; ++i) {
        DLDataType c = dl_dtype((mag_dtype_t)i);
        if (c.code == d.code && c.bits == d.bits) {
            *out = (mag_dtype_t)i;
            return true;
        }
    }
    return false;
}

// ---- export: __dlpack__ ----
// One allocation holds the managed struct and the shape/stride arrays; manager_ctx owns a tensor reference.
template <class M> static M *new_managed(mag_tensor_t *t, int64_t **shape, int64_t **strides) {
    int64_t rank = mag_tensor_rank(t);
    M *m = (M *)std::calloc(1, sizeof(M) + 2 * (size_t)(rank ? rank : 1) * sizeof(int64_t));
    if (!m) throw std::bad_alloc();
    *shape = (int64_t *)(m + 1);
    *strides = *shape + (rank ? rank : 1);
    std::memcpy(*shape, mag_tensor_shape(t), (size_t)rank * sizeof(int64_t));
    std::memcpy(*strides, mag_tensor_strides(t), (size_t)rank * sizeof(int64_t));
    mag_tensor_retain(t);
    m->manager_ctx = t;
    return m;
}

static DLTensor dl_view(mag_tensor_t *t, int64_t *shape, int64_t *strides) {
    DLTensor d{};
    d.data = mag_tensor_data(t);
    d.device = DLDevice{kDLCPU, 0};
    d.ndim = (int32_t)mag_tensor_rank(t);
    d.dtype = dl_dtype(mag_tensor_dtype(t));
    d.shape = shape;
    d.strides = strides;
    return d;
}

template <class M> static void managed_delete(M *m) {
    mag_tensor_release((mag_tensor_t *)m->manager_ctx);
    std::free(m);
}

template <class M> static void capsule_destructor(PyObject *cap, const char *name) {
    if (!PyCapsule_IsValid(cap, name)) return; // consumed: renamed "used_..." by the importer
    M *m = (M *)PyCapsule_GetPointer(cap, name);
    if (m && m->deleter) m->deleter(m);
}

static void legacy_destructor(PyObject *cap) { capsule_destructor<DLManagedTensor>(cap, "dltensor"); }
static void versioned_destructor(PyObject *cap) { capsule_destructor<DLManagedTensorVersioned>(cap, "dltensor_versioned"); }

static nb::object to_dlpack(Tensor &self, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
    (void)stream;
    if (!dl_device.is_none()) {
        auto dev = nb::cast<nb::tuple>(dl_device);
        if (nb::cast<int>(dev[0]) != kDLCPU) raise_error(PyExc_BufferError, "__dlpack__: only CPU export is supported");
    }
    mag_tensor_t *t = self.t;
    bool has_negative = false;
    for (int64_t i = 0; i < mag_tensor_rank(t); ++i) has_negative |= mag_tensor_strides(t)[i] < 0;
    bool force_copy = !copy.is_none() && nb::cast<bool>(copy);
    if ((has_negative || force_copy)) { // many consumers reject negative strides: hand out a copy
        if (!copy.is_none() && !force_copy)
            raise_error(PyExc_BufferError, "__dlpack__: negative strides need a copy, but copy=False was requested");
        check(mag_tensor_cast(t, mag_tensor_dtype(t), &t));
    } else {
        mag_tensor_retain(t);
    }
    Tensor guard(t);
    bool versioned = false;
    if (!max_version.is_none()) versioned = nb::cast<int>(nb::cast<nb::tuple>(max_version)[0]) >= 1;
    if (!versioned && mag_tensor_is_read_only(t)) // legacy capsules cannot say "read-only" (NumPy refuses too)
        raise_error(PyExc_BufferError, "__dlpack__: a read-only tensor can only be exported as DLPack >= 1.0 "
                                       "(pass max_version=(1, 0)), or clone() it first");
    int64_t *shape, *strides;
    if (versioned) {
        auto *m = new_managed<DLManagedTensorVersioned>(t, &shape, &strides);
        m->version = DLPackVersion{1, 0};
        m->deleter = managed_delete<DLManagedTensorVersioned>;
        m->flags = mag_tensor_is_read_only(t) ? DLPACK_FLAG_READ_ONLY : 0;
        m->dl_tensor = dl_view(t, shape, strides);
        return nb::steal(PyCapsule_New(m, "dltensor_versioned", versioned_destructor));
    }
    auto *m = new_managed<DLManagedTensor>(t, &shape, &strides);
    m->deleter = managed_delete<DLManagedTensor>;
    m->dl_tensor = dl_view(t, shape, strides);
    return nb::steal(PyCapsule_New(m, "dltensor", legacy_destructor));
}

// ---- import: from_dlpack ----
template <class M> static void call_deleter(void *ctx) {
    M *m = (M *)ctx;
    if (m->deleter) m->deleter(m);
}

static mag_tensor_t *borrow_dl(const DLTensor &d, bool read_only, void (*del)(void *), void *ctx) {
    if (d.device.device_type != kDLCPU) {
        del(ctx);
        raise_error(PyExc_BufferError, "from_dlpack: only CPU tensors can be imported (device type %d)", d.device.device_type);
    }
    mag_dtype_t dt;
    if (!from_dl_dtype(d.dtype, &dt)) {
        del(ctx);
        raise_error(PyExc_TypeError, "from_dlpack: unsupported DLPack dtype (code %d, %d bits, %d lanes)", d.dtype.code,
                    d.dtype.bits, d.dtype.lanes);
    }
    int64_t rank = d.ndim, strides[MAG_MAX_RANK], lo = 0, hi = 1;
    if (rank < 0 || rank > MAG_MAX_RANK) {
        del(ctx);
        raise_error(PyExc_ValueError, "from_dlpack: rank %lld is not supported", (long long)rank);
    }
    int64_t acc = 1, es = (int64_t)mag_dtype_info(dt)->size;
    bool empty = false, bad = false; // bad: a negative size, or a span that overflows 64 bits (a hostile producer)
    for (int64_t i = rank - 1; i >= 0; --i) { // strides may be NULL (compact row-major)
        strides[i] = d.strides ? d.strides[i] : acc;
        bad |= d.shape[i] < 0 || __builtin_mul_overflow(acc, d.shape[i], &acc);
    }
    for (int64_t i = 0; i < rank && !bad; ++i) {
        empty |= d.shape[i] == 0;
        int64_t ext;
        bad |= __builtin_mul_overflow(d.shape[i] - 1, strides[i], &ext) ||
               __builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi);
    }
    int64_t span_bytes;
    if (bad || __builtin_mul_overflow(hi - lo, es, &span_bytes)) {
        del(ctx);
        raise_error(PyExc_ValueError, "from_dlpack: the producer's shape and strides do not describe valid memory");
    }
    uint8_t *first = (uint8_t *)d.data + d.byte_offset;
    uint8_t *base = empty ? first : first + lo * es;
    size_t nbytes = empty ? 0 : (size_t)span_bytes;
    // borrow the exact span, then view into it at the first element's position
    mag_tensor_t *span = nullptr;
    int64_t n = (int64_t)(nbytes / (size_t)es);
    mag_status_t s = mag_tensor_borrow(base, nbytes, dt, 1, &n, nullptr, read_only, MAG_OWNER_BORROWED, del, ctx, &span);
    if (s != MAG_OK) {
        del(ctx);
        check(s);
    }
    Tensor guard(span);
    mag_tensor_t *out = nullptr;
    check(mag_tensor_as_strided(span, rank, d.shape, strides, empty ? 0 : -lo, &out));
    return out;
}

mag_tensor_t *tensor_from_dlpack(nb::handle obj) {
    if (!nb::hasattr(obj, "__dlpack__"))
        raise_error(PyExc_TypeError, "from_dlpack: %s is not a DLPack producer (it has no __dlpack__)",
                    Py_TYPE(obj.ptr())->tp_name);
    nb::object cap;
    try {
        cap = obj.attr("__dlpack__")(nb::arg("max_version") = nb::make_tuple(1, 0));
    } catch (nb::python_error &e) {
        if (!e.matches(PyExc_TypeError)) throw;
        cap = obj.attr("__dlpack__")();
    }
    PyObject *c = cap.ptr();
    if (PyCapsule_IsValid(c, "dltensor_versioned")) {
        auto *m = (DLManagedTensorVersioned *)PyCapsule_GetPointer(c, "dltensor_versioned");
        if (m->version.major > 1) raise_error(PyExc_BufferError, "from_dlpack: DLPack %u.x is not supported", m->version.major);
        PyCapsule_SetName(c, "used_dltensor_versioned");
        return borrow_dl(m->dl_tensor, m->flags & DLPACK_FLAG_READ_ONLY, call_deleter<DLManagedTensorVersioned>, m);
    }
    if (PyCapsule_IsValid(c, "dltensor")) {
        auto *m = (DLManagedTensor *)PyCapsule_GetPointer(c, "dltensor");
        PyCapsule_SetName(c, "used_dltensor");
        return borrow_dl(m->dl_tensor, false, call_deleter<DLManagedTensor>, m);
    }
    raise_error(PyExc_TypeError, "from_dlpack: __dlpack__ did not return a DLPack capsule");
}

// ---- the buffer protocol ----
static const char *buffer_format(mag_dtype_t dt) {
    switch (dt) {
    case MAG_DTYPE_FLOAT32: return "f";
    case MAG_DTYPE_FLOAT16: return "e";
    case MAG_DTYPE_FLOAT64: return "d";
    case MAG_DTYPE_BOOLEAN: return "?";
    case MAG_DTYPE_INT8: return "b";
    case MAG_DTYPE_UINT8: return "B";
    case MAG_DTYPE_INT16: return "h";
    case MAG_DTYPE_UINT16: return "H";
    case MAG_DTYPE_INT32: return "i";
    case MAG_DTYPE_UINT32: return "I";
    case MAG_DTYPE_INT64: return "q";
    case MAG_DTYPE_UINT64: return "Q";
    default: return nullptr; // bfloat16 has no buffer format
    }
}

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Tensor *t = nb::inst_ptr<Tensor>(self);
    mag_dtype_t dt = mag_tensor_dtype(t->t);
    const char *fmt = buffer_format(dt);
    if (!fmt) {
        PyErr_SetString(PyExc_BufferError, "bfloat16 has no buffer-protocol format: use .cast(float32) or DLPack");
        return -1;
    }
    if ((flags & PyBUF_WRITABLE) && mag_tensor_is_read_only(t->t)) {
        PyErr_SetString(PyExc_BufferError, "the tensor is read-only (memory-mapped); clone() it first");
        return -1;
    }
    int64_t rank = mag_tensor_rank(t->t), es = (int64_t)mag_dtype_info(dt)->size, long_dims = 0;
    for (int64_t i = 0; i < rank; ++i) long_dims += mag_tensor_shape(t->t)[i] > 1;
    // consumers that take no strides, or ask for a contiguous block, get one only if the layout is one
    bool need_c = !(flags & PyBUF_STRIDES) || (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                  (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
    bool need_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
    if (((need_c || need_f) && !mag_tensor_is_contiguous(t->t)) || (need_f && long_dims > 1)) {
        PyErr_SetString(PyExc_BufferError, "the tensor is not laid out as the contiguous block this consumer asks for; "
                                           "use .contiguous() (or a consumer that accepts strides)");
        return -1;
    }
    Py_ssize_t *dims = (Py_ssize_t *)PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(rank ? rank : 1));
    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    for (int64_t i = 0; i < rank; ++i) {
        dims[i] = (Py_ssize_t)mag_tensor_shape(t->t)[i];
        dims[rank + i] = (Py_ssize_t)(mag_tensor_strides(t->t)[i] * es);
    }
    view->buf = mag_tensor_data(t->t);
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)(mag_tensor_numel(t->t) * es);
    view->readonly = mag_tensor_is_read_only(t->t);
    view->itemsize = (Py_ssize_t)es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : nullptr;
    view->ndim = (flags & PyBUF_ND) ? (int)rank : 1; // without PyBUF_ND: one flat block of bytes
    view->shape = (flags & PyBUF_ND) ? dims : nullptr;
    view->strides = (flags & PyBUF_STRIDES) ? dims + rank : nullptr;
    view->suboffsets = nullptr;
    view->internal = dims;
    return 0;
}

static void tensor_releasebuffer(PyObject *, Py_buffer *view) { PyMem_Free(view->internal); }

PyType_Slot tensor_buffer_slots[] = {{Py_bf_getbuffer, (void *)tensor_getbuffer},
                                     {Py_bf_releasebuffer, (void *)tensor_releasebuffer},
                                     {0, nullptr}};

static bool dtype_from_format(const char *f, Py_ssize_t itemsize, mag_dtype_t *out) {
    if (*f == '@' || *f == '=' || *f == '<') ++f;
    if (f[0] == 0 || f[1] != 0) return false;
    switch (*f) {
    case 'f': *out = MAG_DTYPE_FLOAT32; break;
    case 'e': *out = MAG_DTYPE_FLOAT16; break;
    case 'd': *out = MAG_DTYPE_FLOAT64; break;
    case '?': *out = MAG_DTYPE_BOOLEAN; break;
    case 'b': *out = MAG_DTYPE_INT8; break;
    case 'B': *out = MAG_DTYPE_UINT8; break;
    case 'h': *out = MAG_DTYPE_INT16; break;
    case 'H': *out = MAG_DTYPE_UINT16; break;
    case 'i': case 'l': case 'q': *out = itemsize == 8 ? MAG_DTYPE_INT64 : MAG_DTYPE_INT32; break;
    case 'I': case 'L': case 'Q': *out = itemsize == 8 ? MAG_DTYPE_UINT64 : MAG_DTYPE_UINT32; break;
    default: return false;
    }
    return (Py_ssize_t)mag_dtype_info(*out)->size == itemsize;
}

static void release_py_buffer(void *ctx) {
    Py_buffer *b = (Py_buffer *)ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(b);
    PyGILState_Release(g);
    delete b;
}

mag_tensor_t *tensor_from_buffer(nb::handle obj) {
    if (!PyObject_CheckBuffer(obj.ptr())) return nullptr;
    Py_buffer *b = new Py_buffer;
    if (PyObject_GetBuffer(obj.ptr(), b, PyBUF_RECORDS_RO) != 0) {
        delete b;
        PyErr_Clear();
        return nullptr;
    }
    mag_dtype_t dt;
    if (!b->format || !dtype_from_format(b->format, b->itemsize, &dt)) {
        std::string f = b->format ? b->format : "?";
        PyBuffer_Release(b);
        delete b;
        raise_error(PyExc_TypeError, "Tensor: unsupported buffer format '%s' (non-native byte order or no matching dtype)", f.c_str());
    }
    DLTensor d{};
    int64_t shape[MAG_MAX_RANK], strides[MAG_MAX_RANK];
    if (b->ndim > MAG_MAX_RANK) {
        int ndim = b->ndim;
        PyBuffer_Release(b);
        delete b;
        raise_error(PyExc_ValueError, "Tensor: rank %d exceeds the maximum of %d", ndim, MAG_MAX_RANK);
    }
    for (int i = 0; i < b->ndim; ++i) {
        shape[i] = b->shape[i];
        if (b->strides[i] % b->itemsize) {
            PyBuffer_Release(b);
            delete b;
            raise_error(PyExc_ValueError, "Tensor: buffer strides must be multiples of the item size");
        }
        strides[i] = b->strides[i] / b->itemsize;
    }
    d.data = b->buf;
    d.device = DLDevice{kDLCPU, 0};
    d.ndim = b->ndim;
    d.dtype = dl_dtype(dt);
    d.shape = shape;
    d.strides = strides;
    return borrow_dl(d, b->readonly, release_py_buffer, b);
}

void register_interop(nb::module_ &m, nb::class_<Tensor> &cls) {
    cls.def("__dlpack__", &to_dlpack, nb::kw_only(), nb::arg("stream").none() = nb::none(),
            nb::arg("max_version").none() = nb::none(), nb::arg("dl_device").none() = nb::none(),
            nb::arg("copy").none() = nb::none(), "Export as a DLPack capsule (zero copy).");
    cls.def("__dlpack_device__", [](const Tensor &) { return nb::make_tuple((int)kDLCPU, 0); });
    m.def("_from_dlpack", [](nb::handle obj) { return Tensor(tensor_from_dlpack(obj)); });
    m.def("_from_buffer", [](nb::handle obj) {
        mag_tensor_t *t = tensor_from_buffer(obj);
        if (!t) raise_error(PyExc_TypeError, "from_buffer: %s does not support the buffer protocol", Py_TYPE(obj.ptr())->tp_name);
        return Tensor(t);
    });
}
