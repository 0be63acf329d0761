#include <pybind11/pybind11.h>

#include "../context.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

void register_context(py::module_& m) {
    py::class_<Context, ContextPtr>(m, "Context",
                                    "A device with its context and in-order profiling queue.")
        .def(py::init<int, int>(), py::arg("platform_index"), py::arg("device_index"))
        .def_property_readonly("info", &Context::info, py::return_value_policy::copy)
        .def("finish", &Context::finish, py::call_guard<py::gil_scoped_release>(),
             "Wait until everything enqueued has completed.");
}

}  // namespace pyclperf::bindings
