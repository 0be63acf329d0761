#include "fenced.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "error.hpp"

namespace pyclperf {

namespace {

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

std::size_t whole_pages(std::size_t n) {
    const auto page = page_size();
    return (n + page - 1) / page * page;
}

}  // namespace

Reservation::Reservation(std::size_t nbytes, std::size_t fence) {
    const auto data = whole_pages(nbytes);
    const auto guard = whole_pages(fence);
    if (data < nbytes || guard > (SIZE_MAX - data) / 2)
        throw InvalidArgument("fenced buffer of " + std::to_string(nbytes) + " bytes with fences of " +
                              std::to_string(fence) + " bytes does not fit the address space");
    total_ = data + 2 * guard;
    // PROT_NONE and MAP_NORESERVE: the fences are address space only, never committed memory.
    void* base = mmap(nullptr, total_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED)
        throw ClError("mmap", CL_OUT_OF_HOST_MEMORY,
                      "could not reserve " + std::to_string(total_) +
                          " bytes of address space for a fenced buffer: " + std::strerror(errno));
    base_ = base;
    data_ = static_cast<char*>(base) + guard;
    if (mprotect(data_, data, PROT_READ | PROT_WRITE) != 0) {
        const int err = errno;
        unmap();
        throw ClError("mprotect", CL_OUT_OF_HOST_MEMORY,
                      "could not make " + std::to_string(data) +
                          " bytes of a fenced buffer writable: " + std::strerror(err));
    }
}

Reservation::Reservation(Reservation&& other) noexcept
    : base_(other.base_), total_(other.total_), data_(other.data_) {
    other.base_ = nullptr;
    other.data_ = nullptr;
    other.total_ = 0;
}

Reservation::~Reservation() { unmap(); }

void Reservation::unmap() noexcept {
    if (base_ != nullptr) munmap(base_, total_);
    base_ = nullptr;
    data_ = nullptr;
    total_ = 0;
}

FencedBuffer::FencedBuffer(ContextPtr ctx, std::size_t nbytes, std::size_t fence)
    : FencedBuffer(ctx, nbytes, fence, [&] {
          // The size is checked before any address space is reserved.
          if (!ctx) throw InvalidArgument("buffer needs a context");
          check_alloc_size(ctx->info(), nbytes);
          return Reservation(nbytes, fence);
      }()) {}

FencedBuffer::FencedBuffer(ContextPtr ctx, std::size_t nbytes, std::size_t fence,
                           Reservation&& memory)
    : Buffer(std::move(ctx), nbytes, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, memory.data()),
      memory_(std::move(memory)),
      fence_(whole_pages(fence)) {}

FencedBuffer::~FencedBuffer() {
    try {
        release();
    } catch (...) {
        // A destructor must not throw; the memory is unmapped below regardless.
    }
    memory_.unmap();
}

std::uintptr_t FencedBuffer::address() const noexcept {
    return reinterpret_cast<std::uintptr_t>(memory_.data());
}

void FencedBuffer::release() {
    if (released_) return;
    // No command may still use the memory once it is unmapped.
    try {
        ctx_->queue().finish();
    } catch (...) {
        buffer_ = cl::Buffer();
        released_ = true;
        memory_.unmap();
        throw;
    }
    buffer_ = cl::Buffer();
    released_ = true;
    memory_.unmap();
}

// --- the fault record ------------------------------------------------------------------------
namespace {

int fault_fd = -1;
struct sigaction previous_segv;
struct sigaction previous_bus;

// Only async-signal-safe calls from here on: no allocation, no stdio.
// 'w' for a write, 'r' for a read, '?' where the processor does not say (x86-64 reports it in
// the page fault's error code: bit 1 is set for a write).
char access_of(void* context) {
#if defined(__x86_64__) && defined(REG_ERR)
    if (context != nullptr) {
        const auto* uc = static_cast<const ucontext_t*>(context);
        return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? 'w' : 'r';
    }
#endif
    (void)context;
    return '?';
}

void write_fault(int signo, const void* address, char access) {
    char line[64] = "fault ";
    std::size_t n = 6;
    if (signo >= 10) line[n++] = static_cast<char>('0' + signo / 10 % 10);
    line[n++] = static_cast<char>('0' + signo % 10);
    line[n++] = ' ';
    line[n++] = '0';
    line[n++] = 'x';
    auto value = reinterpret_cast<std::uintptr_t>(address);
    char digits[2 * sizeof(value)];
    std::size_t count = 0;
    do {
        digits[count++] = "0123456789abcdef"[value & 0xF];
        value >>= 4;
    } while (value != 0);
    while (count > 0) line[n++] = digits[--count];
    line[n++] = ' ';
    line[n++] = access;
    line[n++] = '\n';
    ssize_t ignored = write(fault_fd, line, n);
    (void)ignored;
}

void on_fault(int signo, siginfo_t* info, void* context) {
    if (fault_fd >= 0)
        write_fault(signo, info != nullptr ? info->si_addr : nullptr, access_of(context));
    // Back to what was there before: returning retries the faulting access, which now ends the
    // process by the signal (or reaches the earlier handler), as it would have without us.
    sigaction(signo, signo == SIGBUS ? &previous_bus : &previous_segv, nullptr);
}

}  // namespace

void record_faults(int fd) {
    if (fd < 0) throw InvalidArgument("record_faults needs an open file descriptor, got " +
                                      std::to_string(fd));
    const bool installed = fault_fd >= 0;
    fault_fd = fd;
    if (installed) return;
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, &previous_segv) != 0 ||
        sigaction(SIGBUS, &action, &previous_bus) != 0)
        throw ClError("sigaction", CL_OUT_OF_HOST_MEMORY,
                      std::string("could not install the fault record: ") + std::strerror(errno));
}

}  // namespace pyclperf
