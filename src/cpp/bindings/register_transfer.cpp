#include <memory>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../error.hpp"
#include "../transfer.hpp"
#include "arrays.hpp"
#include "clock.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

Direction direction_of(const std::string& name) {
    if (name == "h2d") return Direction::HostToDevice;
    if (name == "d2h") return Direction::DeviceToHost;
    throw InvalidArgument("direction must be 'h2d' or 'd2h', got '" + name + "'");
}

Access access_of(const std::string& name) {
    if (name == "direct") return Access::Direct;
    if (name == "mapped") return Access::Mapped;
    throw InvalidArgument("access must be 'direct' or 'mapped', got '" + name + "'");
}

// The host side from Python: a PinnedBuffer's mapping, or a C-contiguous NumPy array (pageable
// memory; the caller's reference keeps it alive for the call).
std::unique_ptr<HostMemory> host_memory(const py::object& host, bool writable) {
    if (py::isinstance<PinnedBuffer>(host))
        return std::make_unique<HostMemory>(host.cast<PinnedBufferPtr>());
    if (!py::isinstance<py::array>(host))
        throw InvalidArgument("host memory must be a NumPy array (pageable) or a PinnedBuffer, "
                              "got " + std::string(py::str(py::type::handle_of(host).attr("__name__"))));
    const auto info = contiguous(host.cast<py::array>(), writable);
    return std::make_unique<HostMemory>(info.ptr,
                                        static_cast<std::size_t>(info.size * info.itemsize),
                                        writable);
}

}  // namespace

void register_transfer(py::module_& m) {
    m.def(
        "time_transfer",
        [](const std::string& direction, const BufferPtr& device, const py::object& host,
           std::size_t nbytes, const std::string& access, std::size_t pieces,
           const std::string& method, int warmup, int repeats) {
            const HostTransfer t{direction_of(direction), access_of(access), nbytes, pieces};
            const auto clock = clock_of(method);
            const auto memory = host_memory(host, t.direction == Direction::DeviceToHost);
            std::vector<double> ns;
            {
                py::gil_scoped_release nogil;
                ns = time_host_transfer(t, device, *memory, clock, warmup, repeats);
            }
            return to_numpy(ns);
        },
        py::arg("direction"), py::arg("device"), py::arg("host"), py::arg("nbytes"),
        py::arg("access") = "direct", py::arg("pieces") = 1, py::arg("method") = "events",
        py::arg("warmup") = 3, py::arg("repeats") = 20,
        "Time `repeats` transfers of `nbytes` between byte 0 of a device Buffer and byte 0 of host "
        "memory (a C-contiguous NumPy array or a PinnedBuffer), each as `pieces` equal pieces; "
        "direction 'h2d' or 'd2h', access 'direct' or 'mapped', method 'events' or 'host'. "
        "Returns each repeat's time in ns.");
    m.def(
        "time_copy",
        [](const BufferPtr& src, const BufferPtr& dst, std::size_t nbytes,
           const std::string& method, int warmup, int repeats) {
            const auto clock = clock_of(method);
            std::vector<double> ns;
            {
                py::gil_scoped_release nogil;
                ns = time_device_copy(src, dst, nbytes, clock, warmup, repeats);
            }
            return to_numpy(ns);
        },
        py::arg("src"), py::arg("dst"), py::arg("nbytes"), py::arg("method") = "events",
        py::arg("warmup") = 3, py::arg("repeats") = 20,
        "Time `repeats` device-to-device copies (enqueueCopyBuffer) of `nbytes` from src to dst. "
        "Returns each repeat's time in ns.");
}

}  // namespace pyclperf::bindings
