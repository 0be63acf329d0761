#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "../peer.hpp"
#include "arrays.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// (event ns, host ns) per repeat: the caller chooses which to believe, and can see both.
py::tuple as_arrays(const PeerPair::Times& t) {
    return py::make_tuple(to_numpy(t.events), to_numpy(t.host));
}

// Runs one of the pair's timing loops without the GIL (it waits on two devices).
template <class Loop>
py::tuple timed(const Loop& loop) {
    PeerPair::Times t;
    {
        py::gil_scoped_release release;
        t = loop();
    }
    return as_arrays(t);
}

std::size_t bytes_of(const py::buffer_info& info) {
    return static_cast<std::size_t>(info.size * info.itemsize);
}

}  // namespace

void register_peer(py::module_& m) {
    py::class_<PeerPair>(m, "PeerPair",
                         "Two devices of one platform in one context, a queue and a buffer each.")
        .def(py::init<int, int, int>(), py::arg("platform_index"), py::arg("device_a"),
             py::arg("device_b"), py::call_guard<py::gil_scoped_release>())
        .def("info", &PeerPair::info, py::arg("side"), py::return_value_policy::copy)
        .def_property_readonly("same_device", &PeerPair::same_device)
        .def_property_readonly("nbytes", &PeerPair::nbytes)
        .def("allocate", &PeerPair::allocate, py::arg("nbytes"),
             py::call_guard<py::gil_scoped_release>())
        .def(
            "write",
            [](PeerPair& p, int side, const py::array& a) {
                const auto info = contiguous(a, false);
                py::gil_scoped_release release;
                p.write(side, info.ptr, bytes_of(info));
            },
            py::arg("side"), py::arg("array"))
        .def(
            "read",
            [](const PeerPair& p, int side, py::array& a) {
                const auto info = contiguous(a, true);
                py::gil_scoped_release release;
                p.read(side, info.ptr, bytes_of(info));
            },
            py::arg("side"), py::arg("array"))
        .def("fill", &PeerPair::fill, py::arg("side"), py::arg("value"),
             py::call_guard<py::gil_scoped_release>())
        .def("build_copy_kernel", &PeerPair::build_copy_kernel, py::arg("source"),
             py::arg("name"), py::arg("element_bytes"), py::call_guard<py::gil_scoped_release>())
        .def(
            "time_copy",
            [](PeerPair& p, int from, int warmup, int repeats) {
                return timed([&] { return p.time_copy(from, warmup, repeats); });
            },
            py::arg("source_side"), py::arg("warmup") = 1,
            py::arg("repeats") = 10)
        .def(
            "time_migrate",
            [](PeerPair& p, int from, int warmup, int repeats) {
                return timed([&] { return p.time_migrate(from, warmup, repeats); });
            },
            py::arg("source_side"), py::arg("warmup") = 1, py::arg("repeats") = 10)
        .def(
            "time_kernel_copy",
            [](PeerPair& p, int from, std::size_t local, std::size_t groups, int warmup,
               int repeats) {
                return timed([&] { return p.time_kernel_copy(from, local, groups, warmup, repeats); });
            },
            py::arg("source_side"), py::arg("local"), py::arg("groups"), py::arg("warmup") = 1,
            py::arg("repeats") = 10);
}

}  // namespace pyclperf::bindings
