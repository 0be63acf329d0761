#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../program.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

void register_program(py::module_& m) {
    py::class_<Program, ProgramPtr>(m, "Program", "OpenCL C source built for one context.")
        .def(py::init([](ContextPtr ctx, const std::string& source, const Defines& defines,
                         const std::string& options) {
                 // Building can take seconds (PoCL runs LLVM): let other threads run.
                 py::gil_scoped_release nogil;
                 return std::make_shared<Program>(std::move(ctx), source, defines, options);
             }),
             py::arg("context"), py::arg("source"), py::arg("defines") = Defines{},
             py::arg("options") = "")
        .def_property_readonly("options", &Program::options)
        .def_property_readonly("build_log", &Program::build_log)
        .def_property_readonly("kernel_names", &Program::kernel_names)
        .def_property_readonly("context", &Program::context);
    m.def("compose_options", &compose_options, py::arg("defines"), py::arg("options"),
          "The option string a Program passes to clBuildProgram.");
}

}  // namespace pyclperf::bindings
