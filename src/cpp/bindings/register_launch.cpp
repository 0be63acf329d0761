#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../launch.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// Event times as an (n, 4) uint64 array: queued, submit, start, end in ns.
py::array_t<std::uint64_t> as_array(const std::vector<EventTimes>& times) {
    py::array_t<std::uint64_t> out({static_cast<py::ssize_t>(times.size()), py::ssize_t{4}});
    auto v = out.mutable_unchecked<2>();
    for (std::size_t i = 0; i < times.size(); ++i) {
        const auto r = static_cast<py::ssize_t>(i);
        v(r, 0) = times[i].queued;
        v(r, 1) = times[i].submit;
        v(r, 2) = times[i].start;
        v(r, 3) = times[i].end;
    }
    return out;
}

NDRange range_of(std::vector<std::size_t> global, std::vector<std::size_t> local) {
    return NDRange{std::move(global), std::move(local)};
}

}  // namespace

void register_launch(py::module_& m) {
    m.def(
        "validate_launch",
        [](const Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l) {
            validate(k, range_of(std::move(g), std::move(l)));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"),
        "Raise InvalidArgumentError if this launch cannot work on the kernel's device.");
    m.def(
        "run",
        [](Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l) {
            const auto range = range_of(std::move(g), std::move(l));
            py::gil_scoped_release nogil;
            run(k, range);
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"),
        "Launch once and wait.");
    m.def(
        "time_events",
        [](Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l, int warmup,
           int repeats) {
            const auto range = range_of(std::move(g), std::move(l));
            std::vector<EventTimes> times;
            {
                py::gil_scoped_release nogil;
                times = time_kernel_events(k, range, warmup, repeats);
            }
            return as_array(times);
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches by event profiling: (repeats, 4) uint64 array of "
        "queued, submit, start, end in ns.");
    m.def(
        "time_host",
        [](Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l, int warmup,
           int repeats) {
            const auto range = range_of(std::move(g), std::move(l));
            py::gil_scoped_release nogil;
            return time_kernel_host(k, range, warmup, repeats);
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches each by a host steady clock around enqueue and "
        "finish: list of ns.");
}

}  // namespace pyclperf::bindings
