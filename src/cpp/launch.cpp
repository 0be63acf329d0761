#include "launch.hpp"

#include <cstdint>
#include <string>

#include "error.hpp"

namespace pyclperf {

namespace {

std::string dims_text(const std::vector<std::size_t>& v) {
    std::string out = "(";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + ")";
}

cl::NDRange to_cl(const std::vector<std::size_t>& v) {
    switch (v.size()) {
        case 1: return cl::NDRange(v[0]);
        case 2: return cl::NDRange(v[0], v[1]);
        default: return cl::NDRange(v[0], v[1], v[2]);
    }
}

cl::Event enqueue(const Kernel& kernel, const NDRange& range) {
    cl::Event event;
    const auto local = range.local.empty() ? cl::NullRange : to_cl(range.local);
    kernel.context()->queue().enqueueNDRangeKernel(kernel.handle(), cl::NullRange,
                                                   to_cl(range.global), local, nullptr, &event);
    return event;
}

template <class Loop>
auto guarded(Kernel& kernel, const NDRange& range, Loop&& loop) {
    if (!kernel.range_validated(range.global, range.local)) {
        validate(kernel, range);
        kernel.remember_valid_range(range.global, range.local);
    }
    kernel.check_ready();
    std::vector<const Buffer*> pinned;
    for (const auto& p : kernel.pinned_args()) pinned.push_back(p.get());
    SuspendedMappings guard(pinned);
    auto result = loop([&] { return enqueue(kernel, range); });
    if (!pinned.empty()) {
        BlockingWait blocking;  // mapping pinned buffers again is a blocking map
        guard.finish();
    }
    return result;
}

}  // namespace

namespace {

// PoCL's CPU scheduler (seen in 3.1) counts a launch's work-groups in 32 bits and aborts the
// whole process past that (an assertion in pthread_scheduler.c): refuse such a launch there
// instead of letting user input take the interpreter down. With no local size PoCL may choose
// groups of one work-item, so the global size alone must fit. Other drivers decide for
// themselves.
void check_group_count(const DeviceInfo& info, const NDRange& range) {
    if (info.platform_name.find("Portable Computing Language") == std::string::npos) return;
    constexpr std::uint64_t limit = 0xFFFFFFFFull;
    std::uint64_t groups = 1;
    for (std::size_t i = 0; i < range.global.size(); ++i) {
        const std::uint64_t l = i < range.local.size() && range.local[i] ? range.local[i] : 1;
        const std::uint64_t n = (range.global[i] + l - 1) / l;
        if (n > limit / groups)
            throw InvalidArgument("global size " + dims_text(range.global) + " with local size " +
                                  (range.local.empty() ? std::string("chosen by the driver")
                                                       : dims_text(range.local)) +
                                  " makes over 2^32 work-groups, more than PoCL can schedule");
        groups *= n;
    }
}

}  // namespace

void validate(const Kernel& kernel, const NDRange& range) {
    const auto& info = kernel.context()->info();
    const auto dims = range.global.size();
    if (dims < 1 || dims > 3 || dims > info.max_work_item_sizes.size())
        throw InvalidArgument("global size must have 1 to " +
                              std::to_string(info.max_work_item_sizes.size()) +
                              " dimensions, got " + std::to_string(dims));
    for (auto g : range.global)
        if (g == 0) throw InvalidArgument("global size " + dims_text(range.global) + " has a zero");
    check_group_count(info, range);
    if (range.local.empty()) return;
    if (range.local.size() != dims)
        throw InvalidArgument("local size " + dims_text(range.local) + " and global size " +
                              dims_text(range.global) + " differ in dimensions");
    const auto& limits = kernel.limits();
    std::size_t items = 1;
    for (std::size_t i = 0; i < dims; ++i) {
        const auto l = range.local[i];
        if (l == 0) throw InvalidArgument("local size " + dims_text(range.local) + " has a zero");
        if (l > info.max_work_item_sizes[i])
            throw DeviceLimit("local size " + std::to_string(l) + " in dimension " +
                                  std::to_string(i) + " exceeds the device's limit of " +
                                  std::to_string(info.max_work_item_sizes[i]) +
                                  " (CL_DEVICE_MAX_WORK_ITEM_SIZES)");
        if (range.global[i] % l != 0)
            throw InvalidArgument("local size " + dims_text(range.local) +
                                  " does not divide global size " + dims_text(range.global) +
                                  " in dimension " + std::to_string(i));
        items *= l;
    }
    if (items > info.max_work_group_size)
        throw DeviceLimit("work-group of " + std::to_string(items) + " items " +
                              dims_text(range.local) + " exceeds the device's limit of " +
                              std::to_string(info.max_work_group_size) +
                              " (CL_DEVICE_MAX_WORK_GROUP_SIZE)");
    // CL_KERNEL_WORK_GROUP_SIZE is not enforced here: NVIDIA reports 256 for every kernel and
    // then runs 1024 correctly. The driver is the judge; a launch it refuses raises ClError
    // (CL_INVALID_WORK_GROUP_SIZE, CL_OUT_OF_RESOURCES) from the enqueue.
    const auto& reqd = limits.compile_work_group_size;
    bool has_reqd = false;
    for (auto r : reqd) has_reqd = has_reqd || r != 0;
    if (has_reqd) {
        for (std::size_t i = 0; i < dims && i < reqd.size(); ++i)
            if (range.local[i] != reqd[i])
                throw InvalidArgument("kernel '" + kernel.name() +
                                      "' requires work-group size " +
                                      dims_text({reqd.begin(), reqd.begin() + dims}) +
                                      " (reqd_work_group_size), got " + dims_text(range.local));
    }
    // CL_KERNEL_LOCAL_MEM_SIZE is not enforced either: some drivers report more than a kernel
    // uses (34,816 bytes for 17,408 seen), and the launch runs. A launch that truly needs
    // more local memory than the device has is refused by the driver (CL_OUT_OF_RESOURCES).
}

void run(Kernel& kernel, const NDRange& range) {
    guarded(kernel, range, [&](auto op) {
        const auto event = op();
        BlockingWait blocking;
        event.wait();
        return 0;
    });
}

std::vector<double> time_kernel_durations(Kernel& kernel, const NDRange& range, int warmup,
                                          int repeats) {
    return guarded(kernel, range, [&](auto op) {
        return time_event_durations(single_command(op), warmup, repeats);
    });
}

PendingDurations begin_kernel_durations(Kernel& kernel, const NDRange& range, int warmup,
                                        int repeats) {
    // Pinned arguments are mapped again, a blocking map, once the launches are done: that path
    // waits inside, as time_kernel_durations does.
    if (!kernel.pinned_args().empty())
        return PendingDurations(time_kernel_durations(kernel, range, warmup, repeats));
    return guarded(kernel, range,
                   [&](auto op) { return PendingDurations(single_command(op), warmup, repeats); });
}

std::vector<EventTimes> time_kernel_events(Kernel& kernel, const NDRange& range, int warmup,
                                           int repeats) {
    return guarded(kernel, range,
                   [&](auto op) { return time_events(Enqueue(op), warmup, repeats); });
}

std::vector<double> time_kernel_host(Kernel& kernel, const NDRange& range, int warmup,
                                     int repeats) {
    const auto& queue = kernel.context()->queue();
    return guarded(kernel, range,
                   [&](auto op) { return time_host(queue, Enqueue(op), warmup, repeats); });
}

}  // namespace pyclperf
