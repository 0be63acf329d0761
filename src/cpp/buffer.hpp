// Device buffers and pinned host buffers.
//
// A Buffer may be released early (release()) to give its memory back; any later use raises
// ReleasedError instead of touching a dead cl_mem. A PinnedBuffer is a CL_MEM_ALLOC_HOST_PTR
// buffer kept mapped so that the host sees its memory directly; views of that memory are
// counted, and the mapping cannot be removed (unmap, release) while any view is alive.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clhpp.hpp"
#include "context.hpp"

namespace pyclperf {

// InvalidArgument for 0 bytes; ClError (a memory error) for more than the device's
// CL_DEVICE_MAX_MEM_ALLOC_SIZE, naming the limit. Every buffer the core allocates is checked here.
void check_alloc_size(const DeviceInfo& info, std::size_t nbytes);

class Buffer {
public:
    // InvalidArgument for a zero size or one over the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE.
    Buffer(ContextPtr ctx, std::size_t nbytes, cl_mem_flags flags = CL_MEM_READ_WRITE);
    virtual ~Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    std::size_t nbytes() const noexcept { return nbytes_; }
    bool released() const noexcept { return released_; }
    const ContextPtr& context() const noexcept { return ctx_; }

    // The live cl::Buffer; ReleasedError once released.
    const cl::Buffer& handle() const;

    // Blocking transfers between this buffer and host memory; ranges are checked first.
    virtual void write(const void* src, std::size_t nbytes, std::size_t offset = 0);
    virtual void read(void* dst, std::size_t nbytes, std::size_t offset = 0) const;
    void copy_from(const Buffer& src, std::size_t nbytes, std::size_t src_offset = 0,
                   std::size_t dst_offset = 0);
    // Fills the whole buffer with a repeated pattern of 1, 2, 4, ... 128 bytes.
    void fill(const void* pattern, std::size_t pattern_size);

    // Gives the device memory back now. Idempotent.
    virtual void release();

    // InvalidArgument unless [offset, offset + nbytes) lies inside the buffer.
    void check_range(std::size_t offset, std::size_t nbytes, const char* what) const;

protected:
    // Over host memory the caller owns and keeps alive (CL_MEM_USE_HOST_PTR): FencedBuffer.
    Buffer(ContextPtr ctx, std::size_t nbytes, cl_mem_flags flags, void* host);

    ContextPtr ctx_;
    std::size_t nbytes_;
    cl::Buffer buffer_;
    bool released_ = false;
};

class PinnedBuffer : public Buffer {
public:
    // Allocates with CL_MEM_ALLOC_HOST_PTR and maps the whole buffer for reading and writing.
    PinnedBuffer(ContextPtr ctx, std::size_t nbytes);
    ~PinnedBuffer() override;

    bool mapped() const noexcept { return host_ != nullptr; }
    bool writable() const noexcept { return writable_; }
    // Host address of the mapping; ReleasedError when released or not mapped.
    void* host_ptr() const;

    // Maps the whole buffer (blocking). InvalidArgument if it is mapped already.
    void* map(bool writable = true);
    // ReleasedError if not mapped; InvalidArgument while views are alive.
    void unmap();

    // Views: things that hold host_ptr() (NumPy arrays). The count guards unmap and release.
    void acquire_view();
    void drop_view() noexcept;
    int views() const noexcept { return views_.load(); }

    // InvalidArgument while views are alive; otherwise unmaps and releases.
    void release() override;

    // While mapped, the host memory is the buffer: these copy through the mapping.
    void write(const void* src, std::size_t nbytes, std::size_t offset = 0) override;
    void read(void* dst, std::size_t nbytes, std::size_t offset = 0) const override;

    // OpenCL forbids a kernel to touch a buffer mapped for writing. Launches that take this
    // buffer unmap it first (enqueued, not waited for) and map it again when done; the host
    // address must come back unchanged or the views would dangle, so resume() checks it.
    void suspend_mapping();
    void resume_mapping();

private:
    void* host_ = nullptr;
    bool suspended_ = false;
    bool writable_ = false;
    std::atomic<int> views_{0};
    // map(), unmap() and acquire_view() hold it: the bindings run map and unmap without the
    // GIL (they wait on the device), so a view must not be made while the mapping changes.
    std::mutex mapping_;
};

// For one scope, unmaps the pinned buffers among `buffers` (kernels and device-side copies may
// not touch a buffer mapped for writing) and maps them again at its end. finish() maps them
// again and raises if that fails; the destructor does it silently when unwinding.
class SuspendedMappings {
public:
    explicit SuspendedMappings(const std::vector<const Buffer*>& buffers);
    ~SuspendedMappings();
    SuspendedMappings(const SuspendedMappings&) = delete;
    SuspendedMappings& operator=(const SuspendedMappings&) = delete;
    void finish();

private:
    std::vector<PinnedBuffer*> pinned_;
};

using BufferPtr = std::shared_ptr<Buffer>;
using PinnedBufferPtr = std::shared_ptr<PinnedBuffer>;

}  // namespace pyclperf
