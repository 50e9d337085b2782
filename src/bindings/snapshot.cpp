// .mag snapshots: the reader and writer handles, metadata conversion, CRC32C, and a zero-copy
// byte-buffer view used by the importers. Python's magnetron.io.mag builds the public API on these.
#include "common.h"

#include <nanobind/stl/string.h>

#include <string>

static PyObject *format_error_type = nullptr;

namespace {
struct SnapshotFile {
    mag_snapshot_t *s = nullptr;
    ~SnapshotFile() { mag_snapshot_close(s); }
    mag_snapshot_t *get() const {
        if (!s) raise_error(PyExc_ValueError, "snapshot: the file was closed");
        return s;
    }
};

struct SnapshotWriter {
    mag_snapshot_writer_t *w = nullptr;
    ~SnapshotWriter() { mag_snapshot_write_abort(w); }
    mag_snapshot_writer_t *get() const {
        if (!w) raise_error(PyExc_ValueError, "save: the writer was already committed or aborted");
        return w;
    }
};

// Python values -> mag_value_t. Pointers borrow from the Python objects, which `keep` holds.
struct ValueBuilder {
    const std::string &key;
    std::vector<nb::object> keep;

    [[noreturn]] void type_error(nb::handle h) {
        raise_error(PyExc_TypeError,
                    "save: metadata '%s': values are int, float, bool, str, bytes or a list of one of those, got %s "
                    "(store nested data as a JSON string)",
                    key.c_str(), Py_TYPE(h.ptr())->tp_name);
    }

    mag_value_t scalar(nb::handle h) {
        mag_value_t v{};
        PyObject *o = h.ptr();
        if (PyBool_Check(o)) {
            v.type = MAG_VALUE_BOOL;
            v.b = o == Py_True;
        } else if (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))) {
            nb::object i = nb::steal(PyNumber_Index(o));
            if (!i.is_valid()) throw nb::python_error();
            int overflow = 0;
            v.type = MAG_VALUE_I64;
            v.i64 = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
            if (overflow) {
                v.type = MAG_VALUE_U64;
                v.u64 = PyLong_AsUnsignedLongLong(i.ptr());
                if (PyErr_Occurred()) {
                    PyErr_Clear();
                    raise_error(PyExc_OverflowError, "save: metadata '%s': integer %s does not fit in 64 bits",
                                key.c_str(), nb::str(h).c_str());
                }
            }
        } else if (PyUnicode_Check(o)) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(o, &n);
            if (!s) throw nb::python_error();
            v.type = MAG_VALUE_STRING;
            v.str = s;
            v.len = (uint64_t)n;
        } else if (PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o)) {
            nb::object b = nb::steal(PyBytes_FromObject(o));
            if (!b.is_valid()) throw nb::python_error();
            v.type = MAG_VALUE_BYTES;
            v.str = PyBytes_AS_STRING(b.ptr());
            v.len = (uint64_t)PyBytes_GET_SIZE(b.ptr());
            keep.push_back(b);
        } else if (PyFloat_Check(o) || (PyNumber_Check(o) && nb::hasattr(h, "__float__"))) {
            v.type = MAG_VALUE_F64;
            v.f64 = PyFloat_AsDouble(o);
            if (v.f64 == -1.0 && PyErr_Occurred()) throw nb::python_error();
        } else {
            type_error(h);
        }
        return v;
    }

    // One element type for the whole list: ints widen to u64 or to f64; anything else must match.
    void unify(std::vector<mag_value_t> &items, mag_value_type_t *elem) {
        bool has[MAG_VALUE_ARRAY] = {};
        bool negative = false;
        for (const mag_value_t &v : items) {
            has[v.type] = true;
            negative |= v.type == MAG_VALUE_I64 && v.i64 < 0;
        }
        int kinds = 0;
        for (bool b : has) kinds += b;
        if (items.empty()) *elem = MAG_VALUE_I64;
        else if (kinds == 1) *elem = items[0].type;
        else if (has[MAG_VALUE_F64] && kinds == 1 + has[MAG_VALUE_I64] + has[MAG_VALUE_U64]) *elem = MAG_VALUE_F64;
        else if (has[MAG_VALUE_I64] && has[MAG_VALUE_U64] && kinds == 2) *elem = MAG_VALUE_U64;
        else raise_error(PyExc_TypeError, "save: metadata '%s': a list must hold values of one kind", key.c_str());
        if (*elem == MAG_VALUE_U64 && negative)
            raise_error(PyExc_OverflowError, "save: metadata '%s': a list mixes negative integers with integers >= 2**63",
                        key.c_str());
        for (mag_value_t &v : items) {
            if (v.type == *elem) continue;
            if (*elem == MAG_VALUE_F64) v.f64 = v.type == MAG_VALUE_U64 ? (double)v.u64 : (double)v.i64;
            v.type = *elem; // i64 >= 0 -> u64 keeps its bits
        }
    }
};
} // namespace

