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

// An operation made of several commands (a batch of transfers; map, copy, unmap): the events of
// its first and last command. On the in-order queue the span from the first's start to the last's
// end covers every command in between.
struct EventSpan {
    cl::Event first;
    cl::Event last;
};
using EnqueueSpan = std::function<EventSpan()>;

// Which clock a timing loop reads.
enum class Clock { Events, Host };

// warmup untimed operations, then `repeats` operations enqueued back to back; waits for them all
// and returns each one's timestamps. InvalidArgument for warmup < 0 or repeats < 1.
std::vector<EventTimes> time_events(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                                    int repeats);

// time_events for operations of several commands: queued, submit and start come from each
// operation's first event, end from its last.
std::vector<EventTimes> time_event_spans(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                         int warmup, int repeats);

// Per-operation durations in ns by either clock: end - start of the event span, or time_host.
std::vector<double> time_durations(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                   Clock clock, int warmup, int repeats);

// The Guide's host-clock method: finish, start a steady clock, enqueue, finish, stop; per
// operation, in ns.
std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats);

EventTimes event_times(const cl::Event& event);

}  // namespace pyclperf
