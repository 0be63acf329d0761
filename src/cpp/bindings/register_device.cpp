#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../device.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

void register_device(py::module_& m) {
    using D = DeviceInfo;
    py::class_<D>(m, "DeviceInfo", "Properties of one OpenCL device (a snapshot).")
        .def_readonly("platform_index", &D::platform_index)
        .def_readonly("device_index", &D::device_index)
        .def_readonly("platform_name", &D::platform_name)
        .def_readonly("platform_version", &D::platform_version)
        .def_readonly("name", &D::name)
        .def_readonly("vendor", &D::vendor)
        .def_readonly("type", &D::type)
        .def_readonly("version", &D::version)
        .def_readonly("driver_version", &D::driver_version)
        .def_readonly("opencl_c_version", &D::opencl_c_version)
        .def_readonly("extensions", &D::extensions)
        .def_readonly("opencl_c_all_versions", &D::opencl_c_all_versions)
        .def_readonly("opencl_c_features", &D::opencl_c_features)
        .def_readonly("compute_units", &D::compute_units)
        .def_readonly("max_clock_mhz", &D::max_clock_mhz)
        .def_readonly("address_bits", &D::address_bits)
        .def_readonly("global_mem_bytes", &D::global_mem_bytes)
        .def_readonly("global_mem_cache_bytes", &D::global_mem_cache_bytes)
        .def_readonly("global_mem_cacheline_bytes", &D::global_mem_cacheline_bytes)
        .def_readonly("max_alloc_bytes", &D::max_alloc_bytes)
        .def_readonly("local_mem_bytes", &D::local_mem_bytes)
        .def_readonly("local_mem_is_dedicated", &D::local_mem_is_dedicated)
        .def_readonly("constant_mem_bytes", &D::constant_mem_bytes)
        .def_readonly("max_work_group_size", &D::max_work_group_size)
        .def_readonly("max_work_item_sizes", &D::max_work_item_sizes)
        .def_readonly("profiling_timer_resolution_ns", &D::profiling_timer_resolution_ns)
        .def_readonly("mem_base_addr_align_bits", &D::mem_base_addr_align_bits)
        .def_readonly("image_support", &D::image_support)
        .def_readonly("image2d_max_width", &D::image2d_max_width)
        .def_readonly("image2d_max_height", &D::image2d_max_height)
        .def_readonly("host_unified_memory", &D::host_unified_memory)
        .def_readonly("nv_compute_capability_major", &D::nv_compute_capability_major)
        .def_readonly("nv_compute_capability_minor", &D::nv_compute_capability_minor)
        .def_readonly("nv_registers_per_block", &D::nv_registers_per_block)
        .def_readonly("nv_warp_size", &D::nv_warp_size)
        .def_property_readonly("is_gpu", &D::is_gpu)
        .def("has_extension", &D::has_extension, py::arg("name"))
        .def("__repr__", [](const D& d) {
            return "<DeviceInfo " + std::to_string(d.platform_index) + ":" +
                   std::to_string(d.device_index) + " " + d.type + " '" + d.name + "' on '" +
                   d.platform_name + "'>";
        });
    m.def("list_devices", &list_devices,
          "Every device of every OpenCL platform; empty when no platform is installed.");
}

}  // namespace pyclperf::bindings
