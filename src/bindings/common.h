// Shared pieces of the binding: the Python-side Tensor handle and status -> exception mapping.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "magnetron.h"

namespace nb = nanobind;

// The object behind magnetron.Tensor: one reference to a core tensor.
struct Tensor {
    mag_tensor_t *t = nullptr;
    explicit Tensor(mag_tensor_t *t) : t(t) {}
    Tensor(Tensor &&o) noexcept : t(o.t) { o.t = nullptr; }
    Tensor(const Tensor &o) : t(o.t) {
        if (t) mag_tensor_retain(t);
    }
    Tensor &operator=(const Tensor &) = delete;
    ~Tensor() { mag_tensor_release(t); }
};

// Raise the Python exception matching a failed status (no-op for MAG_OK).
void check(mag_status_t s);
[[noreturn]] void raise_error(PyObject *type, const char *fmt, ...);

mag_scalar_t to_scalar(nb::handle h, const char *op);
nb::object from_scalar(mag_scalar_t s);
mag_dtype_t to_dtype(int id, const char *op);
std::vector<int64_t> to_shape(nb::handle seq, const char *op);

// Copy any Python data (scalar, nested list, buffer, DLPack producer) into a new tensor.
mag_tensor_t *tensor_from_object(nb::handle data, int dtype /* -1: infer */);
mag_tensor_t *tensor_from_buffer(nb::handle obj);            // nullptr when obj has no buffer
mag_tensor_t *tensor_from_dlpack(nb::handle obj);            // zero copy

void register_tensor(nb::module_ &m, nb::class_<Tensor> &cls);
void register_ops(nb::module_ &m, nb::class_<Tensor> &cls);
void register_interop(nb::module_ &m, nb::class_<Tensor> &cls);
void register_snapshot(nb::module_ &m);
void register_graph(nb::module_ &m);
extern PyType_Slot tensor_buffer_slots[];
