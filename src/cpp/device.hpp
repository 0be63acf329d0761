// Platforms and devices: what is there, the properties that decide memory performance, selection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clhpp.hpp"

namespace pyclperf {

struct DeviceInfo {
    // Where it is: indices into clGetPlatformIDs / clGetDeviceIDs(CL_DEVICE_TYPE_ALL).
    int platform_index = 0;
    int device_index = 0;
    std::string platform_name;
    std::string platform_version;
    std::string name;
    std::string vendor;
    std::string type;  // "GPU", "CPU", "ACCELERATOR", "CUSTOM", joined with '|' when several
    std::string version;
    std::string driver_version;
    std::string opencl_c_version;
    std::string extensions;
    // OpenCL 3.0 devices: every OpenCL C version they accept ("1.2", "3.0", ...) and their
    // optional OpenCL C features ("__opencl_c_subgroups", ...). Empty where the device
    // predates 3.0 (then opencl_c_version says it all).
    std::vector<std::string> opencl_c_all_versions;
    std::vector<std::string> opencl_c_features;

    std::uint32_t compute_units = 0;
    std::uint32_t max_clock_mhz = 0;
    std::uint32_t address_bits = 0;
    std::uint64_t global_mem_bytes = 0;
    std::uint64_t global_mem_cache_bytes = 0;
    std::uint32_t global_mem_cacheline_bytes = 0;
    std::uint64_t max_alloc_bytes = 0;
    std::uint64_t local_mem_bytes = 0;
    bool local_mem_is_dedicated = false;
    std::uint64_t constant_mem_bytes = 0;
    std::uint64_t max_work_group_size = 0;
    std::vector<std::uint64_t> max_work_item_sizes;
    std::uint64_t profiling_timer_resolution_ns = 0;
    std::uint32_t mem_base_addr_align_bits = 0;
    bool image_support = false;
    // CL_DEVICE_IMAGE2D_MAX_WIDTH / HEIGHT in texels; 0 where there is no image support.
    std::uint64_t image2d_max_width = 0;
    std::uint64_t image2d_max_height = 0;
    bool host_unified_memory = false;

    // cl_nv_device_attribute_query; -1 where the extension is absent.
    int nv_compute_capability_major = -1;
    int nv_compute_capability_minor = -1;
    int nv_registers_per_block = -1;
    int nv_warp_size = -1;

    bool is_gpu() const { return type.find("GPU") != std::string::npos; }
    bool has_extension(const std::string& ext) const;
};

// Every device of every platform, in platform order. Empty (not an error) where no platform exists.
std::vector<DeviceInfo> list_devices();

// The properties of one cl::Device, with the given indices recorded in the result.
DeviceInfo describe(const cl::Device& device, int platform_index, int device_index);

// The device at (platform, device); InvalidArgument naming the valid range when out of range.
cl::Device device_at(int platform_index, int device_index);

}  // namespace pyclperf
