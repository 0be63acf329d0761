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

// An operation of one command as a span of that command alone.
EnqueueSpan single_command(Enqueue op);

// Every blocking wait of a launch or timing loop (clFinish, clWaitForEvents) runs inside one.
// The Python bindings install hooks that give up the GIL here when the calling thread holds it,
// so the core stays free of Python and a launch holds the GIL everywhere but where it blocks
// (releasing it around a whole call costs a release and a re-acquire of its own, and other
// threads gain nothing while the host is busy enqueueing).
class BlockingWait {
public:
    using Enter = void* (*)();
    using Leave = void (*)(void*);
    static void install(Enter enter, Leave leave) noexcept;
    BlockingWait();
    ~BlockingWait();
    BlockingWait(const BlockingWait&) = delete;
    BlockingWait& operator=(const BlockingWait&) = delete;

private:
    void* token_ = nullptr;
};

// Which clock a timing loop reads.
enum class Clock { Events, Host };

// warmup untimed operations and `repeats` timed ones, all enqueued back to back; waits for them
// all once and returns each timed one's timestamps. InvalidArgument for warmup < 0 or repeats < 1.
std::vector<EventTimes> time_events(const Enqueue& op, int warmup, int repeats);

// time_events for operations of several commands: queued, submit and start come from each
// operation's first event, end from its last.
std::vector<EventTimes> time_event_spans(const EnqueueSpan& op, int warmup, int repeats);

// time_event_spans reduced to each operation's end - start (ns), reading only those two
// timestamps: what Kernel.time and the experiments use, so queued and submit (two more driver
// queries per launch) are read only where asked for.
std::vector<double> time_event_durations(const EnqueueSpan& op, int warmup, int repeats);

// time_event_durations in two halves: the constructor enqueues the warm-ups and the timed
// operations (it does not wait), finish() waits for them once and returns each timed one's
// end - start (ns). Between the two the host is free while the device works: an experiment's
// sweep finishes the last point's row there. A PendingDurations made from durations already
// measured (a path that had to wait inside, see begin_kernel_durations) just returns them.
class PendingDurations {
public:
    PendingDurations(const EnqueueSpan& op, int warmup, int repeats);
    explicit PendingDurations(std::vector<double> measured);
    std::vector<double> finish();

private:
    std::vector<EventSpan> spans_;
    std::vector<double> durations_;
    bool finished_ = false;
};

// Per-operation durations in ns by either clock: end - start of the event span, or time_host.
std::vector<double> time_durations(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                   Clock clock, int warmup, int repeats);

// The Guide's host-clock method: finish, start a steady clock, enqueue, finish, stop; per
// operation, in ns.
std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats);

EventTimes event_times(const cl::Event& event);

// One profiling timestamp of a command (ns): ClError with the command's own status where it
// failed, and a command not yet complete is waited for first.
std::uint64_t event_timestamp(const cl::Event& event, cl_profiling_info what);

}  // namespace pyclperf
