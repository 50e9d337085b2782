// Tensor construction, properties, views and the op methods generated from the op table.
#include "common.h"

#include <nanobind/stl/string.h>

#include <cstring>
#include <string>

static Tensor wrap(mag_tensor_t *t) { return Tensor(t); }

template <class F> static Tensor make(F &&f) {
    mag_tensor_t *out = nullptr;
    check(f(&out));
    return wrap(out);
}

// ---- construction from Python data ----
namespace {
struct ListScan {
    std::vector<int64_t> shape;
    std::vector<mag_scalar_t> values;
    bool any_float = false, any_int = false, any_uint = false;
};
} // namespace

// Array-likes inside a list (NumPy arrays, torch or magnetron tensors, ranges) count as nested lists.
static nb::object as_nested_list(nb::handle obj) {
    if (PyRange_Check(obj.ptr())) return nb::steal(PySequence_List(obj.ptr()));
    bool tensor_like = nb::isinstance<Tensor>(obj) ? mag_tensor_rank(nb::cast<const Tensor &>(obj).t) > 0
                                                   : nb::hasattr(obj, "tolist") && nb::hasattr(obj, "__len__");
    return tensor_like ? obj.attr("tolist")() : nb::borrow(obj);
}

static void scan_list(nb::handle item, size_t depth, ListScan &s) {
    PyObject *p = item.ptr();
    bool plain = PyList_Check(p) || PyTuple_Check(p) || PyFloat_Check(p) || PyLong_Check(p); // the common, fast case
    nb::object obj = plain ? nb::borrow(item) : as_nested_list(item);
    bool is_seq = PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr());
    if (depth == s.shape.size()) { // first visit at this depth decides the shape
        if (is_seq) {
            if (depth >= MAG_MAX_RANK) raise_error(PyExc_ValueError, "Tensor: nesting deeper than %d", MAG_MAX_RANK);
            s.shape.push_back((int64_t)PySequence_Size(obj.ptr()));
        } else {
            s.shape.push_back(-1); // marks "scalars live here"
        }
    }
    int64_t want = s.shape[depth];
    if (want == -1) {
        if (is_seq) raise_error(PyExc_ValueError, "Tensor: ragged nested sequence (a list where a number was expected at depth %zu)", depth);
        mag_scalar_t v;
        if (nb::isinstance<Tensor>(obj)) {
            const mag_tensor_t *t = nb::cast<const Tensor &>(obj).t;
            if (mag_tensor_numel(t) != 1) raise_error(PyExc_ValueError, "Tensor: only one-element tensors can be list entries");
            int64_t zero[MAG_MAX_RANK] = {0};
            check(mag_tensor_get(t, zero, &v));
        } else {
            v = to_scalar(obj, "Tensor");
        }
        s.any_float |= v.kind == MAG_SCALAR_FLOAT;
        s.any_int |= v.kind == MAG_SCALAR_INT;
        s.any_uint |= v.kind == MAG_SCALAR_UINT;
        s.values.push_back(v);
        return;
    }
    if (!is_seq || PySequence_Size(obj.ptr()) != want)
        raise_error(PyExc_ValueError, "Tensor: ragged nested sequence: expected length %lld at depth %zu, got %s",
                    (long long)want, depth, is_seq ? std::to_string(PySequence_Size(obj.ptr())).c_str() : "a scalar");
    nb::sequence seq = nb::borrow<nb::sequence>(obj);
    for (nb::handle item : seq) scan_list(item, depth + 1, s);
}

