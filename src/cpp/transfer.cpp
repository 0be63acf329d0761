#include "transfer.hpp"

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "error.hpp"

namespace pyclperf {

namespace {

std::string bytes_text(std::size_t n) { return std::to_string(n) + " bytes"; }

// Enqueues one piece of a transfer: `len` bytes at byte `offset` of both sides. Where `first` or
// `last` is given, it receives the event of the piece's first or last command.
using EnqueuePiece =
    std::function<void(std::size_t offset, std::size_t len, cl::Event* first, cl::Event* last)>;

// The pieces back to back as one operation. Only the batch's first and last commands carry an
// event: creating events for every piece would add host work that the batch itself does not do.
EnqueueSpan batched(std::size_t nbytes, std::size_t pieces, EnqueuePiece piece) {
    return [=] {
        EventSpan span;
        const std::size_t len = nbytes / pieces;
        for (std::size_t i = 0; i < pieces; ++i)
            piece(i * len, len, i == 0 ? &span.first : nullptr,
                  i + 1 == pieces ? &span.last : nullptr);
        return span;
    };
}

// One command whose event serves as the piece's first and last.
void keep_event(const cl::Event& e, cl::Event* first, cl::Event* last) {
    if (first) *first = e;
    if (last) *last = e;
}

void check_device_side(const Buffer& b, const char* role) {
    if (dynamic_cast<const PinnedBuffer*>(&b) != nullptr)
        throw InvalidArgument(std::string(role) +
                              " must be a device Buffer, not a PinnedBuffer: a pinned buffer is "
                              "host memory; pass it as the host side of a transfer");
}

void check_size(std::size_t nbytes, const char* what) {
    if (nbytes == 0) throw InvalidArgument(std::string(what) + " size must be positive, got 0 bytes");
}

// CL_MAP_WRITE_INVALIDATE_REGION (OpenCL 1.2) tells the driver not to fetch the old contents
// before a host-to-device mapped write; older devices get plain CL_MAP_WRITE.
cl_map_flags write_map_flags(const DeviceInfo& info) {
    int major = 1, minor = 0;
    std::sscanf(info.version.c_str(), "OpenCL %d.%d", &major, &minor);
    return (major > 1 || minor >= 2) ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_WRITE;
}

// Non-blocking enqueueWriteBuffer / enqueueReadBuffer: the call returns at once and the batch's
// commands queue up back to back, as an application overlapping its transfers would issue them.
EnqueuePiece direct_piece(const HostTransfer& t, const Buffer& device, const HostMemory& host) {
    const auto& queue = device.context()->queue();
    char* base = static_cast<char*>(host.data());
    const bool to_device = t.direction == Direction::HostToDevice;
    return [&queue, &device, base, to_device](std::size_t off, std::size_t len, cl::Event* first,
                                              cl::Event* last) {
        cl::Event e;
        cl::Event* wanted = (first || last) ? &e : nullptr;
        if (to_device)
            queue.enqueueWriteBuffer(device.handle(), CL_FALSE, off, len, base + off, nullptr, wanted);
        else
            queue.enqueueReadBuffer(device.handle(), CL_FALSE, off, len, base + off, nullptr, wanted);
        keep_event(e, first, last);
    };
}

// Blocking map, memcpy on the host, unmap: what an application does when it maps instead of
// calling read/write. The map's event starts the piece and the unmap's ends it.
EnqueuePiece mapped_piece(const HostTransfer& t, const Buffer& device, const HostMemory& host) {
    const auto& queue = device.context()->queue();
    char* base = static_cast<char*>(host.data());
    const bool to_device = t.direction == Direction::HostToDevice;
    const cl_map_flags flags = to_device ? write_map_flags(device.context()->info()) : CL_MAP_READ;
    return [&queue, &device, base, to_device, flags](std::size_t off, std::size_t len,
                                                     cl::Event* first, cl::Event* last) {
        const auto& buf = device.handle();
        void* mapped = queue.enqueueMapBuffer(buf, CL_TRUE, flags, off, len, nullptr, first);
        if (to_device)
            std::memcpy(mapped, base + off, len);
        else
            std::memcpy(base + off, mapped, len);
        queue.enqueueUnmapMemObject(buf, mapped, nullptr, last);
    };
}

}  // namespace

HostMemory::HostMemory(void* data, std::size_t nbytes, bool writable)
    : data_(data), nbytes_(nbytes), writable_(writable) {
    if (data == nullptr && nbytes > 0) throw InvalidArgument("host memory pointer is null");
}

HostMemory::HostMemory(PinnedBufferPtr pinned)
    : pinned_(std::move(pinned)), data_(nullptr), nbytes_(0), writable_(false) {
    if (!pinned_) throw InvalidArgument("host memory needs a pinned buffer, got none");
    pinned_->acquire_view();  // ReleasedError when released or unmapped
    data_ = pinned_->host_ptr();
    nbytes_ = pinned_->nbytes();
    writable_ = pinned_->writable();
}

HostMemory::~HostMemory() {
    if (pinned_) pinned_->drop_view();
}

void validate(const HostTransfer& t, const Buffer& device, const HostMemory& host) {
    check_size(t.nbytes, "transfer");
    if (t.pieces == 0) throw InvalidArgument("a transfer needs at least 1 piece, got 0");
    if (t.nbytes % t.pieces != 0)
        throw InvalidArgument("transfer of " + bytes_text(t.nbytes) + " does not split into " +
                              std::to_string(t.pieces) + " equal pieces");
    check_device_side(device, "the device side");
    device.check_range(0, t.nbytes, "transfer");
    if (t.nbytes > host.nbytes())
        throw InvalidArgument("transfer of " + bytes_text(t.nbytes) +
                              " exceeds the host memory of " + bytes_text(host.nbytes()));
    if (t.direction == Direction::DeviceToHost && !host.writable())
        throw InvalidArgument("device-to-host transfer into read-only host memory");
    device.handle();  // ReleasedError, after the size checks
}

std::vector<double> time_host_transfer(const HostTransfer& t, const BufferPtr& device,
                                       const HostMemory& host, Clock clock, int warmup,
                                       int repeats) {
    if (!device) throw InvalidArgument("transfer needs a device buffer, got none");
    validate(t, *device, host);
    auto piece = t.access == Access::Direct ? direct_piece(t, *device, host)
                                            : mapped_piece(t, *device, host);
    return time_durations(device->context()->queue(), batched(t.nbytes, t.pieces, piece), clock,
                          warmup, repeats);
}

std::vector<double> time_device_copy(const BufferPtr& src, const BufferPtr& dst,
                                     std::size_t nbytes, Clock clock, int warmup, int repeats) {
    if (!src || !dst) throw InvalidArgument("device copy needs two buffers");
    check_size(nbytes, "copy");
    check_device_side(*src, "the copy source");
    check_device_side(*dst, "the copy destination");
    if (src == dst) throw InvalidArgument("device copy needs two distinct buffers");
    if (src->context() != dst->context())
        throw InvalidArgument("device copy between buffers of different contexts");
    src->check_range(0, nbytes, "copy source");
    dst->check_range(0, nbytes, "copy destination");
    src->handle();
    dst->handle();
    const auto& queue = src->context()->queue();
    auto piece = [&queue, &src, &dst](std::size_t off, std::size_t len, cl::Event* first,
                                      cl::Event* last) {
        cl::Event e;
        queue.enqueueCopyBuffer(src->handle(), dst->handle(), off, off, len, nullptr, &e);
        keep_event(e, first, last);
    };
    return time_durations(queue, batched(nbytes, 1, piece), clock, warmup, repeats);
}

}  // namespace pyclperf
