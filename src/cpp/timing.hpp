// The timing loops, shared by kernel launches and transfers. Everything between the first warm-up
// and the last timestamp runs here in C++, so no Python overhead enters a figure.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "clhpp.hpp"

namespace pyclperf {

// One command's profiling timestamps on the device clock, in ns.
struct EventTimes {
    std::uint64_t queued = 0;
    std::uint64_t submit = 0;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint64_t duration() const { return end - start; }
};

// Enqueues one timed operation and returns its event.
using Enqueue = std::function<cl::Event()>;

// warmup untimed operations, then `repeats` operations enqueued back to back; waits for them all
// and returns each one's timestamps. InvalidArgument for warmup < 0 or repeats < 1.
std::vector<EventTimes> time_events(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                                    int repeats);

// The Guide's host-clock method: finish, start a steady clock, enqueue, finish, stop; per
// operation, in ns.
std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats);

EventTimes event_times(const cl::Event& event);

}  // namespace pyclperf
