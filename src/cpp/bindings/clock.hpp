// The timing method's name from Python, shared by the registrations that time something.
#pragma once

#include <string>

#include "../error.hpp"
#include "../timing.hpp"

namespace pyclperf::bindings {

inline Clock clock_of(const std::string& name) {
    if (name == "events") return Clock::Events;
    if (name == "host") return Clock::Host;
    throw InvalidArgument("timing method must be 'events' or 'host', got '" + name + "'");
}

}  // namespace pyclperf::bindings
