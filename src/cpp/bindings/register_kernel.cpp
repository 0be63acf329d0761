#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../error.hpp"
#include "../kernel.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

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
        .def("set_buffer", &Kernel::set_buffer, py::arg("index"), py::arg("buffer"))
        .def(
            "set_scalar",
            [](Kernel& self, std::size_t index, const py::buffer& value) {
                const auto info = value.request();
                const bool packed = info.ndim == 0 ||
                                    (info.ndim == 1 && info.strides[0] == info.itemsize);
                if (!packed)
                    throw InvalidArgument("by-value argument must be a scalar or a packed "
                                          "1-D array (a vector type such as float4)");
                self.set_scalar(index, info.ptr,
                                static_cast<std::size_t>(info.size * info.itemsize));
            },
            py::arg("index"), py::arg("value"),
            "Set a by-value argument from a NumPy scalar or packed array (its raw bytes).")
        .def("set_local", &Kernel::set_local, py::arg("index"), py::arg("nbytes"))
        .def("set_image", &Kernel::set_image, py::arg("index"), py::arg("image"))
        .def("set_sampler", &Kernel::set_sampler, py::arg("index"), py::arg("sampler"))
        .def("check_ready", &Kernel::check_ready);
}

}  // namespace pyclperf::bindings
