// Samplers (cl::Sampler): how a kernel's read_imagef turns a coordinate into a texel value.
//
// Three choices, named as in OpenCL C's CLK_* constants without the prefix:
//   normalized   coordinates in [0, 1) across the image (true) or in texels (false)
//   addressing   "none", "clamp_to_edge", "clamp", "repeat", "mirrored_repeat"
//   filter       "nearest", "linear"
// OpenCL allows repeat and mirrored_repeat only with normalized coordinates; that combination
// is refused here with a message rather than left to the driver.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "clhpp.hpp"
#include "context.hpp"

namespace pyclperf {

class Sampler {
public:
    // InvalidArgument for an unknown addressing or filter name (listing the valid ones), a
    // repeat mode without normalized coordinates, or a device without image support.
    Sampler(ContextPtr ctx, bool normalized, const std::string& addressing,
            const std::string& filter);
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    bool normalized() const noexcept { return normalized_; }
    const std::string& addressing() const noexcept { return addressing_; }
    const std::string& filter() const noexcept { return filter_; }
    const ContextPtr& context() const noexcept { return ctx_; }
    const cl::Sampler& handle() const noexcept { return sampler_; }

    static std::vector<std::string> addressing_modes();
    static std::vector<std::string> filter_modes();

private:
    ContextPtr ctx_;
    bool normalized_;
    std::string addressing_;
    std::string filter_;
    cl::Sampler sampler_;
};

using SamplerPtr = std::shared_ptr<Sampler>;

}  // namespace pyclperf
