#include "peer.hpp"

#include <chrono>

#include "buffer.hpp"
#include "error.hpp"

namespace pyclperf {

namespace {

cl::Context context_over(const cl::Device& a, const cl::Device& b, bool same) {
    // A device listed twice would be ignored by clCreateContext anyway; listing it once says so.
    return same ? cl::Context(a) : cl::Context(std::vector<cl::Device>{a, b});
}

std::string bytes_text(std::size_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

PeerPair::PeerPair(int platform_index, int device_a, int device_b)
    : same_(device_a == device_b),
      devices_{device_at(platform_index, device_a), device_at(platform_index, device_b)},
      infos_{describe(devices_[0], platform_index, device_a),
             describe(devices_[1], platform_index, device_b)},
      context_(context_over(devices_[0], devices_[1], same_)),
      queues_{cl::CommandQueue(context_, devices_[0], CL_QUEUE_PROFILING_ENABLE),
              cl::CommandQueue(context_, devices_[1], CL_QUEUE_PROFILING_ENABLE)} {}

int PeerPair::checked(int side) const {
    if (side != 0 && side != 1)
        throw InvalidArgument("side must be 0 (device a) or 1 (device b), got " +
                              std::to_string(side));
    return side;
}

const DeviceInfo& PeerPair::info(int side) const { return infos_[checked(side)]; }

const cl::Buffer& PeerPair::buffer(int side) const {
    if (nbytes_ == 0) throw InvalidArgument("the peer pair has no buffers yet: call allocate()");
    return buffers_[checked(side)];
}

void PeerPair::allocate(std::size_t nbytes) {
    for (const auto& info : infos_) check_alloc_size(info, nbytes);
    // The old buffers go first, so a larger size never needs both generations at once.
    buffers_ = {};
    origins_ = {};
    nbytes_ = 0;
    buffers_ = {cl::Buffer(context_, CL_MEM_READ_WRITE, nbytes),
                cl::Buffer(context_, CL_MEM_READ_WRITE, nbytes)};
    origins_ = {cl::Buffer(context_, CL_MEM_READ_ONLY, nbytes),
                cl::Buffer(context_, CL_MEM_READ_ONLY, nbytes)};
    nbytes_ = nbytes;
}

void PeerPair::write(int side, const void* src, std::size_t n) {
    const auto& b = buffer(side);
    if (n != nbytes_)
        throw InvalidArgument("peer write of " + bytes_text(n) + " into buffers of " +
                              bytes_text(nbytes_) + ": write the whole buffer");
    queues_[side].enqueueWriteBuffer(origins_[side], CL_TRUE, 0, n, src);
    queues_[side].enqueueCopyBuffer(origins_[side], b, 0, 0, n);
    queues_[side].finish();
}

void PeerPair::read(int side, void* dst, std::size_t n) const {
    const auto& b = buffer(side);
    if (n != nbytes_)
        throw InvalidArgument("peer read of " + bytes_text(n) + " from buffers of " +
                              bytes_text(nbytes_) + ": read the whole buffer");
    queues_[side].enqueueReadBuffer(b, CL_TRUE, 0, n, dst);
}

void PeerPair::fill(int side, std::uint8_t value) {
    const auto& b = buffer(side);
    queues_[side].enqueueFillBuffer(b, value, 0, nbytes_);
    queues_[side].finish();
}

void PeerPair::build_copy_kernel(const std::string& source, const std::string& name,
                                 std::size_t element_bytes) {
    if (element_bytes == 0) throw InvalidArgument("the copy kernel's element size must be > 0");
    cl::Program program(context_, source);
    std::vector<cl::Device> devices{devices_[0]};
    if (!same_) devices.push_back(devices_[1]);
    const std::string options = "-cl-kernel-arg-info";
    try {
        program.build(devices, options.c_str());
    } catch (const cl::Error& e) {
        for (const auto& d : devices) {
            const auto log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(d);
            if (program.getBuildInfo<CL_PROGRAM_BUILD_STATUS>(d) != CL_BUILD_SUCCESS)
                throw BuildError(e.err(), log, options);
        }
        throw;
    }
    cl::Kernel probe(program, name.c_str());  // CL_INVALID_KERNEL_NAME now, not at first use
    program_ = program;
    kernel_name_ = name;
    element_bytes_ = element_bytes;
}

void PeerPair::stage(int from) {
    const int to = 1 - from;
    // The source rewritten on its own device (no replica elsewhere stays valid) and kept there;
    // the destination's old contents are about to be overwritten, so only its storage needs to
    // be on the destination device.
    cl::Event on_source, on_destination;
    queues_[from].enqueueCopyBuffer(origins_[from], buffers_[from], 0, 0, nbytes_);
    queues_[from].enqueueMigrateMemObjects({buffers_[from]}, 0, nullptr, &on_source);
    queues_[to].enqueueMigrateMemObjects({buffers_[to]}, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED,
                                         nullptr, &on_destination);
    on_source.wait();
    on_destination.wait();
}

PeerPair::Times PeerPair::time_each(int from, int warmup, int repeats,
                                    const std::function<cl::Event()>& copy) {
    if (warmup < 0) throw InvalidArgument("warmup must be >= 0, got " + std::to_string(warmup));
    if (repeats < 1) throw InvalidArgument("repeats must be >= 1, got " + std::to_string(repeats));
    const int to = 1 - checked(from);
    buffer(from);
    Times out;
    for (int i = 0; i < warmup + repeats; ++i) {
        stage(from);
        const auto t0 = std::chrono::steady_clock::now();
        const cl::Event e = copy();
        queues_[to].finish();
        const auto t1 = std::chrono::steady_clock::now();
        const auto status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
        if (status < 0) throw ClError("peer copy", status);
        if (i < warmup) continue;
        // Only the two timestamps the figure needs (the queued and submit ones are two more
        // driver answers that could be missing).
        const auto start = event_timestamp(e, CL_PROFILING_COMMAND_START);
        const auto end = event_timestamp(e, CL_PROFILING_COMMAND_END);
        if (end < start)
            throw ClError("clGetEventProfilingInfo", CL_PROFILING_INFO_NOT_AVAILABLE,
                          "a peer copy ended before it started");
        out.events.push_back(static_cast<double>(end - start));
        out.host.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    return out;
}

PeerPair::Times PeerPair::time_copy(int from, int warmup, int repeats) {
    const int to = 1 - checked(from);
    return time_each(from, warmup, repeats, [this, from, to] {
        cl::Event e;
        queues_[to].enqueueCopyBuffer(buffers_[from], buffers_[to], 0, 0, nbytes_, nullptr, &e);
        return e;
    });
}

PeerPair::Times PeerPair::time_kernel_copy(int from, std::size_t local, std::size_t groups,
                                           int warmup, int repeats) {
    const int to = 1 - checked(from);
    if (kernel_name_.empty())
        throw InvalidArgument("no copy kernel: call build_copy_kernel() first");
    if (nbytes_ % element_bytes_ != 0)
        throw InvalidArgument("peer buffers of " + bytes_text(nbytes_) + " are not whole " +
                              std::to_string(element_bytes_) + "-byte elements");
    if (local == 0 || groups == 0)
        throw InvalidArgument("the copy kernel needs local > 0 and groups > 0");
    cl::Kernel kernel(program_, kernel_name_.c_str());
    kernel.setArg(0, buffers_[from]);
    kernel.setArg(1, buffers_[to]);
    kernel.setArg(2, static_cast<cl_ulong>(nbytes_ / element_bytes_));
    // The kernel strides over the grid, so any grid covers the whole buffer and stays inside it.
    return time_each(from, warmup, repeats, [this, to, &kernel, local, groups] {
        cl::Event e;
        queues_[to].enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(local * groups),
                                         cl::NDRange(local), nullptr, &e);
        return e;
    });
}

PeerPair::Times PeerPair::time_migrate(int from, int warmup, int repeats) {
    const int to = 1 - checked(from);
    auto times = time_each(from, warmup, repeats, [this, from, to] {
        cl::Event e;
        queues_[to].enqueueMigrateMemObjects({buffers_[from]}, 0, nullptr, &e);
        return e;
    });
    // What the last migration left on the destination, copied there into its own buffer.
    queues_[to].enqueueCopyBuffer(buffers_[from], buffers_[to], 0, 0, nbytes_);
    queues_[to].finish();
    return times;
}

}  // namespace pyclperf