static mag_tensor_t *tensor_from_list(nb::handle data, int dtype) {
    ListScan s;
    scan_list(data, 0, s);
    if (!s.shape.empty() && s.shape.back() == -1) s.shape.pop_back();
    mag_dtype_t natural = s.any_float ? MAG_DTYPE_FLOAT64
                          : s.any_uint ? MAG_DTYPE_UINT64
                          : s.any_int ? MAG_DTYPE_INT64
                          : s.values.empty() ? MAG_DTYPE_FLOAT32 : MAG_DTYPE_BOOLEAN;
    mag_dtype_t target = dtype >= 0 ? to_dtype(dtype, "Tensor")
                         : s.any_float || s.values.empty() ? MAG_DTYPE_FLOAT32 : natural;
    mag_tensor_t *tmp = nullptr;
    check(mag_tensor_empty(natural, (int64_t)s.shape.size(), s.shape.data(), &tmp));
    Tensor guard(tmp);
    uint8_t *p = (uint8_t *)mag_tensor_data(tmp);
    for (size_t i = 0; i < s.values.size(); ++i) {
        const mag_scalar_t &v = s.values[i];
        switch (natural) {
        case MAG_DTYPE_FLOAT64: ((double *)p)[i] = v.kind == MAG_SCALAR_FLOAT ? v.f : v.kind == MAG_SCALAR_UINT ? (double)v.u : (double)v.i; break;
        case MAG_DTYPE_UINT64:
            if (v.kind == MAG_SCALAR_INT && v.i < 0) raise_error(PyExc_OverflowError, "Tensor: mixes negative integers with integers above 2**63");
            ((uint64_t *)p)[i] = v.kind == MAG_SCALAR_UINT ? v.u : (uint64_t)v.i;
            break;
        case MAG_DTYPE_INT64: ((int64_t *)p)[i] = v.i; break;
        default: p[i] = (uint8_t)(v.i != 0); break;
        }
    }
    if (target == natural) {
        mag_tensor_retain(tmp);
        return tmp;
    }
    mag_tensor_t *out = nullptr;
    check(mag_tensor_cast(tmp, target, &out));
    return out;
}

mag_tensor_t *tensor_from_object(nb::handle data, int dtype) {
    if (nb::isinstance<Tensor>(data)) {
        mag_tensor_t *t = nb::cast<const Tensor &>(data).t;
        if (dtype < 0 || dtype == mag_tensor_dtype(t)) {
            mag_tensor_t *v = nullptr;
            check(mag_tensor_detach(t, &v));
            return v;
        }
        mag_tensor_t *out = nullptr;
        check(mag_tensor_cast(t, to_dtype(dtype, "Tensor"), &out));
        return out;
    }
    if (PyList_Check(data.ptr()) || PyTuple_Check(data.ptr()) || PyBool_Check(data.ptr()) || PyLong_Check(data.ptr()) ||
        PyFloat_Check(data.ptr()) || PyRange_Check(data.ptr()))
        return tensor_from_list(data, dtype);
    mag_tensor_t *borrowed = tensor_from_buffer(data);
    if (!borrowed && nb::hasattr(data, "__dlpack__")) borrowed = tensor_from_dlpack(data);
    if (!borrowed && nb::hasattr(data, "__array__")) // e.g. array-likes without a buffer: ask for a NumPy array
        borrowed = tensor_from_buffer(data.attr("__array__")());
    if (!borrowed && nb::hasattr(data, "__array_interface__")) // only NumPy reads this protocol for us
        borrowed = tensor_from_buffer(nb::module_::import_("numpy").attr("asarray")(data));
    if (!borrowed) {
        if (PyIndex_Check(data.ptr()) || PyNumber_Check(data.ptr())) return tensor_from_list(data, dtype);
        raise_error(PyExc_TypeError, "Tensor: cannot build a tensor from %s", Py_TYPE(data.ptr())->tp_name);
    }
    Tensor guard(borrowed);
    mag_tensor_t *out = nullptr;
    check(mag_tensor_cast(borrowed, dtype >= 0 ? to_dtype(dtype, "Tensor") : mag_tensor_dtype(borrowed), &out));
    return out;
}

// ---- element access ----
static nb::object tolist_rec(const mag_tensor_t *t, int64_t *idx, int64_t d) {
    if (d == mag_tensor_rank(t)) {
        mag_scalar_t v;
        check(mag_tensor_get(t, idx, &v));
        return from_scalar(v);
    }
    int64_t n = mag_tensor_shape(t)[d];
    nb::list out;
    for (int64_t i = 0; i < n; ++i) {
        idx[d] = i;
        out.append(tolist_rec(t, idx, d + 1));
    }
    return out;
}

static std::vector<int64_t> dims_of(const mag_tensor_t *t, const int64_t *(*get)(const mag_tensor_t *)) {
    const int64_t *p = get(t);
    return std::vector<int64_t>(p, p + mag_tensor_rank(t));
}

