#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../sampler.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

void register_sampler(py::module_& m) {
    py::class_<Sampler, SamplerPtr>(
        m, "Sampler",
        "How read_imagef maps coordinates to texels: normalized or texel coordinates, "
        "addressing ('none', 'clamp_to_edge', 'clamp', 'repeat', 'mirrored_repeat') and filter "
        "('nearest', 'linear').")
        .def(py::init([](ContextPtr ctx, bool normalized, const std::string& addressing,
                         const std::string& filter) {
                 return std::make_shared<Sampler>(std::move(ctx), normalized, addressing, filter);
             }),
             py::arg("context"), py::arg("normalized") = false,
             py::arg("addressing") = "clamp_to_edge", py::arg("filter") = "nearest")
        .def_property_readonly("normalized", &Sampler::normalized)
        .def_property_readonly("addressing", &Sampler::addressing)
        .def_property_readonly("filter", &Sampler::filter)
        .def_property_readonly("context", &Sampler::context)
        .def_property_readonly_static(
            "addressing_modes", [](const py::object&) { return Sampler::addressing_modes(); })
        .def_property_readonly_static(
            "filter_modes", [](const py::object&) { return Sampler::filter_modes(); })
        .def("__repr__", [](const Sampler& self) {
            return std::string("<Sampler ") + (self.normalized() ? "normalized" : "texel") +
                   " " + self.addressing() + " " + self.filter() + ">";
        });
}

}  // namespace pyclperf::bindings
