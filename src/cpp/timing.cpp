#include "timing.hpp"

#include <chrono>
#include <string>

#include "error.hpp"

namespace pyclperf {

namespace {

void check_counts(int warmup, int repeats) {
    if (warmup < 0) throw InvalidArgument("warmup must be >= 0, got " + std::to_string(warmup));
    if (repeats < 1) throw InvalidArgument("repeats must be >= 1, got " + std::to_string(repeats));
}

void warm_up(const cl::CommandQueue& queue, const Enqueue& op, int warmup) {
    for (int i = 0; i < warmup; ++i) op();
    queue.finish();
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

std::vector<EventTimes> time_events(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                                    int repeats) {
    check_counts(warmup, repeats);
    warm_up(queue, op, warmup);
    std::vector<cl::Event> events;
    events.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) events.push_back(op());
    queue.finish();
    std::vector<EventTimes> out;
    out.reserve(events.size());
    for (const auto& e : events) {
        // A failed command reports a negative status; its timestamps would be meaningless.
        const auto status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
        if (status < 0) throw ClError("timed command", status);
        out.push_back(event_times(e));
    }
    return out;
}

std::vector<double> time_host(const cl::CommandQueue& queue, const Enqueue& op, int warmup,
                              int repeats) {
    check_counts(warmup, repeats);
    warm_up(queue, op, warmup);
    using clock = std::chrono::steady_clock;
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = clock::now();
        op();
        queue.finish();
        const auto t1 = clock::now();
        out.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    return out;
}

}  // namespace pyclperf
