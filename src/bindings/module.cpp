// The _C extension module: errors, runtime context, and the Tensor class registration.
#include "common.h"

#include <cstdarg>
#include <cstdio>
#include <stdexcept>

static PyObject *format_error = nullptr;

[[noreturn]] void raise_error(PyObject *type, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    PyErr_SetString(type, buf);
    throw nb::python_error();
}

void check(mag_status_t s) {
    if (s == MAG_OK) return;
    PyObject *type = PyExc_RuntimeError;
    switch (s) {
    case MAG_ERR_VALUE: type = PyExc_ValueError; break;
    case MAG_ERR_TYPE: type = PyExc_TypeError; break;
    case MAG_ERR_INDEX: type = PyExc_IndexError; break;
    case MAG_ERR_MEMORY: type = PyExc_MemoryError; break;
    case MAG_ERR_ZERO_DIVISION: type = PyExc_ZeroDivisionError; break;
    case MAG_ERR_FORMAT: type = format_error; break;
    case MAG_ERR_IO: // OSError(errno, msg) picks the subclass (FileNotFoundError, ...)
        PyErr_SetObject(PyExc_OSError, nb::make_tuple(mag_last_errno(), mag_last_error()).ptr());
        throw nb::python_error();
    default: break;
    }
    PyErr_SetString(type, mag_last_error());
    throw nb::python_error();
}

mag_dtype_t to_dtype(int id, const char *op) {
    if (id < 0 || id >= MAG_DTYPE__COUNT) raise_error(PyExc_TypeError, "%s: invalid dtype id %d", op, id);
    return (mag_dtype_t)id;
}

mag_scalar_t to_scalar(nb::handle h, const char *op) {
    if (PyBool_Check(h.ptr())) return mag_scalar_bool(h.ptr() == Py_True);
    if (PyLong_Check(h.ptr())) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
        if (!overflow) return mag_scalar_int(v);
        unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
        if (PyErr_Occurred()) {
            PyErr_Clear();
            raise_error(PyExc_OverflowError, "%s: integer %s does not fit in 64 bits", op,
                        nb::str(h).c_str());
        }
        mag_scalar_t s;
        s.kind = MAG_SCALAR_UINT;
        s.u = u;
        return s;
    }
    if (PyFloat_Check(h.ptr())) return mag_scalar_float(PyFloat_AS_DOUBLE(h.ptr()));
    if (nb::hasattr(h, "dtype") && nb::hasattr(h, "item")) { // NumPy scalars, 0-d arrays and tensors: their Python value
        nb::object v = h.attr("item")();
        if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return to_scalar(v, op);
    }
    if (PyIndex_Check(h.ptr())) { // e.g. numpy.int64; arrays claim the slot but refuse unless 0-d
        PyObject *i = PyNumber_Index(h.ptr());
        if (i) return to_scalar(nb::steal(i), op);
        PyErr_Clear();
    }
    if (PyNumber_Check(h.ptr()) && nb::hasattr(h, "__float__")) return mag_scalar_float(nb::cast<double>(nb::float_(h)));
    raise_error(PyExc_TypeError, "%s: expected a number, got %s", op, Py_TYPE(h.ptr())->tp_name);
}

nb::object from_scalar(mag_scalar_t s) {
    switch (s.kind) {
    case MAG_SCALAR_BOOL: return nb::bool_(s.i != 0);
    case MAG_SCALAR_INT: return nb::int_(s.i);
    case MAG_SCALAR_UINT: return nb::steal(PyLong_FromUnsignedLongLong(s.u));
    default: return nb::float_(s.f);
    }
}

std::vector<int64_t> to_shape(nb::handle seq, const char *op) {
    std::vector<int64_t> shape;
    if (!PySequence_Check(seq.ptr())) raise_error(PyExc_TypeError, "%s: shape must be a sequence of ints", op);
    for (nb::handle h : seq) {
        if (!PyIndex_Check(h.ptr()) || PyBool_Check(h.ptr()))
            raise_error(PyExc_TypeError, "%s: shape entries must be ints, got %s", op, Py_TYPE(h.ptr())->tp_name);
        shape.push_back(nb::cast<int64_t>(nb::int_(h)));
    }
    if (shape.size() > MAG_MAX_RANK)
        raise_error(PyExc_ValueError, "%s: rank %zu exceeds the maximum of %d", op, shape.size(), MAG_MAX_RANK);
    return shape;
}