static nb::object to_python(const mag_value_t &v, const char *key, const char *path) {
    switch (v.type) {
    case MAG_VALUE_U64: return nb::steal(PyLong_FromUnsignedLongLong(v.u64));
    case MAG_VALUE_I64: return nb::int_(v.i64);
    case MAG_VALUE_F64: return nb::float_(v.f64);
    case MAG_VALUE_BOOL: return nb::bool_(v.b);
    case MAG_VALUE_BYTES: return nb::steal(PyBytes_FromStringAndSize(v.str, (Py_ssize_t)v.len));
    case MAG_VALUE_STRING: {
        PyObject *s = PyUnicode_DecodeUTF8(v.str, (Py_ssize_t)v.len, "strict");
        if (!s) {
            PyErr_Clear();
            raise_error(format_error_type, "load: '%s': metadata '%s' is not valid UTF-8", path, key);
        }
        return nb::steal(s);
    }
    default: {
        nb::list l;
        for (uint64_t i = 0; i < v.len; ++i) l.append(to_python(v.items[i], key, path));
        return l;
    }
    }
}

static nb::dict metadata_dict(mag_snapshot_t *s) {
    nb::dict d;
    for (int64_t i = 0; i < mag_snapshot_metadata_count(s); ++i) {
        const char *key;
        const mag_value_t *v;
        check(mag_snapshot_metadata_at(s, i, &key, &v));
        d[key] = to_python(*v, key, mag_snapshot_path(s));
    }
    return d;
}

static nb::dict tensor_info(mag_snapshot_t *s, int64_t i) {
    const mag_snapshot_tensor_info_t *t = mag_snapshot_tensor_info(s, i);
    if (!t) raise_error(PyExc_IndexError, "snapshot: tensor index %lld is out of range", (long long)i);
    nb::list shape;
    for (int64_t d = 0; d < t->rank; ++d) shape.append(t->shape[d]);
    nb::dict d;
    d["name"] = t->name;
    d["dtype_id"] = (int)t->dtype;
    d["shape"] = nb::tuple(shape);
    d["offset"] = t->offset;
    d["nbytes"] = t->nbytes;
    d["crc32c"] = t->crc32c;
    return d;
}

// C strings end at NUL, so a Python name with one inside would silently lose its tail.
static const char *c_name(const std::string &s, const char *what) {
    if (s.find('\0') != std::string::npos) raise_error(PyExc_ValueError, "save: %s '%s' contains a NUL character", what, s.c_str());
    return s.c_str();
}

static void release_tensor(void *t) { mag_tensor_release((mag_tensor_t *)t); }

// A tensor of dtype/shape over obj's bytes from `offset` on, without copying (a copy when the
// address is misaligned for the dtype). Read-only when the buffer is.
static Tensor borrow_bytes(nb::handle obj, size_t offset, int dt, nb::handle shape_obj) {
    mag_dtype_t dtype = to_dtype(dt, "borrow_bytes");
    auto shape = to_shape(shape_obj, "borrow_bytes");
    nb::object view = nb::steal(PyMemoryView_FromObject(obj.ptr()));
    if (!view.is_valid()) throw nb::python_error();
    view = view.attr("cast")("B");
    mag_tensor_t *bytes = tensor_from_buffer(view);
    if (!bytes) raise_error(PyExc_TypeError, "borrow_bytes: %s has no byte buffer", Py_TYPE(obj.ptr())->tp_name);
    uint8_t *data = (uint8_t *)mag_tensor_data(bytes);
    size_t avail = (size_t)mag_tensor_numel(bytes);
    if (offset > avail) {
        mag_tensor_release(bytes);
        raise_error(PyExc_ValueError, "borrow_bytes: offset %zu is past the end of a %zu-byte buffer", offset, avail);
    }
    mag_tensor_t *out = nullptr;
    shape.reserve(1); // a rank-0 shape still needs a valid pointer (memcpy of 0 bytes from NULL is UB)
    mag_status_t s = mag_tensor_borrow(data + offset, avail - offset, dtype, (int64_t)shape.size(), shape.data(), nullptr,
                                       mag_tensor_is_read_only(bytes), MAG_OWNER_BORROWED, release_tensor, bytes, &out);
    if (s != MAG_OK) {
        mag_tensor_release(bytes);
        check(s);
    }
    Tensor t(out);
    if ((uintptr_t)(data + offset) % mag_dtype_info(dtype)->size == 0) return t;
    mag_tensor_t *copy = nullptr;
    check(mag_tensor_cast(out, dtype, &copy));
    return Tensor(copy);
}

