#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../buffer.hpp"
#include "../error.hpp"
#include "../fenced.hpp"
#include "arrays.hpp"
#include "integers.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// A NumPy view of the pinned mapping. The capsule owns a reference to the buffer (so the memory
// outlives the array) and one view count (so unmap/release refuse while the array lives).
// A view shows the device's bytes as they are, so its dtype must be plain numbers in the host's
// byte order: nothing can be converted on the way, unlike write() and read().
py::array pinned_view(const PinnedBufferPtr& self, const py::object& dtype_like,
                      const py::object& shape_like) {
    const py::dtype dt = py::dtype::from_args(dtype_like);
    const auto check = require_plain(dt, "pinned view");
    if (!check.native)
        throw InvalidArgument("pinned view: dtype " + dtype_text(dt) +
                              " is in the other byte order than the host's, and a view cannot "
                              "convert the device's numbers; use dtype.newbyteorder('=')");
    const auto item = static_cast<std::size_t>(dt.itemsize());
    if (item == 0) throw InvalidArgument("pinned view: dtype " + dtype_text(dt) + " has no bytes");
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
        bool overflow = false;
        for (const auto n : to_sizes(shape_like, "pinned view shape")) {
            shape.push_back(static_cast<py::ssize_t>(n));
            overflow = overflow || n > static_cast<std::size_t>(PY_SSIZE_T_MAX) ||
                       __builtin_mul_overflow(count, n, &count);
        }
        std::size_t bytes = 0;
        if (overflow || __builtin_mul_overflow(count, item, &bytes))  // past 2**64 bytes
            throw InvalidArgument("pinned view: shape " + repr_of(shape_like) + " of " +
                                  dtype_text(dt) + " needs more than the pinned buffer's " +
                                  std::to_string(self->nbytes()) + " bytes");
        if (bytes > self->nbytes())
            throw InvalidArgument("shape needs " + std::to_string(bytes) +
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

// Buffer(context, nbytes) and PinnedBuffer(context, nbytes): the size converted with a message.
std::size_t buffer_size(const py::object& nbytes) {
    return to_size(nbytes, "buffer size", 1, "number of bytes");
}

}  // namespace

void register_buffer(py::module_& m) {
    py::class_<Buffer, BufferPtr>(m, "Buffer", "Device memory (CL_MEM_READ_WRITE).")
        .def(py::init([](ContextPtr ctx, const py::object& nbytes) {
                 return std::make_shared<Buffer>(std::move(ctx), buffer_size(nbytes));
             }),
             py::arg("context"), py::arg("nbytes"))
        .def_property_readonly("nbytes", &Buffer::nbytes)
        .def_property_readonly("released", &Buffer::released)
        .def_property_readonly("context", &Buffer::context)
        .def("release", &Buffer::release, "Give the memory back now; later use raises.")
        .def(
            "write",
            [](Buffer& self, const py::array& src, const py::object& offset) {
                const auto at = to_size(offset, "write offset");
                const py::array data = outgoing(src);  // the host's byte order
                auto info = data.request();
                const auto n = static_cast<std::size_t>(info.size * info.itemsize);
                py::gil_scoped_release nogil;
                self.write(info.ptr, n, at);
            },
            py::arg("src"), py::arg("offset") = 0,
            "Copy a C-contiguous array of plain numbers into the buffer at byte `offset` "
            "(blocking); an array in the other byte order than the host's goes as its numbers, "
            "converted.")
        .def(
            "read",
            [](const Buffer& self, py::array& dst, const py::object& offset) {
                const auto at = to_size(offset, "read offset");
                incoming(dst, [&](void* ptr, std::size_t n) { self.read(ptr, n, at); });
            },
            py::arg("dst"), py::arg("offset") = 0,
            "Fill a C-contiguous writable array of plain numbers from the buffer at byte "
            "`offset` (blocking); an array in the other byte order than the host's receives the "
            "same numbers, converted.")
        .def(
            "copy_from",
            [](Buffer& self, const Buffer& src, const py::object& nbytes,
               const py::object& src_offset, const py::object& dst_offset) {
                const auto n = to_size(nbytes, "copy size");
                const auto from = to_size(src_offset, "copy source offset");
                const auto to = to_size(dst_offset, "copy destination offset");
                py::gil_scoped_release nogil;
                self.copy_from(src, n, from, to);
            },
            py::arg("src"), py::arg("nbytes"), py::arg("src_offset") = 0,
            py::arg("dst_offset") = 0)
        .def(
            "fill",
            [](Buffer& self, const py::array& pattern) {
                const py::array data = outgoing(pattern);
                auto info = data.request();
                py::gil_scoped_release nogil;  // a blocking fill: other threads run meanwhile
                self.fill(info.ptr, static_cast<std::size_t>(info.size * info.itemsize));
            },
            py::arg("pattern"), "Repeat a 1..128-byte pattern (power of two) over the buffer.");

    py::class_<PinnedBuffer, Buffer, PinnedBufferPtr>(
        m, "PinnedBuffer",
        "Host memory the device can reach directly (CL_MEM_ALLOC_HOST_PTR), kept mapped.")
        .def(py::init([](ContextPtr ctx, const py::object& nbytes) {
                 return std::make_shared<PinnedBuffer>(std::move(ctx), buffer_size(nbytes));
             }),
             py::arg("context"), py::arg("nbytes"))
        .def_property_readonly("mapped", &PinnedBuffer::mapped)
        .def_property_readonly("writable", &PinnedBuffer::writable)
        .def_property_readonly("views", &PinnedBuffer::views,
                               "How many NumPy views of the mapping are alive.")
        // Both wait on the device: without the GIL (PinnedBuffer's own lock orders them with
        // the making of views).
        .def("map", [](PinnedBuffer& self, bool writable) { self.map(writable); },
             py::arg("writable") = true, py::call_guard<py::gil_scoped_release>())
        .def("unmap", &PinnedBuffer::unmap, py::call_guard<py::gil_scoped_release>())
        .def("array", &pinned_view, py::arg("dtype") = "uint8", py::arg("shape") = py::none(),
             "A zero-copy NumPy view of the mapping; it keeps the buffer and mapping alive. The "
             "dtype must be plain numbers (no objects, strings or dates) in the host's byte "
             "order: the view shows the bytes the device reads and writes.");

    py::class_<FencedBuffer, Buffer, std::shared_ptr<FencedBuffer>>(
        m, "FencedBuffer",
        "Host memory of its own (CL_MEM_USE_HOST_PTR) between two inaccessible reservations of "
        "`fence` bytes each (address space only, nothing committed). On a device whose memory "
        "is the host's (a CPU device), a kernel's write past either end within `fence` bytes "
        "faults instead of landing in other memory of the process.")
        .def(py::init([](ContextPtr ctx, const py::object& nbytes, const py::object& fence) {
                 return std::make_shared<FencedBuffer>(std::move(ctx), buffer_size(nbytes),
                                                       to_size(fence, "fence size"));
             }),
             py::arg("context"), py::arg("nbytes"), py::arg("fence"))
        .def_property_readonly("address", &FencedBuffer::address,
                               "Where the buffer's first byte lies in this process's memory.")
        .def_property_readonly("fence", &FencedBuffer::fence,
                               "Inaccessible bytes on either side (whole pages).");

    m.def(
        "record_faults", [](int fd) { record_faults(fd); }, py::arg("fd"),
        "From now on a SIGSEGV or SIGBUS in this process first writes 'fault <signal> "
        "<address in hex> <w, r or ?>' (a write, a read, not known) and a newline to file "
        "descriptor `fd`, then ends the process as it "
        "would have. For a worker process whose death someone else explains.");
}

}  // namespace pyclperf::bindings
