#include <algorithm>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../launch.hpp"
#include "arrays.hpp"
#include "integers.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// Event times as an (n, 4) uint64 array: queued, submit, start, end in ns.
py::array_t<std::uint64_t> event_times_array(const std::vector<EventTimes>& times) {
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

// A launch range from Python: an integer or a sequence of them for the global size, the same
// or None (the driver chooses) for the local size, each converted with a message in words.
NDRange range_of(const py::object& global, const py::object& local) {
    return NDRange{to_sizes(global, "global size"),
                   local.is_none() ? std::vector<std::size_t>{} : to_sizes(local, "local size")};
}

int warmup_of(const py::object& v) { return to_int(v, "warmup", 0); }
int repeats_of(const py::object& v) { return to_int(v, "repeats", 1); }

}  // namespace

void register_launch(py::module_& m) {
    BlockingWait::install(&release_gil, &restore_gil);
    m.def(
        "validate_launch",
        [](const Kernel& k, const py::object& g, const py::object& l) {
            validate(k, range_of(g, l));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size") = py::none(),
        "Raise InvalidArgumentError if this launch cannot work on the kernel's device.");
    m.def(
        "run",
        [](Kernel& k, const py::object& g, const py::object& l) {
            // The GIL is held but around the wait (BlockingWait): validating and enqueueing
            // are host work of a few microseconds.
            run(k, range_of(g, l));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size") = py::none(),
        "Launch once and wait. Checked first: the range against the device's limits, every "
        "argument set, no argument released. Not checked, because no launch can know it: how "
        "far the kernel indexes its buffers. A kernel that reads or writes past a buffer's end "
        "corrupts whatever memory lies there (on a CPU device, this process's heap). "
        "pyclperf.run_kernel and pyclperf.tune place arrays in padded, guarded buffers instead.");
    m.def(
        "time_events",
        [](Kernel& k, const py::object& g, const py::object& l, const py::object& warmup,
           const py::object& repeats) {
            return event_times_array(
                time_kernel_events(k, range_of(g, l), warmup_of(warmup), repeats_of(repeats)));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches by event profiling: (repeats, 4) uint64 array of "
        "queued, submit, start, end in ns.");
    m.def(
        "time_durations",
        [](Kernel& k, const py::object& g, const py::object& l, const py::object& warmup,
           const py::object& repeats) {
            return to_numpy(time_kernel_durations(k, range_of(g, l), warmup_of(warmup),
                                                  repeats_of(repeats)));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches by event profiling: float64 array of end - start "
        "in ns (only those two timestamps are read).");
    py::class_<PendingDurations>(m, "PendingDurations",
                                 "Timed launches enqueued by begin_durations, not yet waited for.")
        .def(
            "finish", [](PendingDurations& p) { return to_numpy(p.finish()); },
            "Wait for the launches once and return end - start of each timed one (ns), as "
            "time_durations does; later calls return the same.");
    m.def(
        "begin_durations",
        [](Kernel& k, const py::object& g, const py::object& l, const py::object& warmup,
           const py::object& repeats) {
            return begin_kernel_durations(k, range_of(g, l), warmup_of(warmup),
                                          repeats_of(repeats));
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "time_durations in two halves: enqueue the warm-ups and timed launches now and return "
        "a PendingDurations whose finish() waits and gives the times; the host is free between.");
    m.def(
        "time_host",
        [](Kernel& k, const py::object& g, const py::object& l, const py::object& warmup,
           const py::object& repeats) {
            const auto range = range_of(g, l);
            const int w = warmup_of(warmup), r = repeats_of(repeats);
            py::gil_scoped_release nogil;
            return time_kernel_host(k, range, w, r);
        },
        py::arg("kernel"), py::arg("global_size"), py::arg("local_size"), py::arg("warmup"),
        py::arg("repeats"),
        "Warm up, then time `repeats` launches each by a host steady clock around enqueue and "
        "finish: list of ns.");
}

}  // namespace pyclperf::bindings
