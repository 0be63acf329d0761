#include "buffer.hpp"

#include <cstring>

#include "error.hpp"

namespace pyclperf {

namespace {

std::string bytes_text(std::size_t n) { return std::to_string(n) + " bytes"; }

cl::Buffer allocate(const ContextPtr& ctx, std::size_t nbytes, cl_mem_flags flags,
                    void* host = nullptr) {
    if (!ctx) throw InvalidArgument("buffer needs a context");
    check_alloc_size(ctx->info(), nbytes);
    return cl::Buffer(ctx->cl_context(), flags, nbytes, host);
}

}  // namespace

void check_alloc_size(const DeviceInfo& info, std::size_t nbytes) {
    if (nbytes == 0) throw InvalidArgument("buffer size must be positive, got 0 bytes");
    const auto limit = info.max_alloc_bytes;
    // Past the device's largest allocation the driver would answer CL_INVALID_BUFFER_SIZE (or,
    // on some, fail later at first use): say so now, as the memory error it is, naming the limit.
    if (nbytes > limit)
        throw ClError("clCreateBuffer", CL_INVALID_BUFFER_SIZE,
                      "buffer of " + bytes_text(nbytes) + " exceeds the device's largest " +
                      "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE = " + bytes_text(limit) + ") on " +
                      info.name);
}

Buffer::Buffer(ContextPtr ctx, std::size_t nbytes, cl_mem_flags flags)
    : ctx_(std::move(ctx)), nbytes_(nbytes), buffer_(allocate(ctx_, nbytes, flags)) {}

Buffer::Buffer(ContextPtr ctx, std::size_t nbytes, cl_mem_flags flags, void* host)
    : ctx_(std::move(ctx)), nbytes_(nbytes), buffer_(allocate(ctx_, nbytes, flags, host)) {}

const cl::Buffer& Buffer::handle() const {
    if (released_) throw ReleasedError("buffer of " + bytes_text(nbytes_) + " was released");
    return buffer_;
}

void Buffer::check_range(std::size_t offset, std::size_t nbytes, const char* what) const {
    if (offset > nbytes_ || nbytes > nbytes_ - offset)
        throw InvalidArgument(std::string(what) + ": range [" + std::to_string(offset) + ", " +
                              std::to_string(offset + nbytes) + ") lies outside the buffer of " +
                              bytes_text(nbytes_));
}

void Buffer::write(const void* src, std::size_t nbytes, std::size_t offset) {
    check_range(offset, nbytes, "write");
    if (nbytes == 0) return;
    ctx_->queue().enqueueWriteBuffer(handle(), CL_TRUE, offset, nbytes, src);
}

void Buffer::read(void* dst, std::size_t nbytes, std::size_t offset) const {
    check_range(offset, nbytes, "read");
    if (nbytes == 0) return;
    ctx_->queue().enqueueReadBuffer(handle(), CL_TRUE, offset, nbytes, dst);
}

void Buffer::copy_from(const Buffer& src, std::size_t nbytes, std::size_t src_offset,
                       std::size_t dst_offset) {
    src.check_range(src_offset, nbytes, "copy source");
    check_range(dst_offset, nbytes, "copy destination");
    if (src.context() != ctx_) throw InvalidArgument("copy between buffers of different contexts");
    if (nbytes == 0) return;
    SuspendedMappings unmapped({&src, this});
    ctx_->queue().enqueueCopyBuffer(src.handle(), handle(), src_offset, dst_offset, nbytes);
    ctx_->queue().finish();
    unmapped.finish();
}

void Buffer::fill(const void* pattern, std::size_t pattern_size) {
    const bool power_of_two = pattern_size != 0 && (pattern_size & (pattern_size - 1)) == 0;
    if (!power_of_two || pattern_size > 128)
        throw InvalidArgument("fill pattern must be 1, 2, 4, ... or 128 bytes, got " +
                              bytes_text(pattern_size));
    if (nbytes_ % pattern_size != 0)
        throw InvalidArgument("buffer of " + bytes_text(nbytes_) +
                              " is not a whole number of fill patterns of " +
                              bytes_text(pattern_size));
    SuspendedMappings unmapped({this});
    const auto q = ctx_->queue();
    cl_int err = clEnqueueFillBuffer(q(), handle()(), pattern, pattern_size, 0, nbytes_, 0,
                                     nullptr, nullptr);
    if (err != CL_SUCCESS) throw ClError("clEnqueueFillBuffer", err);
    q.finish();
    unmapped.finish();
}

void Buffer::release() {
    if (released_) return;
    buffer_ = cl::Buffer();
    released_ = true;
}

PinnedBuffer::PinnedBuffer(ContextPtr ctx, std::size_t nbytes)
    : Buffer(std::move(ctx), nbytes, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR) {
    map(true);
}

PinnedBuffer::~PinnedBuffer() {
    // Views hold a shared_ptr to us, so none can be alive here; the mapping must still go.
    if (host_ != nullptr && !released_) {
        try {
            ctx_->queue().enqueueUnmapMemObject(buffer_, host_);
            ctx_->queue().finish();
        } catch (...) {
            // A destructor must not throw; the driver reclaims the mapping with the buffer.
        }
    }
}

void* PinnedBuffer::host_ptr() const {
    handle();  // raises when released
    if (host_ == nullptr) throw ReleasedError("pinned buffer is not mapped; call map() first");
    return host_;
}

void* PinnedBuffer::map(bool writable) {
    std::lock_guard<std::mutex> lock(mapping_);
    const auto& buf = handle();
    if (host_ != nullptr) throw InvalidArgument("pinned buffer is already mapped");
    const cl_map_flags flags = writable ? (CL_MAP_READ | CL_MAP_WRITE) : CL_MAP_READ;
    host_ = ctx_->queue().enqueueMapBuffer(buf, CL_TRUE, flags, 0, nbytes_);
    writable_ = writable;
    return host_;
}

void PinnedBuffer::unmap() {
    std::lock_guard<std::mutex> lock(mapping_);
    const auto& buf = handle();
    if (host_ == nullptr) throw ReleasedError("pinned buffer is not mapped: nothing to unmap");
    if (views_.load() > 0)
        throw InvalidArgument("cannot unmap: " + std::to_string(views_.load()) +
                              " view(s) of the mapping are alive; delete them first");
    ctx_->queue().enqueueUnmapMemObject(buf, host_);
    ctx_->queue().finish();
    host_ = nullptr;
    writable_ = false;
}

void PinnedBuffer::suspend_mapping() {
    if (host_ == nullptr || suspended_) return;
    ctx_->queue().enqueueUnmapMemObject(handle(), host_);
    suspended_ = true;
}

void PinnedBuffer::resume_mapping() {
    if (!suspended_) return;
    const cl_map_flags flags = writable_ ? (CL_MAP_READ | CL_MAP_WRITE) : CL_MAP_READ;
    void* again = ctx_->queue().enqueueMapBuffer(handle(), CL_TRUE, flags, 0, nbytes_);
    suspended_ = false;
    if (again != host_) {
        // Every view points at the old address: keep them pointing at live memory is impossible,
        // so refuse loudly rather than let NumPy read freed memory.
        host_ = again;
        throw ClError("clEnqueueMapBuffer", CL_MAP_FAILURE,
                      "the driver moved the pinned mapping after a kernel used it; "
                      "views created before the launch are stale");
    }
}

void PinnedBuffer::acquire_view() {
    std::lock_guard<std::mutex> lock(mapping_);
    host_ptr();  // a view of nothing is refused
    views_.fetch_add(1);
}

void PinnedBuffer::drop_view() noexcept { views_.fetch_sub(1); }

void PinnedBuffer::release() {
    if (released_) return;
    if (views_.load() > 0)
        throw InvalidArgument("cannot release: " + std::to_string(views_.load()) +
                              " view(s) of its host memory are alive; delete them first");
    if (host_ != nullptr) unmap();
    Buffer::release();
}

}  // namespace pyclperf

