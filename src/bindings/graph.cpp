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
        .def("__len__", [](const Graph &self) { return mag_graph_launches(self.g); });
}
