#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../buffer.hpp"
#include "../error.hpp"
#include "arrays.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// A NumPy view of the pinned mapping. The capsule owns a reference to the buffer (so the memory
// outlives the array) and one view count (so unmap/release refuse while the array lives).
py::array pinned_view(const PinnedBufferPtr& self, const py::object& dtype_like,
                      const py::object& shape_like) {
    const py::dtype dt = py::dtype::from_args(dtype_like);
    const auto item = static_cast<std::size_t>(dt.itemsize());
    std::vector<py::ssize_t> shape;
    std::size_t count = 1;
    if (shape_like.is_none()) {
        if (self->nbytes() % item != 0)
            throw InvalidArgument("pinned buffer of " + std::to_string(self->nbytes()) +
                                  " bytes is not a whole number of " + std::to_string(item) +
                                  "-byte items");
        count = self->nbytes() / item;
        shape.push_back(static_cast<py::ssize_t>(count));
    } else {
        for (auto d : py::iterable(shape_like)) {
            const auto n = d.cast<py::ssize_t>();
            if (n < 0) throw InvalidArgument("negative dimension in shape");
            shape.push_back(n);
            count *= static_cast<std::size_t>(n);
        }
        if (count * item > self->nbytes())
            throw InvalidArgument("shape needs " + std::to_string(count * item) +
                                  " bytes; the pinned buffer has " +
                                  std::to_string(self->nbytes()));
    }
    self->acquire_view();
    py::capsule owner(new PinnedBufferPtr(self), [](void* p) {
        auto* holder = static_cast<PinnedBufferPtr*>(p);
        (*holder)->drop_view();
        delete holder;
    });
    py::array view(dt, shape, self->host_ptr(), owner);
    if (!self->writable()) view.attr("setflags")(py::arg("write") = false);
    return view;
}

}  // namespace

void register_buffer(py::module_& m) {
    py::class_<Buffer, BufferPtr>(m, "Buffer", "Device memory (CL_MEM_READ_WRITE).")
        .def(py::init([](ContextPtr ctx, std::size_t nbytes) {
                 return std::make_shared<Buffer>(std::move(ctx), nbytes);
             }),
             py::arg("context"), py::arg("nbytes"))
        .def_property_readonly("nbytes", &Buffer::nbytes)
        .def_property_readonly("released", &Buffer::released)
        .def_property_readonly("context", &Buffer::context)
        .def("release", &Buffer::release, "Give the memory back now; later use raises.")
        .def(
            "write",
            [](Buffer& self, const py::array& src, std::size_t offset) {
                auto info = contiguous(src, false);
                const auto n = static_cast<std::size_t>(info.size * info.itemsize);
                py::gil_scoped_release nogil;
                self.write(info.ptr, n, offset);
            },
            py::arg("src"), py::arg("offset") = 0,
            "Copy a contiguous array's bytes into the buffer at byte `offset` (blocking).")
        .def(
            "read",
            [](const Buffer& self, py::array& dst, std::size_t offset) {
                auto info = contiguous(dst, true);
                const auto n = static_cast<std::size_t>(info.size * info.itemsize);
                py::gil_scoped_release nogil;
                self.read(info.ptr, n, offset);
            },
            py::arg("dst"), py::arg("offset") = 0,
            "Fill a contiguous writable array from the buffer at byte `offset` (blocking).")
        .def("copy_from", &Buffer::copy_from, py::arg("src"), py::arg("nbytes"),
             py::arg("src_offset") = 0, py::arg("dst_offset") = 0,
             py::call_guard<py::gil_scoped_release>())
        .def(
            "fill",
            [](Buffer& self, const py::array& pattern) {
                auto info = contiguous(pattern, false);
                self.fill(info.ptr, static_cast<std::size_t>(info.size * info.itemsize));
            },
            py::arg("pattern"), "Repeat a 1..128-byte pattern (power of two) over the buffer.");

    py::class_<PinnedBuffer, Buffer, PinnedBufferPtr>(
        m, "PinnedBuffer",
        "Host memory the device can reach directly (CL_MEM_ALLOC_HOST_PTR), kept mapped.")
        .def(py::init([](ContextPtr ctx, std::size_t nbytes) {
                 return std::make_shared<PinnedBuffer>(std::move(ctx), nbytes);
             }),
             py::arg("context"), py::arg("nbytes"))
        .def_property_readonly("mapped", &PinnedBuffer::mapped)
        .def_property_readonly("writable", &PinnedBuffer::writable)
        .def_property_readonly("views", &PinnedBuffer::views,
                               "How many NumPy views of the mapping are alive.")
        .def("map", [](PinnedBuffer& self, bool writable) { self.map(writable); },
             py::arg("writable") = true)
        .def("unmap", &PinnedBuffer::unmap)
        .def("array", &pinned_view, py::arg("dtype") = "uint8", py::arg("shape") = py::none(),
             "A zero-copy NumPy view of the mapping; it keeps the buffer and mapping alive.");
}

}  // namespace pyclperf::bindings