void register_snapshot(nb::module_ &m) {
    format_error_type = m.attr("FormatError").ptr();

    nb::class_<SnapshotFile>(m, "SnapshotFile", "An open .mag file (low level; see magnetron.load).")
        .def("__init__", [](SnapshotFile *self, const std::string &path, bool mmap, bool verify) {
            mag_snapshot_t *s = nullptr;
            mag_status_t st;
            {
                nb::gil_scoped_release nogil;
                st = mag_snapshot_open(path.c_str(), (mmap ? MAG_SNAPSHOT_MMAP : 0) | (verify ? MAG_SNAPSHOT_VERIFY : 0), &s);
            }
            check(st);
            new (self) SnapshotFile{s};
        }, nb::arg("path"), nb::arg("mmap") = true, nb::arg("verify") = false)
        .def_prop_ro("path", [](const SnapshotFile &f) { return std::string(mag_snapshot_path(f.get())); })
        .def_prop_ro("version", [](const SnapshotFile &f) { return mag_snapshot_version(f.get()); })
        .def("__len__", [](const SnapshotFile &f) { return mag_snapshot_tensor_count(f.get()); })
        .def("tensor_info", [](const SnapshotFile &f, int64_t i) { return tensor_info(f.get(), i); }, nb::arg("index"))
        .def("tensors", [](const SnapshotFile &f) {
            nb::list out;
            mag_snapshot_t *s = f.get();
            for (int64_t i = 0; i < mag_snapshot_tensor_count(s); ++i) {
                mag_tensor_t *t = nullptr;
                check(mag_snapshot_tensor(s, i, &t));
                out.append(nb::make_tuple(mag_snapshot_tensor_info(s, i)->name, Tensor(t)));
            }
            return out;
        }, "(name, Tensor) pairs in file order; the tensors point into the file's memory.")
        .def("metadata", [](const SnapshotFile &f) { return metadata_dict(f.get()); })
        .def("verify", [](const SnapshotFile &f, int64_t i) {
            mag_snapshot_t *s = f.get();
            mag_status_t st;
            {
                nb::gil_scoped_release nogil;
                st = mag_snapshot_verify(s, i);
            }
            check(st);
        }, nb::arg("index") = -1, "Check data checksums (one tensor, or all with -1); FormatError on a mismatch.")
        .def("memory", [](const SnapshotFile &f) {
            const void *base;
            size_t n;
            mag_snapshot_bytes(f.get(), &base, &n);
            return nb::make_tuple((uintptr_t)base, n);
        }, "(address, size) of the file's bytes in memory.")
        .def("close", [](SnapshotFile &f) {
            mag_snapshot_close(f.s);
            f.s = nullptr;
        });

    nb::class_<SnapshotWriter>(m, "SnapshotWriter", "Writes a .mag file atomically (low level; see magnetron.save).")
        .def("__init__", [](SnapshotWriter *self, const std::string &path) {
            mag_snapshot_writer_t *w = nullptr;
            check(mag_snapshot_write_begin(path.c_str(), &w));
            new (self) SnapshotWriter{w};
        }, nb::arg("path"))
        .def("set_metadata", [](SnapshotWriter &w, const std::string &key, nb::handle value) {
            ValueBuilder b{key, {}};
            mag_value_t v{};
            std::vector<mag_value_t> items;
            if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
                for (nb::handle h : nb::borrow<nb::sequence>(value)) {
                    if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) || PyDict_Check(h.ptr())) b.type_error(h);
                    items.push_back(b.scalar(h));
                }
                v.type = MAG_VALUE_ARRAY;
                b.unify(items, &v.elem_type);
                v.len = items.size();
                v.items = items.data();
            } else {
                v = b.scalar(value);
            }
            check(mag_snapshot_write_metadata(w.get(), c_name(key, "metadata key"), &v));
        }, nb::arg("key"), nb::arg("value"))
        .def("declare", [](SnapshotWriter &w, const std::string &name, int dt, nb::handle shape) {
            auto s = to_shape(shape, "save");
            int64_t index = -1;
            check(mag_snapshot_write_declare(w.get(), c_name(name, "tensor name"), to_dtype(dt, "save"), (int64_t)s.size(), s.data(), &index));
            return index;
        }, nb::arg("name"), nb::arg("dtype_id"), nb::arg("shape"))
        .def("write", [](SnapshotWriter &w, int64_t index, const Tensor &t) {
            mag_snapshot_writer_t *h = w.get();
            mag_status_t st;
            {
                nb::gil_scoped_release nogil;
                st = mag_snapshot_write_tensor(h, index, t.t);
            }
            check(st);
        }, nb::arg("index"), nb::arg("tensor"))
        .def("commit", [](SnapshotWriter &w) {
            mag_snapshot_writer_t *h = w.get();
            w.w = nullptr; // commit frees the writer whatever happens
            mag_status_t st;
            {
                nb::gil_scoped_release nogil;
                st = mag_snapshot_write_commit(h);
            }
            check(st);
        })
        .def("abort", [](SnapshotWriter &w) {
            mag_snapshot_write_abort(w.w);
            w.w = nullptr;
        });

    m.def("_crc32c", [](nb::bytes data, uint32_t crc, bool portable) {
        return portable ? mag_crc32c_portable(crc, data.c_str(), data.size()) : mag_crc32c(crc, data.c_str(), data.size());
    }, nb::arg("data"), nb::arg("crc") = 0, nb::arg("portable") = false);
    m.def("_crc32c_impl", &mag_crc32c_impl);
    m.def("_borrow_bytes", &borrow_bytes, nb::arg("obj"), nb::arg("offset"), nb::arg("dtype_id"), nb::arg("shape"));
}