static nb::tuple as_tuple(const std::vector<int64_t> &v) {
    nb::list l;
    for (int64_t x : v) l.append(x);
    return nb::tuple(l);
}

static std::vector<mag_tensor_t *> handles(const std::vector<const Tensor *> &ts) {
    std::vector<mag_tensor_t *> out;
    for (const Tensor *t : ts) out.push_back(t->t);
    return out;
}

// A `dtype=` argument: None (infer from the data) or what magnetron.dtype.as_dtype accepts.
static int dtype_arg(nb::handle h, const char *op) {
    if (h.is_none()) return -1;
    nb::object d = nb::module_::import_("magnetron.dtype").attr("as_dtype")(h, op);
    return nb::cast<int>(d.attr("_id"));
}

void register_tensor(nb::module_ &m, nb::class_<Tensor> &cls) {
    // nanobind calls the C++ __init__ directly, so the whole Python signature lives here.
    cls.def("__init__", [](Tensor *self, nb::handle data, nb::handle dtype, bool requires_grad) {
        mag_tensor_t *t = tensor_from_object(data, dtype_arg(dtype, "Tensor"));
        mag_status_t s = requires_grad ? mag_tensor_set_requires_grad(t, true) : MAG_OK;
        if (s != MAG_OK) mag_tensor_release(t);
        check(s);
        new (self) Tensor(t);
    }, nb::arg("data"), nb::arg("dtype").none() = nb::none(), nb::arg("requires_grad") = false,
       "A tensor from a Python scalar, a nested list/tuple, a NumPy array or any buffer/DLPack producer (copied), "
       "or another Tensor (shares storage).");
    cls.def_prop_ro("shape", [](const Tensor &t) { return as_tuple(dims_of(t.t, mag_tensor_shape)); });
    cls.def_prop_ro("strides", [](const Tensor &t) { return as_tuple(dims_of(t.t, mag_tensor_strides)); });
    cls.def_prop_ro("rank", [](const Tensor &t) { return mag_tensor_rank(t.t); });
    cls.def_prop_ro("ndim", [](const Tensor &t) { return mag_tensor_rank(t.t); });
    cls.def_prop_ro("numel", [](const Tensor &t) { return mag_tensor_numel(t.t); });
    cls.def_prop_ro("_dtype_id", [](const Tensor &t) { return (int)mag_tensor_dtype(t.t); });
    cls.def_prop_ro("_offset", [](const Tensor &t) { return mag_tensor_offset(t.t); });
    cls.def_prop_ro("data_ptr", [](const Tensor &t) { return (uintptr_t)mag_tensor_data(t.t); });
    cls.def_prop_ro("is_contiguous", [](const Tensor &t) { return mag_tensor_is_contiguous(t.t); });
    cls.def_prop_ro("is_view", [](const Tensor &t) { return mag_tensor_is_view(t.t); });
    cls.def_prop_ro("is_read_only", [](const Tensor &t) { return mag_tensor_is_read_only(t.t); });
    cls.def_prop_ro("_storage_id", [](const Tensor &t) { return (uintptr_t)mag_tensor_storage_id(t.t); });
    cls.def_prop_rw("requires_grad", [](const Tensor &t) { return mag_tensor_requires_grad(t.t); },
                    [](Tensor &t, bool on) { check(mag_tensor_set_requires_grad(t.t, on)); });

    cls.def("item", [](const Tensor &t) {
        if (mag_tensor_numel(t.t) != 1) {
            std::string shape = nb::cast<std::string>(nb::str(as_tuple(dims_of(t.t, mag_tensor_shape))));
            raise_error(PyExc_RuntimeError, "item: a tensor of shape %s (%lld elements) cannot be converted to a "
                        "Python scalar", shape.c_str(), (long long)mag_tensor_numel(t.t));
        }
        int64_t zero[MAG_MAX_RANK] = {0};
        mag_scalar_t v;
        check(mag_tensor_get(t.t, zero, &v));
        return from_scalar(v);
    });
    cls.def("tolist", [](const Tensor &t) {
        int64_t idx[MAG_MAX_RANK] = {0};
        return tolist_rec(t.t, idx, 0);
    });

    // views
    cls.def("_view", [](Tensor &t, nb::handle shape) {
        auto s = to_shape(shape, "view");
        return make([&](mag_tensor_t **o) { return mag_tensor_view(t.t, (int64_t)s.size(), s.data(), o); });
    });
    cls.def("_reshape", [](Tensor &t, nb::handle shape) {
        auto s = to_shape(shape, "reshape");
        return make([&](mag_tensor_t **o) { return mag_tensor_reshape(t.t, (int64_t)s.size(), s.data(), o); });
    });
    cls.def("_permute", [](Tensor &t, nb::handle dims) {
        auto d = to_shape(dims, "permute");
        return make([&](mag_tensor_t **o) { return mag_tensor_permute(t.t, (int64_t)d.size(), d.data(), o); });
    });
    cls.def("_expand", [](Tensor &t, nb::handle shape) {
        auto s = to_shape(shape, "expand");
        return make([&](mag_tensor_t **o) { return mag_tensor_expand(t.t, (int64_t)s.size(), s.data(), o); });
    });
    cls.def("_squeeze", [](Tensor &t, std::optional<std::vector<int64_t>> dims) {
        return make([&](mag_tensor_t **o) {
            return dims ? mag_tensor_squeeze(t.t, (int64_t)dims->size(), dims->data(), o)
                        : mag_tensor_squeeze(t.t, 0, nullptr, o);
        });
    }, nb::arg("dims").none());
    cls.def("_as_strided", [](Tensor &t, nb::handle shape, nb::handle strides, int64_t offset) {
        auto s = to_shape(shape, "as_strided"), st = to_shape(strides, "as_strided");
        if (s.size() != st.size()) raise_error(PyExc_ValueError, "as_strided: shape and strides differ in length");
        return make([&](mag_tensor_t **o) { return mag_tensor_as_strided(t.t, (int64_t)s.size(), s.data(), st.data(), offset, o); });
    });
    cls.def("transpose", [](Tensor &t, int64_t d0, int64_t d1) {
        return make([&](mag_tensor_t **o) { return mag_tensor_transpose(t.t, d0, d1, o); });
    }, nb::arg("dim0"), nb::arg("dim1"), "Swap two dims (a view).");
    cls.def("_slice", [](Tensor &t, int64_t dim, int64_t start, int64_t length, int64_t step) {
        return make([&](mag_tensor_t **o) { return mag_tensor_slice(t.t, dim, start, length, step, o); });
    });
    cls.def("select", [](Tensor &t, int64_t dim, int64_t index) {
        return make([&](mag_tensor_t **o) { return mag_tensor_select(t.t, dim, index, o); });
    }, nb::arg("dim"), nb::arg("index"), "The slice at `index` along `dim`, with that dim removed (a view).");
    cls.def("unsqueeze", [](Tensor &t, int64_t dim) {
        return make([&](mag_tensor_t **o) { return mag_tensor_unsqueeze(t.t, dim, o); });
    }, nb::arg("dim"), "Insert a size-1 dim at `dim` (a view).");

    // copies
    cls.def("_cast", [](Tensor &t, int dt) {
        return make([&](mag_tensor_t **o) { return mag_tensor_cast(t.t, to_dtype(dt, "cast"), o); });
    });
    cls.def("contiguous", [](Tensor &t) { return make([&](mag_tensor_t **o) { return mag_tensor_contiguous(t.t, o); }); },
            "This tensor if it is contiguous, else a contiguous copy.");
    cls.def("clone", [](Tensor &t) { return make([&](mag_tensor_t **o) { return mag_tensor_cast(t.t, mag_tensor_dtype(t.t), o); }); },
            "A contiguous, writable copy.");
    cls.def("_copy_", [](Tensor &t, const Tensor &src) { check(mag_tensor_copy_(t.t, src.t)); });
    cls.def("_fill_", [](Tensor &t, nb::handle v) { check(mag_tensor_fill(t.t, to_scalar(v, "fill_"))); });
    cls.def("detach", [](Tensor &t) { return make([&](mag_tensor_t **o) { return mag_tensor_detach(t.t, o); }); },
            "A tensor sharing storage with this one, without autograd history.");

    // autograd
    cls.def_prop_rw("grad", [](const Tensor &t) -> nb::object {
        mag_tensor_t *g = mag_tensor_grad(t.t);
        if (!g) return nb::none();
        mag_tensor_retain(g);
        return nb::cast(Tensor(g));
    }, [](Tensor &t, nb::handle g) {
        if (!g.is_none() && !nb::isinstance<Tensor>(g)) raise_error(PyExc_TypeError, "grad must be a Tensor or None");
        check(mag_tensor_set_grad(t.t, g.is_none() ? nullptr : nb::cast<Tensor &>(g).t));
    }, nb::arg("value").none(), "The gradient accumulated by backward() (None until then).");
    cls.def_prop_ro("is_leaf", [](const Tensor &t) { return mag_tensor_is_leaf(t.t); });
    cls.def_prop_ro("grad_fn", [](const Tensor &t) -> nb::object {
        const char *n = mag_tensor_grad_fn(t.t);
        if (!n) return nb::none();
        return nb::str(n);
    }, "Name of the op that produced this tensor (None for leaves).");
    cls.def("backward", [](Tensor &t, const Tensor *grad, bool retain_graph) {
        mag_status_t s;
        {
            nb::gil_scoped_release nogil;
            s = mag_tensor_backward(t.t, grad ? grad->t : nullptr, retain_graph);
        }
        check(s);
    }, nb::arg("grad").none() = nb::none(), nb::arg("retain_graph") = false,
       "Accumulate gradients into the leaves' .grad (grad defaults to ones for a one-element tensor).");
    m.def("_set_grad_enabled", &mag_set_grad_enabled, "Set this thread's grad mode; returns the previous one.");
    m.def("is_grad_enabled", &mag_grad_enabled);
    m.def("op_has_grad", [](int op) { return mag_op_has_grad((mag_op_t)op); });

    // advanced indexing
    cls.def("_index", [](Tensor &t, std::vector<const Tensor *> idx) {
        std::vector<mag_tensor_t *> in{t.t};
        for (mag_tensor_t *h : handles(idx)) in.push_back(h);
        return make([&](mag_tensor_t **o) { return mag_op(MAG_OP_INDEX, in.data(), (int64_t)in.size(), nullptr, 0, o); });
    });
    cls.def("_index_put", [](Tensor &t, std::vector<const Tensor *> idx, const Tensor &values, bool accumulate) {
        std::vector<mag_tensor_t *> in{values.t};
        for (mag_tensor_t *h : handles(idx)) in.push_back(h);
        mag_scalar_t acc = mag_scalar_bool(accumulate);
        mag_tensor_t *dst = t.t;
        check(mag_op(MAG_OP_INDEX_PUT, in.data(), (int64_t)in.size(), &acc, 1, &dst));
    });
    cls.def("nonzero", [](Tensor &t) {
        return make([&](mag_tensor_t **o) { return mag_op(MAG_OP_NONZERO, &t.t, 1, nullptr, 0, o); });
    }, "int64 coordinates (n, rank) of the non-zero elements (like torch.nonzero).");

    m.def("_empty", [](nb::handle shape, int dt) {
        auto s = to_shape(shape, "empty");
        return make([&](mag_tensor_t **o) { return mag_tensor_empty(to_dtype(dt, "empty"), (int64_t)s.size(), s.data(), o); });
    });
    m.def("_factory_", [](int op, Tensor &out, std::vector<nb::handle> attrs) {
        std::vector<mag_scalar_t> a;
        const mag_op_info_t *info = mag_op_info((mag_op_t)op);
        if (!info) raise_error(PyExc_ValueError, "unknown op %d", op);
        for (nb::handle h : attrs) a.push_back(to_scalar(h, info->name));
        mag_tensor_t *dst = out.t;
        check(mag_op((mag_op_t)op, nullptr, 0, a.data(), (int64_t)a.size(), &dst));
    });
    m.def("_broadcast_shape", [](nb::handle a, nb::handle b) {
        auto sa = to_shape(a, "broadcast"), sb = to_shape(b, "broadcast");
        int64_t rank, out[MAG_MAX_RANK];
        check(mag_broadcast_shape((int64_t)sa.size(), sa.data(), (int64_t)sb.size(), sb.data(), &rank, out));
        return as_tuple(std::vector<int64_t>(out, out + rank));
    });
}
