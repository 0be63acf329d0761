#include "context.hpp"

namespace pyclperf {

Context::Context(int platform_index, int device_index)
    : device_(device_at(platform_index, device_index)),
      info_(describe(device_, platform_index, device_index)),
      context_(device_),
      queue_(context_, device_, CL_QUEUE_PROFILING_ENABLE) {}

void Context::finish() const { queue_.finish(); }

}  // namespace pyclperf