namespace pyclperf {

void PinnedBuffer::write(const void* src, std::size_t nbytes, std::size_t offset) {
    check_range(offset, nbytes, "write");
    if (!writable_ && host_ != nullptr)
        throw InvalidArgument("write: the pinned buffer is mapped read-only");
    if (nbytes) std::memcpy(static_cast<char*>(host_ptr()) + offset, src, nbytes);
}

void PinnedBuffer::read(void* dst, std::size_t nbytes, std::size_t offset) const {
    check_range(offset, nbytes, "read");
    if (nbytes) std::memcpy(dst, static_cast<const char*>(host_ptr()) + offset, nbytes);
}

SuspendedMappings::SuspendedMappings(const std::vector<const Buffer*>& buffers) {
    for (const Buffer* b : buffers) {
        // const_cast: suspending changes the mapping's state, not the buffer's contents.
        auto* p = dynamic_cast<PinnedBuffer*>(const_cast<Buffer*>(b));
        if (p == nullptr || p->released() || !p->mapped()) continue;
        bool seen = false;
        for (auto* q : pinned_) seen = seen || q == p;
        if (seen) continue;
        p->suspend_mapping();
        pinned_.push_back(p);
    }
}

void SuspendedMappings::finish() {
    auto pinned = std::move(pinned_);
    pinned_.clear();
    for (auto* p : pinned) p->resume_mapping();
}

SuspendedMappings::~SuspendedMappings() {
    for (auto* p : pinned_) {
        try {
            p->resume_mapping();
        } catch (...) {
            // Already unwinding from another error; that one is the one to report.
        }
    }
}

}  // namespace pyclperf
