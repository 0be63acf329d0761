// Two devices of one platform in one OpenCL context: the GPU-to-GPU paths of the p2p experiment.
//
// pyclperf's Context holds one device, and a cl_mem of one context can never be an argument of
// another context's command. A copy between two GPUs that the driver may route over the link
// between them (NVLink, PCIe peer access) therefore needs both devices in one context, with a
// profiling queue per device and a buffer for each side. That is all this class is: it owns its
// context, queues, buffers and copy kernel, and times the two ways a program moves data across.
//
// In a multi-device context a buffer belongs to the context, not to a device, and a runtime may
// keep a valid replica on every device that read it: after one copy from A to B, B may hold the
// source's bytes too, and the next copy would be a local one. Every timed copy therefore starts
// from the state of a program that has just produced its data on A: the source is rewritten on
// A (a copy from an origin buffer that only A ever touches, which invalidates replicas elsewhere)
// and migrated there, the destination's storage migrated to B, all waited for. Each repeat is
// timed by both clocks: the copy command's event, and the host from enqueue to completion, which
// also covers any migration a runtime does before the command's start timestamp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <functional>
#include <vector>

#include "clhpp.hpp"
#include "device.hpp"
#include "timing.hpp"

namespace pyclperf {

class PeerPair {
public:
    // Devices a and b of one platform (a == b gives one device with two queues: a loopback, for
    // testing on a host with one device). InvalidArgument for indices that name no device.
    PeerPair(int platform_index, int device_a, int device_b);

    // side 0 is device a, side 1 device b; InvalidArgument for any other side.
    const DeviceInfo& info(int side) const;
    bool same_device() const noexcept { return same_; }

    // Replaces both sides' buffers with new ones of nbytes each (every copy moves a whole
    // buffer: the runtime migrates whole memory objects, so a partial copy would be timed with
    // the whole buffer's migration hidden in it). InvalidArgument for 0 or over either device's
    // CL_DEVICE_MAX_MEM_ALLOC_SIZE.
    void allocate(std::size_t nbytes);
    std::size_t nbytes() const noexcept { return nbytes_; }

    // Blocking transfers of the whole buffer of `side` on that side's queue; `n` must equal
    // nbytes(). write() sets what every copy from `side` starts from (its origin buffer).
    void write(int side, const void* src, std::size_t n);
    void read(int side, void* dst, std::size_t n) const;
    void fill(int side, std::uint8_t value);

    // Builds the copy kernel from OpenCL C source for both devices: kernel(__global const T* src,
    // __global T* dst, ulong count) with count elements of `element_bytes` each. BuildError
    // carries the log of the first device that failed.
    void build_copy_kernel(const std::string& source, const std::string& name,
                           std::size_t element_bytes);

    // Copies side `from`'s buffer into the other side's, each repeat timed alone: the source is
    // migrated to its own device and the destination's (undefined) contents to its device, both
    // waited for; then clEnqueueCopyBuffer on the destination's queue, or the copy kernel run
    // on the destination device over `groups` work-groups of `local` items (a grid-stride
    // kernel reading the other device's buffer). Per repeat, in ns, both clocks.
    struct Times {
        std::vector<double> events;
        std::vector<double> host;
    };
    Times time_copy(int from, int warmup, int repeats);
    Times time_kernel_copy(int from, std::size_t local, std::size_t groups, int warmup,
                           int repeats);
    // The same start, then clEnqueueMigrateMemObjects of the source itself to the destination
    // device: the move a runtime makes implicitly, asked for explicitly. The source's bytes are
    // then read back through the destination's queue into the other side's buffer (untimed), so
    // read(1 - from) checks what arrived.
    Times time_migrate(int from, int warmup, int repeats);

private:
    Times time_each(int from, int warmup, int repeats, const std::function<cl::Event()>& copy);
    void stage(int from);
    int checked(int side) const;
    const cl::Buffer& buffer(int side) const;

    bool same_ = false;
    std::array<cl::Device, 2> devices_;
    std::array<DeviceInfo, 2> infos_;
    cl::Context context_;
    std::array<cl::CommandQueue, 2> queues_;
    std::array<cl::Buffer, 2> buffers_;
    std::array<cl::Buffer, 2> origins_;
    std::size_t nbytes_ = 0;
    cl::Program program_;
    std::string kernel_name_;
    std::size_t element_bytes_ = 0;
};

}  // namespace pyclperf
