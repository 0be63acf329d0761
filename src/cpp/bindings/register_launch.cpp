#include <algorithm>

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

// BlockingWait's hooks: give up the GIL for a blocking wait when this thread holds it (not
// inside a binding that already released it around the whole call, such as time_host's).
void* release_gil() { return PyGILState_Check() ? PyEval_SaveThread() : nullptr; }
void restore_gil(void* state) {
    if (state) PyEval_RestoreThread(static_cast<PyThreadState*>(state));
}

py::array_t<double> as_array(std::vector<double> values) {
    py::array_t<double> out(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

NDRange range_of(std::vector<std::size_t> global, std::vector<std::size_t> local) {
    return NDRange{std::move(global), std::move(local)};
}

}  // namespace

void register_launch(py::module_& m) {
    BlockingWait::install(&release_gil, &restore_gil);
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
            // The GIL is held but around the wait (BlockingWait): validating and enqueueing
            // are host work of a few microseconds.
            run(k, range_of(std::move(g), std::move(l)));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"),
        "Launch once and wait.");
    m.def(
        "time_events",
        [](Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l, int warmup,
           int repeats) {
            return as_array(time_kernel_events(k, range_of(std::move(g), std::move(l)),
                                               warmup, repeats));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches by event profiling: (repeats, 4) uint64 array of "
        "queued, submit, start, end in ns.");
    m.def(
        "time_durations",
        [](Kernel& k, std::vector<std::size_t> g, std::vector<std::size_t> l, int warmup,
           int repeats) {
            return as_array(time_kernel_durations(k, range_of(std::move(g), std::move(l)),
                                                  warmup, repeats));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches by event profiling: float64 array of end - start "
        "in ns (only those two timestamps are read).");
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
