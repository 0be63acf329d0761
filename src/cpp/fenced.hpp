// A buffer over host memory of its own between two inaccessible reservations, and a record of
// the address of the fault that ends a process.
//
// On a device whose memory is the host's (a CPU device such as PoCL's), a kernel that writes
// far past an array's end writes into whatever the process has mapped there, unseen. A
// FencedBuffer's memory is an anonymous mapping with `fence` bytes of PROT_NONE address space
// on either side (address space only: nothing is committed), handed to the driver with
// CL_MEM_USE_HOST_PTR, so such a write faults instead. record_faults() makes that fault leave
// its address behind for whoever watches the process (the supervisor of a worker process).
#pragma once

#include <cstddef>
#include <cstdint>

#include "buffer.hpp"

namespace pyclperf {

// An anonymous mapping: `fence` bytes of PROT_NONE, `nbytes` (rounded up to whole pages) of
// read-write memory, `fence` bytes of PROT_NONE. Owns it; unmaps on destruction.
class Reservation {
public:
    Reservation(std::size_t nbytes, std::size_t fence);
    ~Reservation();
    Reservation(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    Reservation& operator=(Reservation&&) = delete;

    void* data() const noexcept { return data_; }
    void unmap() noexcept;

private:
    void* base_ = nullptr;
    std::size_t total_ = 0;
    void* data_ = nullptr;
};

class FencedBuffer : public Buffer {
public:
    // InvalidArgument for a zero size or one over the device's largest allocation; ClError
    // (CL_OUT_OF_HOST_MEMORY) when the address space cannot be reserved (a ulimit -v).
    FencedBuffer(ContextPtr ctx, std::size_t nbytes, std::size_t fence);
    ~FencedBuffer() override;

    // Where the buffer's first byte is in this process, and how many inaccessible bytes lie
    // before it and after its last page.
    std::uintptr_t address() const noexcept;
    std::size_t fence() const noexcept { return fence_; }

    // Waits for the queue, releases the cl_mem, then unmaps the memory. Idempotent.
    void release() override;

private:
    FencedBuffer(ContextPtr ctx, std::size_t nbytes, std::size_t fence, Reservation&& memory);
    Reservation memory_;
    std::size_t fence_;
};

// From now on, a SIGSEGV or SIGBUS in this process first writes one line to `fd`:
// "fault <signal number> <address in hex> <w, r or ?>\n" (a write, a read, not known); then it
// goes on as it would have (the handler before this one, or the default: the process ends by
// that signal). For worker processes only: the line is what their supervisor reads.
void record_faults(int fd);

}  // namespace pyclperf