static nb::list op_table() {
    nb::list ops;
    for (int i = 0; i < MAG_OP__COUNT; ++i) {
        const mag_op_info_t *info = mag_op_info((mag_op_t)i);
        nb::dict d;
        d["id"] = i;
        d["name"] = info->name;
        d["kind"] = (int)info->kind;
        d["n_inputs"] = info->n_inputs;
        d["n_attrs"] = info->n_attrs;
        d["dtypes"] = info->dtypes;
        d["flags"] = info->flags;
        d["doc"] = info->doc;
        ops.append(d);
    }
    return ops;
}

static nb::list dtype_table() {
    nb::list dts;
    for (int i = 0; i < MAG_DTYPE__COUNT; ++i) {
        const mag_dtype_info_t *info = mag_dtype_info((mag_dtype_t)i);
        nb::dict d;
        d["id"] = i;
        d["name"] = info->name;
        d["size"] = info->size;
        d["flags"] = info->flags;
        d["min"] = info->min;
        d["max"] = info->max;
        dts.append(d);
    }
    return dts;
}

static nb::dict cpu_info() {
    mag_cpu_info_t info;
    mag_cpu_info(&info);  // a selection error was raised at import
    nb::list features, built, runnable;
    for (uint32_t i = 0; mag_cpu_feature_name(i); ++i)
        if (info.features >> i & 1) features.append(mag_cpu_feature_name(i));
    for (uint32_t i = 0; i < info.n_variants; ++i) {
        built.append(info.variants[i]);
        if (info.variant_runs[i]) runnable.append(info.variants[i]);
    }
    nb::dict d;
    d["vendor"] = info.vendor;
    d["model"] = info.model;
    d["family"] = info.family;
    d["model_number"] = info.model_number;
    d["stepping"] = info.stepping;
    d["cpus"] = info.cpus;
    d["features"] = features;
    d["variant"] = info.variant ? nb::object(nb::str(info.variant)) : nb::none();
    d["variants_built"] = built;
    d["variants_available"] = runnable;
    return d;
}

NB_MODULE(_C, m) {
    // A bad MAGNETRON_CPU_VARIANT / MAGNETRON_NUM_THREADS fails the import with an ImportError carrying the message.
    if (mag_cpu_init() != MAG_OK) throw std::runtime_error(mag_last_error());
    format_error = PyErr_NewExceptionWithDoc("magnetron.FormatError",
                                             "A corrupt, truncated or hostile file (a ValueError).", PyExc_ValueError,
                                             nullptr);
    m.attr("FormatError") = nb::handle(format_error);
    m.def("op_table", &op_table, "The op table (src/core/ops.def) as a list of dicts.");
    m.def("dtype_table", &dtype_table, "The dtype table (src/core/dtypes.def) as a list of dicts.");
    m.def("promote_types", [](int a, int b) { return (int)mag_dtype_promote(to_dtype(a, "promote_types"), to_dtype(b, "promote_types")); });
    m.def("has_kernel", [](int op, int dt) { return mag_op_has_kernel((mag_op_t)op, (mag_dtype_t)dt); });
    m.def("manual_seed", [](uint64_t s) { mag_manual_seed(s); }, nb::arg("seed"));
    m.def("get_num_threads", &mag_num_threads);
    m.def("cpu_info", &cpu_info, "CPU vendor, model, usable features and kernel variants (see mag_cpu_info).");
    m.def("set_num_threads", [](int64_t n) {
        if (n < 1) raise_error(PyExc_ValueError, "num_threads must be >= 1, got %lld", (long long)n);
        check(mag_set_num_threads((uint32_t)n));
    });
    m.def("alloc_stats", []() {
        size_t live, cached;
        mag_alloc_stats(&live, &cached);
        return nb::make_tuple(live, cached);
    });
    m.def("alloc_trim", &mag_alloc_trim);
    m.def("f32_to_f16", &mag_f32_to_f16);
    m.def("f32_to_bf16", &mag_f32_to_bf16);

    nb::class_<Tensor> cls(m, "Tensor", nb::type_slots(tensor_buffer_slots),
                           "An n-dimensional array: a dtype, a shape, strides and shared storage.");
    register_tensor(m, cls);
    register_ops(m, cls);
    register_interop(m, cls);
    register_snapshot(m);
    register_graph(m);
}
