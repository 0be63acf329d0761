// Timed transfers between host memory and device buffers, and between device buffers (Guide 3.1).
//
// Host memory is either pageable (any memory the caller owns, e.g. a NumPy array) or the mapped
// host pointer of a PinnedBuffer. A pinned transfer is enqueueRead/WriteBuffer between a device
// buffer and that pointer: on NVIDIA a CL_MEM_ALLOC_HOST_PTR buffer also has a device-side copy,
// so copying from its cl_mem would time a device copy, not a trip over the bus.
//
// Every function validates first (InvalidArgument naming the problem, ReleasedError for a
// released buffer), then runs warm-up and timed operations through the loops of timing.hpp and
// returns each repeat's time in ns.
#pragma once

#include <cstddef>
#include <vector>

#include "buffer.hpp"
#include "timing.hpp"

namespace pyclperf {

enum class Direction { HostToDevice, DeviceToHost };

// Direct: enqueueWriteBuffer / enqueueReadBuffer from or into host memory.
// Mapped: map the device buffer, memcpy between it and host memory, unmap.
enum class Access { Direct, Mapped };

// The host side of a transfer. For a pinned buffer it holds a view of the mapping, so the mapping
// cannot be removed (unmap, release) while a transfer uses it.
class HostMemory {
public:
    // Pageable memory that the caller owns and keeps alive for as long as this object is used.
    HostMemory(void* data, std::size_t nbytes, bool writable);
    // The mapping of a pinned buffer; ReleasedError when released or not mapped.
    explicit HostMemory(PinnedBufferPtr pinned);
    ~HostMemory();
    HostMemory(const HostMemory&) = delete;
    HostMemory& operator=(const HostMemory&) = delete;

    void* data() const noexcept { return data_; }
    std::size_t nbytes() const noexcept { return nbytes_; }
    bool writable() const noexcept { return writable_; }
    bool pinned() const noexcept { return pinned_ != nullptr; }

private:
    PinnedBufferPtr pinned_;
    void* data_;
    std::size_t nbytes_;
    bool writable_;
};

// `nbytes` between byte 0 of the device buffer and byte 0 of the host memory, moved as `pieces`
// back-to-back transfers of nbytes / pieces each (pieces > 1: the batching experiment).
struct HostTransfer {
    Direction direction = Direction::HostToDevice;
    Access access = Access::Direct;
    std::size_t nbytes = 0;
    std::size_t pieces = 1;
};

// InvalidArgument unless the transfer fits both sides and splits into equal pieces, the device
// side is a device Buffer (not a PinnedBuffer) and the host side is writable for device-to-host;
// ReleasedError for a released device buffer.
void validate(const HostTransfer& transfer, const Buffer& device, const HostMemory& host);

// Times the whole operation (all its pieces) per repeat: by events from the first command's start
// to the last command's end, or by the host clock around enqueue and finish. For mapped access the
// event span runs from the map's start to the unmap's end, so it includes the host's memcpy.
std::vector<double> time_host_transfer(const HostTransfer& transfer, const BufferPtr& device,
                                       const HostMemory& host, Clock clock, int warmup,
                                       int repeats);

// enqueueCopyBuffer of `nbytes` from byte 0 of src to byte 0 of dst: two distinct device Buffers
// of one context.
std::vector<double> time_device_copy(const BufferPtr& src, const BufferPtr& dst,
                                     std::size_t nbytes, Clock clock, int warmup, int repeats);

}  // namespace pyclperf
