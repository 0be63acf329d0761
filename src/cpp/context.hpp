// One device, its context and one in-order queue with profiling enabled (events carry timestamps).
#pragma once

#include <memory>

#include "clhpp.hpp"
#include "device.hpp"

namespace pyclperf {

class Context {
public:
    // InvalidArgument where the indices name no device.
    Context(int platform_index, int device_index);

    const DeviceInfo& info() const noexcept { return info_; }
    const cl::Device& device() const noexcept { return device_; }
    const cl::Context& cl_context() const noexcept { return context_; }
    // Enqueueing on one cl::CommandQueue from several threads is allowed by OpenCL.
    const cl::CommandQueue& queue() const noexcept { return queue_; }

    // Blocks until everything enqueued so far has completed.
    void finish() const;

private:
    cl::Device device_;
    DeviceInfo info_;
    cl::Context context_;
    cl::CommandQueue queue_;
};

using ContextPtr = std::shared_ptr<Context>;

}  // namespace pyclperf
