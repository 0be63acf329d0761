// 2-D images of float texels (cl::Image2D), the memory that samplers read through the texture
// path (Guide 3.2.4, Quasar 9.3).
//
// An Image holds width x height texels of 1 (CL_R) or 4 (CL_RGBA) channels of CL_FLOAT, or of
// CL_HALF_FLOAT with `half` (16-bit floats: half the bytes per texel, Quasar 9.4). Creation
// checks the device's image support, CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT, the format list and
// CL_DEVICE_MAX_MEM_ALLOC_SIZE, so a request that cannot work is refused with a message instead of
// a bare driver code. Like Buffer, an
// Image may be released early; any later use raises ReleasedError.
#pragma once

#include <cstddef>
#include <memory>

#include "clhpp.hpp"
#include "context.hpp"

namespace pyclperf {

// InvalidArgument naming the device when it has no image support (CL_DEVICE_IMAGE_SUPPORT).
void require_image_support(const Context& ctx, const char* what);

class Image {
public:
    // channels: 1 (CL_R) or 4 (CL_RGBA); CL_FLOAT, or CL_HALF_FLOAT where `half`. InvalidArgument
    // for a zero or too large side, other channel counts, a format the device lacks, or no image
    // support (shape and format errors); ClError with CL_MEM_OBJECT_ALLOCATION_FAILURE (Python's
    // DeviceMemoryError) past CL_DEVICE_MAX_MEM_ALLOC_SIZE, and the driver's own memory code,
    // with the sizes named, where it refuses the allocation.
    Image(ContextPtr ctx, std::size_t width, std::size_t height, int channels = 1,
          bool half = false);
    Image(const Image&) = delete;
    Image& operator=(const Image&) = delete;

    std::size_t width() const noexcept { return width_; }
    std::size_t height() const noexcept { return height_; }
    int channels() const noexcept { return channels_; }
    bool half() const noexcept { return half_; }
    std::size_t channel_bytes() const noexcept { return half_ ? 2 : sizeof(float); }
    std::size_t texel_bytes() const noexcept { return channel_bytes() * channels_; }
    std::size_t nbytes() const noexcept { return width_ * height_ * texel_bytes(); }
    bool released() const noexcept { return released_; }
    const ContextPtr& context() const noexcept { return ctx_; }

    // The live cl::Image2D; ReleasedError once released.
    const cl::Image2D& handle() const;

    // Blocking copies of the whole image from / to tightly packed host texels (row by row,
    // nbytes() bytes). InvalidArgument when nbytes differs from nbytes().
    void write(const void* src, std::size_t nbytes);
    void read(void* dst, std::size_t nbytes) const;

    // Gives the device memory back now. Idempotent.
    void release();

private:
    void check_bytes(std::size_t nbytes, const char* what) const;

    ContextPtr ctx_;
    std::size_t width_;
    std::size_t height_;
    int channels_;
    bool half_;
    cl::Image2D image_;
    bool released_ = false;
};

using ImagePtr = std::shared_ptr<Image>;

}  // namespace pyclperf
