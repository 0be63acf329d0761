#include <cstring>
#include "device.hpp"

#include "error.hpp"

namespace pyclperf {

namespace {

// cl_nv_device_attribute_query tokens, spelled out because not every cl_ext.h carries them.
constexpr cl_device_info kNvComputeCapabilityMajor = 0x4000;
constexpr cl_device_info kNvComputeCapabilityMinor = 0x4001;
constexpr cl_device_info kNvRegistersPerBlock = 0x4002;
constexpr cl_device_info kNvWarpSize = 0x4003;

std::string type_string(cl_device_type t) {
    std::string out;
    auto add = [&](cl_device_type bit, const char* name) {
        if (t & bit) out += (out.empty() ? "" : "|") + std::string(name);
    };
    add(CL_DEVICE_TYPE_GPU, "GPU");
    add(CL_DEVICE_TYPE_CPU, "CPU");
    add(CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR");
    add(CL_DEVICE_TYPE_CUSTOM, "CUSTOM");
    return out.empty() ? "UNKNOWN" : out;
}

// CLHPP strings may carry the trailing NUL of the C API; strip it so Python sees clean text.
std::string clean(std::string s) {
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

cl_uint nv_attribute(const cl::Device& d, cl_device_info what) {
    cl_uint value = 0;
    if (clGetDeviceInfo(d(), what, sizeof value, &value, nullptr) != CL_SUCCESS) return 0;
    return value;
}

std::vector<cl::Platform> platforms() {
    std::vector<cl::Platform> out;
    // With no ICD installed the loader answers CL_PLATFORM_NOT_FOUND_KHR: that is "no devices".
    cl_uint n = 0;
    if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) return out;
    cl::Platform::get(&out);
    return out;
}

std::vector<cl::Device> devices_of(const cl::Platform& p) {
    std::vector<cl::Device> out;
    cl_uint n = 0;
    if (clGetDeviceIDs(p(), CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) return out;
    p.getDevices(CL_DEVICE_TYPE_ALL, &out);
    return out;
}

}  // namespace

bool DeviceInfo::has_extension(const std::string& ext) const {
    std::size_t pos = 0;
    while ((pos = extensions.find(ext, pos)) != std::string::npos) {
        const bool starts = pos == 0 || extensions[pos - 1] == ' ';
        const std::size_t end = pos + ext.size();
        const bool ends = end == extensions.size() || extensions[end] == ' ';
        if (starts && ends) return true;
        pos = end;
    }
    return false;
}

// A cl_name_version list query (OpenCL 3.0): the versions as "major.minor", or the names. A
// device before 3.0 refuses the query: an empty list.
std::vector<std::string> name_versions(cl_device_id d, cl_device_info what, bool versions) {
    std::size_t bytes = 0;
    if (clGetDeviceInfo(d, what, 0, nullptr, &bytes) != CL_SUCCESS || bytes == 0) return {};
    std::vector<cl_name_version> items(bytes / sizeof(cl_name_version));
    if (clGetDeviceInfo(d, what, items.size() * sizeof(cl_name_version), items.data(), nullptr) != CL_SUCCESS)
        return {};
    std::vector<std::string> out;
    for (const auto& item : items) {
        if (versions)
            out.push_back(std::to_string(CL_VERSION_MAJOR(item.version)) + "." +
                          std::to_string(CL_VERSION_MINOR(item.version)));
        else
            out.push_back(std::string(item.name, strnlen(item.name, CL_NAME_VERSION_MAX_NAME_SIZE)));
    }
    return out;
}

DeviceInfo describe(const cl::Device& d, int platform_index, int device_index) {
    DeviceInfo info;
    info.platform_index = platform_index;
    info.device_index = device_index;
    cl::Platform p(d.getInfo<CL_DEVICE_PLATFORM>());
    info.platform_name = clean(p.getInfo<CL_PLATFORM_NAME>());
    info.platform_version = clean(p.getInfo<CL_PLATFORM_VERSION>());
    info.name = clean(d.getInfo<CL_DEVICE_NAME>());
    info.vendor = clean(d.getInfo<CL_DEVICE_VENDOR>());
    info.type = type_string(d.getInfo<CL_DEVICE_TYPE>());
    info.version = clean(d.getInfo<CL_DEVICE_VERSION>());
    info.driver_version = clean(d.getInfo<CL_DRIVER_VERSION>());
    info.opencl_c_version = clean(d.getInfo<CL_DEVICE_OPENCL_C_VERSION>());
    info.extensions = clean(d.getInfo<CL_DEVICE_EXTENSIONS>());
    info.opencl_c_all_versions = name_versions(d(), CL_DEVICE_OPENCL_C_ALL_VERSIONS, true);
    info.opencl_c_features = name_versions(d(), CL_DEVICE_OPENCL_C_FEATURES, false);
    info.compute_units = d.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
    info.max_clock_mhz = d.getInfo<CL_DEVICE_MAX_CLOCK_FREQUENCY>();
    info.address_bits = d.getInfo<CL_DEVICE_ADDRESS_BITS>();
    info.global_mem_bytes = d.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
    info.global_mem_cache_bytes = d.getInfo<CL_DEVICE_GLOBAL_MEM_CACHE_SIZE>();
    info.global_mem_cacheline_bytes = d.getInfo<CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE>();
    info.max_alloc_bytes = d.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
    info.local_mem_bytes = d.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
    info.local_mem_is_dedicated = d.getInfo<CL_DEVICE_LOCAL_MEM_TYPE>() == CL_LOCAL;
    info.constant_mem_bytes = d.getInfo<CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE>();
    info.max_work_group_size = d.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
    for (auto s : d.getInfo<CL_DEVICE_MAX_WORK_ITEM_SIZES>()) info.max_work_item_sizes.push_back(s);
    info.profiling_timer_resolution_ns = d.getInfo<CL_DEVICE_PROFILING_TIMER_RESOLUTION>();
    info.mem_base_addr_align_bits = d.getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>();
    info.image_support = d.getInfo<CL_DEVICE_IMAGE_SUPPORT>() == CL_TRUE;
    if (info.image_support) {
        info.image2d_max_width = d.getInfo<CL_DEVICE_IMAGE2D_MAX_WIDTH>();
        info.image2d_max_height = d.getInfo<CL_DEVICE_IMAGE2D_MAX_HEIGHT>();
    }
    cl_bool unified = CL_FALSE;
    // Deprecated in 2.0 but still answered by NVIDIA and PoCL; a refusal just means "no".
    clGetDeviceInfo(d(), CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr);
    info.host_unified_memory = unified == CL_TRUE;
    if (info.has_extension("cl_nv_device_attribute_query")) {
        info.nv_compute_capability_major = static_cast<int>(nv_attribute(d, kNvComputeCapabilityMajor));
        info.nv_compute_capability_minor = static_cast<int>(nv_attribute(d, kNvComputeCapabilityMinor));
        info.nv_registers_per_block = static_cast<int>(nv_attribute(d, kNvRegistersPerBlock));
        info.nv_warp_size = static_cast<int>(nv_attribute(d, kNvWarpSize));
    }
    return info;
}

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> out;
    auto plats = platforms();
    for (std::size_t pi = 0; pi < plats.size(); ++pi) {
        auto devs = devices_of(plats[pi]);
        for (std::size_t di = 0; di < devs.size(); ++di)
            out.push_back(describe(devs[di], static_cast<int>(pi), static_cast<int>(di)));
    }
    return out;
}

cl::Device device_at(int platform_index, int device_index) {
    auto plats = platforms();
    if (platform_index < 0 || static_cast<std::size_t>(platform_index) >= plats.size())
        throw InvalidArgument("no OpenCL platform " + std::to_string(platform_index) + ": " +
                              std::to_string(plats.size()) + " platform(s) found");
    auto devs = devices_of(plats[platform_index]);
    if (device_index < 0 || static_cast<std::size_t>(device_index) >= devs.size())
        throw InvalidArgument("platform " + std::to_string(platform_index) + " has no device " +
                              std::to_string(device_index) + ": it has " +
                              std::to_string(devs.size()) + " device(s)");
    return devs[device_index];
}

}  // namespace pyclperf
