// Tensor methods generated from the op table: `x.name(...)`, the in-place `x.name_(...)` and,
// for binary ops, the reflected `x._rname(other)` that Python's `__radd__` & co. use.
#include "common.h"

#include <memory>
#include <string>

// Work below this many elements runs with the GIL held: releasing it costs more than the op.
static constexpr int64_t GIL_RELEASE_NUMEL = 1 << 16;

static int category(mag_dtype_t dt) {
    uint32_t f = mag_dtype_info(dt)->flags;
    return (f & MAG_DTF_FLOAT) ? 2 : (f & MAG_DTF_BOOL) ? 0 : 1;
}

// A Python number next to a tensor is a "weak" scalar (PyTorch): it takes the tensor's dtype
// unless it is of a higher category (a float next to integers -> float32, an int next to booleans -> int64).
static mag_tensor_t *scalar_operand(nb::handle h, const mag_tensor_t *like, const char *op) {
    mag_scalar_t v = to_scalar(h, op);
    int cat = v.kind == MAG_SCALAR_FLOAT ? 2 : v.kind == MAG_SCALAR_BOOL ? 0 : 1;
    mag_dtype_t td = mag_tensor_dtype(like);
    mag_dtype_t dt = cat <= category(td) ? td : cat == 2 ? MAG_DTYPE_FLOAT32 : MAG_DTYPE_INT64;
    if (v.kind == MAG_SCALAR_UINT && cat == category(td) && !(mag_dtype_info(td)->flags & MAG_DTF_UNSIGNED_INT))
        dt = MAG_DTYPE_UINT64;
    mag_tensor_t *s = nullptr;
    check(mag_tensor_empty(dt, 0, nullptr, &s));
    mag_status_t st = mag_tensor_fill(s, v);
    if (st != MAG_OK) mag_tensor_release(s);
    check(st);
    return s;
}

static mag_tensor_t *operand(nb::handle h, const mag_tensor_t *like, const char *op, Tensor *&keep) {
    if (nb::isinstance<Tensor>(h)) return nb::cast<Tensor &>(h).t;
    if (!PyNumber_Check(h.ptr()) && !PyBool_Check(h.ptr()))
        raise_error(PyExc_TypeError, "%s: unsupported operand type %s (expected a Tensor or a number)", op,
                    Py_TYPE(h.ptr())->tp_name);
    keep = new Tensor(scalar_operand(h, like, op));
    return keep->t;
}

static mag_tensor_t *run(mag_op_t op, mag_tensor_t *const *in, int64_t n, mag_tensor_t *out) {
    int64_t numel = mag_tensor_numel(in[0]);
    mag_status_t s;
    if (numel >= GIL_RELEASE_NUMEL) {
        nb::gil_scoped_release nogil;
        s = mag_op(op, in, n, nullptr, 0, &out);
    } else {
        s = mag_op(op, in, n, nullptr, 0, &out);
    }
    check(s);
    return out;
}

void register_ops(nb::module_ &m, nb::class_<Tensor> &cls) {
    for (int i = 0; i < MAG_OP__COUNT; ++i) {
        mag_op_t op = (mag_op_t)i;
        const mag_op_info_t *info = mag_op_info(op);
        std::string name = info->name;
        if (info->kind != MAG_OPK_UNARY && info->kind != MAG_OPK_BINARY && info->kind != MAG_OPK_COMPARE) continue;
        if (info->n_inputs == 1) {
            cls.def(name.c_str(), [op](Tensor &x) { return Tensor(run(op, &x.t, 1, nullptr)); }, info->doc);
            if (info->flags & MAG_OPF_INPLACE)
                cls.def((name + "_").c_str(), [op](nb::handle self) {
                    Tensor &x = nb::cast<Tensor &>(self);
                    run(op, &x.t, 1, x.t);
                    return nb::borrow(self);
                }, info->doc);
            continue;
        }
        cls.def(name.c_str(), [op, info](Tensor &x, nb::handle other) {
            Tensor *keep = nullptr;
            mag_tensor_t *in[2] = {x.t, operand(other, x.t, info->name, keep)};
            std::unique_ptr<Tensor> guard(keep);
            return Tensor(run(op, in, 2, nullptr));
        }, nb::arg("other"), info->doc);
        cls.def(("_r" + name).c_str(), [op, info](Tensor &x, nb::handle other) {
            Tensor *keep = nullptr;
            mag_tensor_t *in[2] = {operand(other, x.t, info->name, keep), x.t};
            std::unique_ptr<Tensor> guard(keep);
            return Tensor(run(op, in, 2, nullptr));
        }, nb::arg("other"));
        if (info->flags & MAG_OPF_INPLACE)
            cls.def((name + "_").c_str(), [op, info](nb::handle self, nb::handle other) {
                Tensor &x = nb::cast<Tensor &>(self);
                Tensor *keep = nullptr;
                mag_tensor_t *in[2] = {x.t, operand(other, x.t, info->name, keep)};
                std::unique_ptr<Tensor> guard(keep);
                run(op, in, 2, x.t);
                return nb::borrow(self);
            }, nb::arg("other"), info->doc);
    }
    // Any op by table id: the Python wrappers of custom ops (python/magnetron/_ops_*.py) call this.
    m.def("_op", [](int op, std::vector<const Tensor *> inputs, std::vector<nb::handle> attrs, Tensor *out) {
        const mag_op_info_t *info = mag_op_info((mag_op_t)op);
        if (!info) raise_error(PyExc_ValueError, "unknown op id %d", op);
        std::vector<mag_tensor_t *> in;
        int64_t work = 0;
        for (const Tensor *t : inputs) {
            in.push_back(t->t);
            work += mag_tensor_numel(t->t);
        }
        std::vector<mag_scalar_t> a;
        for (nb::handle h : attrs) a.push_back(to_scalar(h, info->name));
        mag_tensor_t *res = out ? out->t : nullptr;
        mag_status_t s;
        if (work >= GIL_RELEASE_NUMEL) {
            nb::gil_scoped_release nogil;
            s = mag_op((mag_op_t)op, in.data(), (int64_t)in.size(), a.data(), (int64_t)a.size(), &res);
        } else {
            s = mag_op((mag_op_t)op, in.data(), (int64_t)in.size(), a.data(), (int64_t)a.size(), &res);
        }
        check(s);
        if (out) mag_tensor_retain(res); // the caller's tensor: hand back a new reference to it
        return Tensor(res);
    }, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"), nb::arg("out").none() = nb::none(),
    "Run op `op` (an id from op_table()) on inputs with scalar attrs; into `out` when given.");
}
