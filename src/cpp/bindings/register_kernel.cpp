#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../error.hpp"
#include "../kernel.hpp"
#include "arrays.hpp"
#include "integers.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// An argument index, with the core's out-of-range message for a negative one or one past the
// kernel's parameters (pybind11 would answer -1 with its "incompatible function arguments").
std::size_t arg_index(const Kernel& k, const py::object& index) {
    std::size_t i = 0;
    if (plain_size(index.ptr(), i) && i < k.num_args()) return i;
    if (!is_integer(index)) not_an_integer(index, "argument index");
    const auto v = integer_value(index);
    if (v.negative || v.too_large || v.value >= k.num_args())
        throw InvalidArgument("argument index " + repr_of(index) + " out of range: kernel '" +
                              k.name() + "' takes " + std::to_string(k.num_args()) +
                              " argument(s)");
    return static_cast<std::size_t>(v.value);
}

bool is_numpy_scalar(const py::handle& v) {
    static PyObject* const generic = numpy_type("generic");
    return is_instance(v, generic);
}

// A by-value argument's bytes, as an object with the buffer protocol: a NumPy scalar or array of
// plain numbers as it is (a NumPy scalar through its own buffer: making an array of it would
// double the cost of setting it), converted where its byte order is the other one; any other
// buffer-protocol object through NumPy's reading of its format.
py::object scalar_value(const Kernel& k, std::size_t index, const py::object& value) {
    py::object holder = value;
    py::object dtype;  // null unless the value is an array or a NumPy scalar
    if (py::isinstance<py::array>(value) || is_numpy_scalar(value)) {
        dtype = value.attr("dtype");
    } else if (PyObject_CheckBuffer(value.ptr())) {
        holder = py::array::ensure(py::memoryview(value));
        if (holder) dtype = holder.attr("dtype");
    }
    if (!dtype)
        throw py::type_error("argument " + std::to_string(index) + " of kernel '" + k.name() +
                             "': a by-value argument must be a NumPy scalar or array, got " +
                             type_name_of(value));
    const auto dt = py::reinterpret_borrow<py::dtype>(dtype);
    const auto check = inspect(dt);
    if (!check.problem.empty())  // the message built only when needed: this runs every launch
        require_plain(dt, "argument " + std::to_string(index) + " of kernel '" + k.name() + "'");
    return check.native ? holder : py::object(in_host_order(py::array::ensure(holder)));
}

}  // namespace

void register_kernel(py::module_& m) {
    py::class_<ArgInfo>(m, "ArgInfo", "A kernel parameter as declared in the source.")
        .def_readonly("name", &ArgInfo::name)
        .def_readonly("type_name", &ArgInfo::type_name)
        .def_readonly("address_qualifier", &ArgInfo::address_qualifier)
        .def_readonly("is_const", &ArgInfo::is_const)
        .def_property_readonly("is_pointer", &ArgInfo::is_pointer)
        .def_property_readonly("is_image", &ArgInfo::is_image)
        .def_property_readonly("is_sampler", &ArgInfo::is_sampler)
        .def("__repr__", [](const ArgInfo& a) {
            return "<ArgInfo " + a.address_qualifier + " " + a.type_name + " " + a.name + ">";
        });
    py::class_<KernelLimits>(m, "KernelLimits", "A kernel's work-group limits on its device.")
        .def_readonly("work_group_size", &KernelLimits::work_group_size)
        .def_readonly("preferred_multiple", &KernelLimits::preferred_multiple)
        .def_readonly("local_mem_bytes", &KernelLimits::local_mem_bytes)
        .def_readonly("private_mem_bytes", &KernelLimits::private_mem_bytes)
        .def_readonly("compile_work_group_size", &KernelLimits::compile_work_group_size);
    py::class_<Kernel, KernelPtr>(m, "Kernel", "One kernel of a Program, with its arguments.")
        .def(py::init([](ProgramPtr p, const std::string& name) {
                 return std::make_shared<Kernel>(std::move(p), name);
             }),
             py::arg("program"), py::arg("name"))
        .def_property_readonly("name", &Kernel::name)
        .def_property_readonly("num_args", &Kernel::num_args)
        .def_property_readonly("args", &Kernel::args)
        .def_property_readonly("context", &Kernel::context)
        .def("limits", &Kernel::limits)
        .def(
            "set_buffer",
            [](Kernel& self, const py::object& index, BufferPtr buffer) {
                self.set_buffer(arg_index(self, index), std::move(buffer));
            },
            py::arg("index"), py::arg("buffer"))
        .def(
            "set_scalar",
            [](Kernel& self, const py::object& index, const py::object& value) {
                const auto i = arg_index(self, index);
                const py::object bytes = scalar_value(self, i, value);
                const auto info = py::reinterpret_borrow<py::buffer>(bytes).request();
                const bool packed = info.ndim == 0 ||
                                    (info.ndim == 1 && info.strides[0] == info.itemsize);
                if (!packed)
                    throw InvalidArgument("by-value argument must be a scalar or a packed "
                                          "1-D array (a vector type such as float4)");
                self.set_scalar(i, info.ptr, static_cast<std::size_t>(info.size * info.itemsize));
            },
            py::arg("index"), py::arg("value"),
            "Set a by-value argument from a NumPy scalar or packed array of plain numbers (its "
            "bytes, in the host's byte order: a value in the other order is converted).")
        .def(
            "set_local",
            [](Kernel& self, const py::object& index, const py::object& nbytes) {
                const auto i = arg_index(self, index);
                self.set_local(i, to_size(nbytes, "local memory size", 0, "number of bytes"));
            },
            py::arg("index"), py::arg("nbytes"))
        .def(
            "set_image",
            [](Kernel& self, const py::object& index, ImagePtr image) {
                self.set_image(arg_index(self, index), std::move(image));
            },
            py::arg("index"), py::arg("image"))
        .def(
            "set_sampler",
            [](Kernel& self, const py::object& index, SamplerPtr sampler) {
                self.set_sampler(arg_index(self, index), std::move(sampler));
            },
            py::arg("index"), py::arg("sampler"))
        .def("forget_args", &Kernel::forget_args,
             "Mark every argument unset (their values stay bound): launches refuse until each "
             "is set again. Kernel.set_args calls it when one of its arguments is refused, so "
             "that a mix of the old and the new arguments never runs.")
        .def("check_ready", &Kernel::check_ready,
             "Raise unless every argument is set (InvalidArgumentError naming the unset ones) and "
             "no buffer or image argument is released (ReleasedError). This is all a launch can "
             "know: nothing checks how far the kernel indexes its buffers.");
}

}  // namespace pyclperf::bindings
