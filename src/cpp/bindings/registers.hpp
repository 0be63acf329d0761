// One register_<area> function per core area; module.cpp calls them in dependency order.
#pragma once

#include <pybind11/pybind11.h>

namespace pyclperf::bindings {

void register_errors(pybind11::module_& m);
void register_device(pybind11::module_& m);
void register_context(pybind11::module_& m);
void register_buffer(pybind11::module_& m);
void register_image(pybind11::module_& m);
void register_sampler(pybind11::module_& m);
void register_program(pybind11::module_& m);
void register_kernel(pybind11::module_& m);
void register_launch(pybind11::module_& m);
void register_transfer(pybind11::module_& m);
void register_peer(pybind11::module_& m);

}  // namespace pyclperf::bindings
