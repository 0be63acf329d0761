// A kernel of a built program, its arguments and its work-group limits on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "clhpp.hpp"
#include "image.hpp"
#include "program.hpp"
#include "sampler.hpp"

namespace pyclperf {

// Declared form of one kernel parameter (needs -cl-kernel-arg-info, which Program always adds).
struct ArgInfo {
    std::string name;
    std::string type_name;          // "float*", "int", "float4" ...
    std::string address_qualifier;  // "global", "local", "constant", "private"
    // Declared const (CL_KERNEL_ARG_TYPE_CONST): the kernel cannot write through it, so a
    // tuner need not upload an unchanged input again (tuner/arguments.py).
    bool is_const = false;
    bool is_pointer() const { return address_qualifier != "private"; }
    // image2d_t parameters are global memory objects but no pointers; sampler_t ones are private.
    bool is_image() const;
    bool is_sampler() const;
};

struct KernelLimits {
    std::uint64_t work_group_size = 0;            // CL_KERNEL_WORK_GROUP_SIZE
    std::uint64_t preferred_multiple = 0;         // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
    std::uint64_t local_mem_bytes = 0;            // static __local use
    std::uint64_t private_mem_bytes = 0;
    std::vector<std::uint64_t> compile_work_group_size;  // reqd_work_group_size, or zeros
};

class Kernel {
public:
    // InvalidArgument naming the program's kernels when there is no kernel of that name.
    Kernel(ProgramPtr program, const std::string& name);

    const std::string& name() const noexcept { return name_; }
    std::size_t num_args() const noexcept { return args_.size(); }
    const ArgInfo& arg_info(std::size_t index) const;
    const std::vector<ArgInfo>& args() const noexcept { return args_; }
    // Queried once and kept: a launch validates against it, and the five driver queries cost
    // more than the rest of a timed launch's host work together.
    const KernelLimits& limits() const;
    const ContextPtr& context() const noexcept { return program_->context(); }

    // Each setter checks the index and the parameter's address space, then sets the argument.
    void set_buffer(std::size_t index, BufferPtr buffer);
    void set_scalar(std::size_t index, const void* data, std::size_t size);
    void set_local(std::size_t index, std::size_t bytes);
    // Only for parameters declared image2d_t / sampler_t; InvalidArgument naming the parameter
    // otherwise (and for an image or sampler of another context).
    void set_image(std::size_t index, ImagePtr image);
    void set_sampler(std::size_t index, SamplerPtr sampler);

    // Marks every argument unset; the values stay bound (and their objects alive) until set
    // again. For a failed set of several arguments: some hold the new values, the rest the old,
    // a combination nobody asked for, so no launch may use it.
    void forget_args();

    // InvalidArgument naming unset arguments; ReleasedError for a released buffer or image
    // argument. Unset arguments are counted as they are set, so a ready kernel costs only the
    // released-object look (a buffer can be released between two launches).
    void check_ready() const;
    // Pinned buffers among the arguments (launches unmap them around the kernel); empty
    // without a scan when no argument is one (known when the arguments are set).
    std::vector<PinnedBufferPtr> pinned_args() const;

    // The last NDRange validate() accepted for this kernel. Whether a range is valid depends
    // only on the kernel's limits and the device's, which never change, so a launch repeated
    // with the same range (every timed loop, every Kernel.time from Python) validates once.
    // Both take a lock: timing loops call them without the GIL, so two Python threads timing
    // one kernel may meet here.
    bool range_validated(const std::vector<std::size_t>& global,
                         const std::vector<std::size_t>& local) const {
        std::lock_guard<std::mutex> lock(range_mutex_);
        return has_valid_range_ && global == valid_global_ && local == valid_local_;
    }
    void remember_valid_range(const std::vector<std::size_t>& global,
                              const std::vector<std::size_t>& local) const {
        std::lock_guard<std::mutex> lock(range_mutex_);
        valid_global_ = global;
        valid_local_ = local;
        has_valid_range_ = true;
    }

    const cl::Kernel& handle() const noexcept { return kernel_; }

private:
    void check_index(std::size_t index, const char* kind) const;
    // Marks argument `index` set and drops whatever object an earlier value kept alive.
    void mark_set(std::size_t index);
    std::vector<PinnedBufferPtr> pinned_args_scan() const;

    ProgramPtr program_;
    std::string name_;
    cl::Kernel kernel_;
    std::vector<ArgInfo> args_;
    std::vector<bool> set_;
    std::vector<BufferPtr> buffers_;  // keeps buffer arguments alive and checkable
    std::vector<ImagePtr> images_;    // the same for image arguments
    std::vector<SamplerPtr> samplers_;
    std::size_t unset_count_ = 0;  // arguments never set: check_ready's fast path
    bool any_pinned_ = false;      // some buffer argument is a PinnedBuffer
    mutable std::optional<KernelLimits> limits_;
    mutable std::vector<std::size_t> valid_global_, valid_local_;
    mutable bool has_valid_range_ = false;
    mutable std::mutex range_mutex_;
};

using KernelPtr = std::shared_ptr<Kernel>;

}  // namespace pyclperf
