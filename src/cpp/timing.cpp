#include "timing.hpp"

#include <chrono>
#include <string>

#include "error.hpp"

namespace pyclperf {

namespace {

BlockingWait::Enter wait_enter = nullptr;
BlockingWait::Leave wait_leave = nullptr;

}  // namespace

void BlockingWait::install(Enter enter, Leave leave) noexcept {
    wait_enter = enter;
    wait_leave = leave;
}

BlockingWait::BlockingWait() : token_(wait_enter ? wait_enter() : nullptr) {}

BlockingWait::~BlockingWait() {
    if (wait_leave) wait_leave(token_);
}

namespace {

void finish(const cl::CommandQueue& queue) {
    BlockingWait blocking;
    queue.finish();
}

void check_counts(int warmup, int repeats) {
    if (warmup < 0) throw InvalidArgument("warmup must be >= 0, got " + std::to_string(warmup));
    if (repeats < 1) throw InvalidArgument("repeats must be >= 1, got " + std::to_string(repeats));
}

}  // namespace

// One timestamp of a completed command. A command that failed has none: the driver answers
// CL_PROFILING_INFO_NOT_AVAILABLE, and the command's own negative status then says why. Reading
// the timestamps is how every timed command is checked, so a loop asks no status of commands
// that succeeded (a driver call a launch).
//
// A command not yet complete has no timestamps either. After a wait on its queue that should not
// happen, yet NVIDIA's driver answered so once in a while for a peer copy under load (the status
// read after it said complete): such a command is waited for and asked once more.
std::uint64_t event_timestamp(const cl::Event& e, cl_profiling_info what) {
    cl_ulong t = 0;
    cl_int err = clGetEventProfilingInfo(e(), what, sizeof t, &t, nullptr);
    if (err == CL_SUCCESS) return t;
    auto status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
    if (status < 0) throw ClError("timed command", status);
    if (err == CL_PROFILING_INFO_NOT_AVAILABLE) {
        {
            BlockingWait blocking;
            e.wait();
        }
        err = clGetEventProfilingInfo(e(), what, sizeof t, &t, nullptr);
        if (err == CL_SUCCESS) return t;
        status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
        if (status < 0) throw ClError("timed command", status);
    }
    throw ClError("clGetEventProfilingInfo", err);
}

EventTimes event_times(const cl::Event& e) {
    EventTimes t;
    t.queued = event_timestamp(e, CL_PROFILING_COMMAND_QUEUED);
    t.submit = event_timestamp(e, CL_PROFILING_COMMAND_SUBMIT);
    t.start = event_timestamp(e, CL_PROFILING_COMMAND_START);
    t.end = event_timestamp(e, CL_PROFILING_COMMAND_END);
    return t;
}

namespace {

// Warm-ups, then `repeats` operations back to back, not waited for: the timed ones' spans.
std::vector<EventSpan> enqueue_spans(const EnqueueSpan& op, int warmup, int repeats) {
    check_counts(warmup, repeats);
    // The warm-ups are not waited for: the in-order queue runs them before the timed launches
    // all the same, and an event's start and end do not depend on when the host enqueued it.
    // Waiting would only leave the device idle while the host wakes up and enqueues again.
    for (int i = 0; i < warmup; ++i) op();
    std::vector<EventSpan> spans;
    spans.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) spans.push_back(op());
    return spans;
}

// On the in-order queue the last command's completion means every earlier one is done: waiting
// on its event is what a PyOpenCL loop does, and on NVIDIA it returns sooner than clFinish.
// clWaitForEvents fails if the waited command failed; the others are checked as their
// timestamps are read.
void wait_last(const std::vector<EventSpan>& spans) {
    BlockingWait blocking;
    spans.back().last.wait();
}

// Warm-ups, then `repeats` operations back to back and one wait.
std::vector<EventSpan> run_spans(const EnqueueSpan& op, int warmup, int repeats) {
    auto spans = enqueue_spans(op, warmup, repeats);
    wait_last(spans);
    return spans;
}

std::vector<double> durations_of(const std::vector<EventSpan>& spans) {
    std::vector<double> out;
    out.reserve(spans.size());
    for (const auto& s : spans) {
        const auto start = event_timestamp(s.first, CL_PROFILING_COMMAND_START);
        const auto end = event_timestamp(s.last, CL_PROFILING_COMMAND_END);
        // Timestamps of one command queue share a clock, so end < start means a broken driver.
        if (end < start)
            throw ClError("clGetEventProfilingInfo", CL_PROFILING_INFO_NOT_AVAILABLE,
                          "an operation ended before it started");
        out.push_back(static_cast<double>(end - start));
    }
    return out;
}

}  // namespace

std::vector<EventTimes> time_event_spans(const EnqueueSpan& op, int warmup, int repeats) {
    const auto spans = run_spans(op, warmup, repeats);
    std::vector<EventTimes> out;
    out.reserve(spans.size());
    for (const auto& s : spans) {
        auto t = event_times(s.first);
        if (s.last() != s.first()) t.end = event_timestamp(s.last, CL_PROFILING_COMMAND_END);
        out.push_back(t);
    }
    return out;
}

std::vector<double> time_event_durations(const EnqueueSpan& op, int warmup, int repeats) {
    return durations_of(run_spans(op, warmup, repeats));
}

PendingDurations::PendingDurations(const EnqueueSpan& op, int warmup, int repeats)
    : spans_(enqueue_spans(op, warmup, repeats)) {}

PendingDurations::PendingDurations(std::vector<double> measured)
    : durations_(std::move(measured)), finished_(true) {}

std::vector<double> PendingDurations::finish() {
    if (!finished_) {
        wait_last(spans_);
        durations_ = durations_of(spans_);
        spans_.clear();
        finished_ = true;
    }
    return durations_;
}

EnqueueSpan single_command(Enqueue op) {
    return [op = std::move(op)] {
        const auto e = op();
        return EventSpan{e, e};
    };
}

std::vector<EventTimes> time_events(const Enqueue& op, int warmup, int repeats) {
    return time_event_spans(single_command(op), warmup, repeats);
}

std::vector<double> time_durations(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                   Clock clock, int warmup, int repeats) {
    if (clock == Clock::Host)
        return time_host(queue, [&] { return op().last; }, warmup, repeats);
    return time_event_durations(op, warmup, repeats);
}

std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats) {
    check_counts(warmup, repeats);
    for (int i = 0; i < warmup; ++i) op();
    finish(queue);  // the host clock must see neither the warm-ups nor anything queued before
    using clock = std::chrono::steady_clock;
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = clock::now();
        op();
        finish(queue);
        const auto t1 = clock::now();
        out.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    return out;
}

}  // namespace pyclperf
