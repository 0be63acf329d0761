// NDRange launches of a Kernel: validation before anything is enqueued, plain runs and timed runs.
#pragma once

#include <cstddef>
#include <vector>

#include "kernel.hpp"
#include "timing.hpp"

namespace pyclperf {

struct NDRange {
    std::vector<std::size_t> global;
    std::vector<std::size_t> local;  // empty: the implementation chooses
};

// InvalidArgument (saying which rule and which numbers) unless the launch can work on this
// device: 1-3 dimensions, positive sizes, local within the device's limits
// (CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_ITEM_SIZES) and dividing global exactly,
// reqd_work_group_size honoured, local memory within the device's. The kernel's own
// CL_KERNEL_WORK_GROUP_SIZE is advice, not a rule: drivers under-report it, so the driver
// decides at enqueue time.
void validate(const Kernel& kernel, const NDRange& range);

// Validates (once per kernel and range), launches once and waits.
void run(Kernel& kernel, const NDRange& range);

// Validates (once per kernel and range: Kernel::range_validated), then the timing loops of timing.hpp over launches of this kernel.
std::vector<EventTimes> time_kernel_events(Kernel& kernel, const NDRange& range, int warmup,
                                           int repeats);
// end - start of each timed launch in ns (time_event_durations: two timestamps read, not four).
std::vector<double> time_kernel_durations(Kernel& kernel, const NDRange& range, int warmup,
                                          int repeats);
// time_kernel_durations in two halves (PendingDurations): the launches enqueued now, waited
// for by finish().
PendingDurations begin_kernel_durations(Kernel& kernel, const NDRange& range, int warmup,
                                        int repeats);
std::vector<double> time_kernel_host(Kernel& kernel, const NDRange& range, int warmup,
                                     int repeats);

}  // namespace pyclperf
