// magnetron._C.Graph: a recorded sequence of kernel launches (core/graph.c), replayed without Python.
#include "common.h"

namespace {

struct Graph {
    mag_graph_t *g = nullptr;
    Graph() = default;
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;
    ~Graph() { mag_graph_free(g); }
};

} // namespace

void register_graph(nb::module_ &m) {
    nb::class_<Graph>(m, "Graph", "Kernel launches recorded once and replayed on the same tensors.")
        .def(nb::init<>())
        .def("begin", [](Graph &self) {
            mag_graph_t *g;
            check(mag_graph_begin(&g));
            mag_graph_free(self.g); // a new capture replaces the old recording
            self.g = g;
        }, "Start recording this thread's kernel launches (they still run).")
        .def("end", [](Graph &self) { check(mag_graph_end(self.g)); }, "Stop recording.")
        .def("abort", [](Graph &self) {
            mag_graph_free(self.g);
            self.g = nullptr;
        }, "Drop the recording (and end a capture in progress).")
        .def("replay", [](Graph &self) {
            mag_status_t s;
            {
                nb::gil_scoped_release nogil;
                s = mag_graph_replay(self.g);
            }
            check(s); // raising needs the GIL
        }, "Launch every recorded kernel again, in order.")
        .def("replay_timed", [](Graph &self) {
            std::vector<int64_t> ns((size_t)mag_graph_launches(self.g));
            mag_status_t s;
            {
                nb::gil_scoped_release nogil;
                s = mag_graph_replay_timed(self.g, ns.data());
            }
            check(s);
            return ns;
        }, "Replay once and return each launch's wall time in nanoseconds.")
        .def("launch_info", [](const Graph &self, int64_t i) {
            const char *op = mag_graph_launch_op(self.g, i);
            if (!op) raise_error(PyExc_IndexError, "Graph.launch_info: launch %lld of %lld", (long long)i,
                                 (long long)mag_graph_launches(self.g));
            const mag_tensor_t *out = mag_graph_launch_out(self.g, i);
            std::vector<int64_t> shape;
            const char *dtype = "";
            if (out) {
                const int64_t *dims = mag_tensor_shape(out);
                shape.assign(dims, dims + mag_tensor_rank(out));
                dtype = mag_dtype_info(mag_tensor_dtype(out))->name;
            }
            return nb::make_tuple(op, nb::tuple(nb::cast(shape)), dtype);
        }, "(op name, result shape, result dtype) of launch i; an op without a result gives () and ''.")
        .def("__len__", [](const Graph &self) { return mag_graph_launches(self.g); });
}
