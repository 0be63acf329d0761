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

template <class Op>
void warm_up(const cl::CommandQueue& queue, const Op& op, int warmup) {
    if (warmup == 0) return;  // nothing queued: a clFinish would only cost a driver call
    for (int i = 0; i < warmup; ++i) op();
    finish(queue);
}

// A failed command reports a negative status; its timestamps would be meaningless.
void check_completed(const cl::Event& e) {
    const auto status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
    if (status < 0) throw ClError("timed command", status);
}

}  // namespace

EventTimes event_times(const cl::Event& e) {
    EventTimes t;
    t.queued = e.getProfilingInfo<CL_PROFILING_COMMAND_QUEUED>();
    t.submit = e.getProfilingInfo<CL_PROFILING_COMMAND_SUBMIT>();
    t.start = e.getProfilingInfo<CL_PROFILING_COMMAND_START>();
    t.end = e.getProfilingInfo<CL_PROFILING_COMMAND_END>();
    return t;
}

namespace {

// Warm-ups, then `repeats` operations back to back and one wait; each completed or ClError.
std::vector<EventSpan> run_spans(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                 int warmup, int repeats) {
    check_counts(warmup, repeats);
    warm_up(queue, op, warmup);
    std::vector<EventSpan> spans;
    spans.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) spans.push_back(op());
    {
        // On the in-order queue the last command's completion means every earlier one is done:
        // waiting on its event is what a PyOpenCL loop does, and on NVIDIA it returns sooner than
        // clFinish. A failed command still surfaces below, by its status.
        BlockingWait blocking;
        spans.back().last.wait();  // clWaitForEvents fails if the waited command failed
    }
    // The waited event's status is known already; asking again costs a driver call a launch.
    const cl_event waited = spans.back().last();
    for (const auto& s : spans) {
        if (s.first() != waited) check_completed(s.first);
        if (s.last() != s.first() && s.last() != waited) check_completed(s.last);
    }
    return spans;
}

}  // namespace

std::vector<EventTimes> time_event_spans(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                         int warmup, int repeats) {
    const auto spans = run_spans(queue, op, warmup, repeats);
    std::vector<EventTimes> out;
    out.reserve(spans.size());
    for (const auto& s : spans) {
        auto t = event_times(s.first);
        t.end = s.last.getProfilingInfo<CL_PROFILING_COMMAND_END>();
        out.push_back(t);
    }
    return out;
}

std::vector<double> time_event_durations(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                         int warmup, int repeats) {
    const auto spans = run_spans(queue, op, warmup, repeats);
    std::vector<double> out;
    out.reserve(spans.size());
    for (const auto& s : spans) {
        const auto start = s.first.getProfilingInfo<CL_PROFILING_COMMAND_START>();
        const auto end = s.last.getProfilingInfo<CL_PROFILING_COMMAND_END>();
        // Timestamps of one command queue share a clock, so end < start means a broken driver.
        if (end < start)
            throw ClError("clGetEventProfilingInfo", CL_PROFILING_INFO_NOT_AVAILABLE,
                          "an operation ended before it started");
        out.push_back(static_cast<double>(end - start));
    }
    return out;
}

std::vector<EventTimes> time_events(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                                    int repeats) {
    return time_event_spans(
        queue,
        [&] {
            const auto e = op();
            return EventSpan{e, e};
        },
        warmup, repeats);
}

std::vector<double> time_durations(const cl::CommandQueue& queue, const EnqueueSpan& op,
                                   Clock clock, int warmup, int repeats) {
    if (clock == Clock::Host)
        return time_host(queue, [&] { return op().last; }, warmup, repeats);
    return time_event_durations(queue, op, warmup, repeats);
}

std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats) {
    check_counts(warmup, repeats);
    warm_up(queue, op, warmup);
    finish(queue);  // the host clock must not see work queued before the first timed launch
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
