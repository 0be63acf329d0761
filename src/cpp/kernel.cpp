#include "kernel.hpp"

#include "error.hpp"

namespace pyclperf {

namespace {

std::string qualifier_name(cl_kernel_arg_address_qualifier q) {
    switch (q) {
        case CL_KERNEL_ARG_ADDRESS_GLOBAL: return "global";
        case CL_KERNEL_ARG_ADDRESS_LOCAL: return "local";
        case CL_KERNEL_ARG_ADDRESS_CONSTANT: return "constant";
        default: return "private";
    }
}

std::string strip(std::string s) {
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "(none)" : out;
}

cl::Kernel make_kernel(const Program& program, const std::string& name) {
    const auto names = program.kernel_names();
    bool found = false;
    for (const auto& n : names) found = found || n == name;
    if (!found)
        throw InvalidArgument("program has no kernel '" + name + "'; it has: " + joined(names));
    return cl::Kernel(program.handle(), name.c_str());
}

}  // namespace

Kernel::Kernel(ProgramPtr program, const std::string& name)
    : program_(std::move(program)), name_(name), kernel_(make_kernel(*program_, name)) {
    const auto n = kernel_.getInfo<CL_KERNEL_NUM_ARGS>();
    for (cl_uint i = 0; i < n; ++i) {
        ArgInfo a;
        try {
            a.name = strip(kernel_.getArgInfo<CL_KERNEL_ARG_NAME>(i));
            a.type_name = strip(kernel_.getArgInfo<CL_KERNEL_ARG_TYPE_NAME>(i));
            a.address_qualifier =
                qualifier_name(kernel_.getArgInfo<CL_KERNEL_ARG_ADDRESS_QUALIFIER>(i));
            a.is_const =
                (kernel_.getArgInfo<CL_KERNEL_ARG_TYPE_QUALIFIER>(i) & CL_KERNEL_ARG_TYPE_CONST) != 0;
        } catch (const cl::Error&) {
            a.name = "arg" + std::to_string(i);
            a.address_qualifier = "unknown";
        }
        args_.push_back(a);
    }
    set_.assign(n, false);
    unset_count_ = n;
    buffers_.assign(n, nullptr);
    images_.assign(n, nullptr);
    samplers_.assign(n, nullptr);
}

bool ArgInfo::is_image() const { return type_name.find("image2d_t") != std::string::npos; }
bool ArgInfo::is_sampler() const { return type_name.find("sampler_t") != std::string::npos; }

void Kernel::mark_set(std::size_t index) {
    buffers_[index] = nullptr;
    images_[index] = nullptr;
    samplers_[index] = nullptr;
    if (!set_[index]) --unset_count_;
    set_[index] = true;
    any_pinned_ = !pinned_args_scan().empty();
}

std::vector<PinnedBufferPtr> Kernel::pinned_args_scan() const {
    std::vector<PinnedBufferPtr> out;
    for (const auto& b : buffers_)
        if (auto p = std::dynamic_pointer_cast<PinnedBuffer>(b)) out.push_back(p);
    return out;
}

const ArgInfo& Kernel::arg_info(std::size_t index) const {
    check_index(index, "argument");
    return args_[index];
}

const KernelLimits& Kernel::limits() const {
    if (limits_) return *limits_;
    const auto& d = program_->context()->device();
    KernelLimits l;
    l.work_group_size = kernel_.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(d);
    l.preferred_multiple =
        kernel_.getWorkGroupInfo<CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE>(d);
    l.local_mem_bytes = kernel_.getWorkGroupInfo<CL_KERNEL_LOCAL_MEM_SIZE>(d);
    l.private_mem_bytes = kernel_.getWorkGroupInfo<CL_KERNEL_PRIVATE_MEM_SIZE>(d);
    for (auto s : kernel_.getWorkGroupInfo<CL_KERNEL_COMPILE_WORK_GROUP_SIZE>(d))
        l.compile_work_group_size.push_back(s);
    limits_ = std::move(l);
    return *limits_;
}

void Kernel::check_index(std::size_t index, const char* kind) const {
    if (index >= args_.size())
        throw InvalidArgument(std::string(kind) + " index " + std::to_string(index) +
                              " out of range: kernel '" + name_ + "' takes " +
                              std::to_string(args_.size()) + " argument(s)");
}

namespace {
std::string describe_param(const std::string& kernel, std::size_t i, const ArgInfo& a) {
    return "argument " + std::to_string(i) + " ('" + a.name + "', " + a.address_qualifier + " " +
           a.type_name + ") of kernel '" + kernel + "'";
}
}  // namespace

void Kernel::set_buffer(std::size_t index, BufferPtr buffer) {
    check_index(index, "argument");
    const auto& a = args_[index];
    if (a.address_qualifier == "private" || a.address_qualifier == "local")
        throw InvalidArgument(describe_param(name_, index, a) + " is not a global or constant "
                              "pointer, but a buffer was given");
    if (a.is_image())
        throw InvalidArgument(describe_param(name_, index, a) + " is an image: pass an Image, "
                              "not a buffer");
    if (!buffer) throw InvalidArgument(describe_param(name_, index, a) + ": no buffer given");
    if (buffer->context() != program_->context())
        throw InvalidArgument(describe_param(name_, index, a) +
                              ": the buffer belongs to another context");
    const auto& handle = buffer->handle();  // ReleasedError for a released buffer
    // Bound here already (a sweep sets every argument again for each point): the driver call
    // would change nothing. (After forget_args the binding stands but must count as set again.)
    if (buffers_[index] == buffer && set_[index]) return;
    kernel_.setArg(static_cast<cl_uint>(index), handle);
    mark_set(index);
    any_pinned_ = any_pinned_ || std::dynamic_pointer_cast<PinnedBuffer>(buffer) != nullptr;
    buffers_[index] = std::move(buffer);
}

void Kernel::set_scalar(std::size_t index, const void* data, std::size_t size) {
    check_index(index, "argument");
    const auto& a = args_[index];
    if (a.address_qualifier != "private" && a.address_qualifier != "unknown")
        throw InvalidArgument(describe_param(name_, index, a) + " is a pointer, but a scalar "
                              "was given");
    if (a.is_sampler())
        throw InvalidArgument(describe_param(name_, index, a) + " is a sampler: pass a "
                              "Sampler, not a value");
    const cl_int err = clSetKernelArg(kernel_(), static_cast<cl_uint>(index), size, data);
    if (err == CL_INVALID_ARG_SIZE)
        throw InvalidArgument(describe_param(name_, index, a) + " does not take a value of " +
                              std::to_string(size) + " bytes (CL_INVALID_ARG_SIZE)");
    if (err != CL_SUCCESS) throw ClError("clSetKernelArg", err);
    mark_set(index);
}

void Kernel::set_local(std::size_t index, std::size_t bytes) {
    check_index(index, "argument");
    const auto& a = args_[index];
    if (a.address_qualifier != "local" && a.address_qualifier != "unknown")
        throw InvalidArgument(describe_param(name_, index, a) + " is not a __local pointer, but "
                              "a local-memory size was given");
    const auto limit = program_->context()->info().local_mem_bytes;
    if (bytes == 0 || bytes > limit)
        throw InvalidArgument(describe_param(name_, index, a) + ": local memory of " +
                              std::to_string(bytes) + " bytes is not in 1.." +
                              std::to_string(limit) + " (CL_DEVICE_LOCAL_MEM_SIZE)");
    kernel_.setArg(static_cast<cl_uint>(index), cl::Local(bytes));
    mark_set(index);
}

void Kernel::set_image(std::size_t index, ImagePtr image) {
    check_index(index, "argument");
    const auto& a = args_[index];
    if (!a.is_image())
        throw InvalidArgument(describe_param(name_, index, a) + " is not an image2d_t, but an "
                              "image was given");
    if (!image) throw InvalidArgument(describe_param(name_, index, a) + ": no image given");
    if (image->context() != program_->context())
        throw InvalidArgument(describe_param(name_, index, a) +
                              ": the image belongs to another context");
    kernel_.setArg(static_cast<cl_uint>(index), image->handle());
    mark_set(index);
    images_[index] = std::move(image);
}

void Kernel::set_sampler(std::size_t index, SamplerPtr sampler) {
    check_index(index, "argument");
    const auto& a = args_[index];
    if (!a.is_sampler())
        throw InvalidArgument(describe_param(name_, index, a) + " is not a sampler_t, but a "
                              "sampler was given");
    if (!sampler) throw InvalidArgument(describe_param(name_, index, a) + ": no sampler given");
    if (sampler->context() != program_->context())
        throw InvalidArgument(describe_param(name_, index, a) +
                              ": the sampler belongs to another context");
    kernel_.setArg(static_cast<cl_uint>(index), sampler->handle());
    mark_set(index);
    samplers_[index] = std::move(sampler);
}

void Kernel::forget_args() {
    set_.assign(set_.size(), false);
    unset_count_ = set_.size();
}

void Kernel::check_ready() const {
    if (unset_count_ != 0) {
        std::string unset;
        for (std::size_t i = 0; i < set_.size(); ++i)
            if (!set_[i])
                unset += (unset.empty() ? "" : ", ") + std::to_string(i) + " ('" + args_[i].name + "')";
        throw InvalidArgument("kernel '" + name_ + "' has unset argument(s): " + unset);
    }
    for (std::size_t i = 0; i < buffers_.size(); ++i)
        if (buffers_[i] && buffers_[i]->released())
            throw ReleasedError(describe_param(name_, i, args_[i]) + " is a released buffer");
    for (std::size_t i = 0; i < images_.size(); ++i)
        if (images_[i] && images_[i]->released())
            throw ReleasedError(describe_param(name_, i, args_[i]) + " is a released image");
}

std::vector<PinnedBufferPtr> Kernel::pinned_args() const {
    return any_pinned_ ? pinned_args_scan() : std::vector<PinnedBufferPtr>{};
}

}  // namespace pyclperf
