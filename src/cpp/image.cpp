#include "image.hpp"

#include <string>
#include <vector>

#include "error.hpp"

namespace pyclperf {

namespace {

cl::ImageFormat float_format(int channels, bool half) {
    if (channels != 1 && channels != 4)
        throw InvalidArgument("image channels must be 1 (CL_R) or 4 (CL_RGBA), got " +
                              std::to_string(channels));
    return cl::ImageFormat(channels == 1 ? CL_R : CL_RGBA, half ? CL_HALF_FLOAT : CL_FLOAT);
}

void check_format(const Context& ctx, const cl::ImageFormat& format) {
    std::vector<cl::ImageFormat> formats;
    ctx.cl_context().getSupportedImageFormats(CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, &formats);
    for (const auto& f : formats)
        if (f.image_channel_order == format.image_channel_order &&
            f.image_channel_data_type == format.image_channel_data_type)
            return;
    throw InvalidArgument(std::string("image format ") +
                          (format.image_channel_order == CL_R ? "CL_R" : "CL_RGBA") +
                          (format.image_channel_data_type == CL_HALF_FLOAT ? "/CL_HALF_FLOAT"
                                                                           : "/CL_FLOAT") +
                          " is not supported by " + ctx.info().name);
}

void check_side(std::size_t n, std::uint64_t limit, const char* side, const char* query,
                const std::string& device) {
    if (n == 0) throw InvalidArgument(std::string("image ") + side + " must be positive, got 0");
    if (n > limit)
        throw DeviceLimit(std::string("image ") + side + " " + std::to_string(n) +
                              " exceeds the device's limit of " + std::to_string(limit) + " (" +
                              query + ") on " + device);
}

cl::Image2D allocate(const ContextPtr& ctx, std::size_t width, std::size_t height, int channels,
                     bool half) {
    if (!ctx) throw InvalidArgument("image needs a context");
    const auto format = float_format(channels, half);
    const auto& info = ctx->info();
    require_image_support(*ctx, "a 2-D image");
    check_side(width, info.image2d_max_width, "width", "CL_DEVICE_IMAGE2D_MAX_WIDTH", info.name);
    check_side(height, info.image2d_max_height, "height", "CL_DEVICE_IMAGE2D_MAX_HEIGHT",
               info.name);
    check_format(*ctx, format);
    const auto nbytes =
        width * height * (half ? 2 : sizeof(float)) * static_cast<std::size_t>(channels);
    const std::string what = "image of " + std::to_string(width) + " x " +
                             std::to_string(height) + " x " + std::to_string(channels) +
                             (half ? " halves" : " floats") + " (" + std::to_string(nbytes) +
                             " bytes)";
    // Sides within the limits but too many bytes in all is a memory error, like a buffer past the
    // limit, not a shape error: refuse it before the call, naming both sizes. The spec gives
    // clCreateImage no code of its own for this, so it carries the one a refused allocation gets.
    if (nbytes > info.max_alloc_bytes)
        throw ClError("clCreateImage", CL_MEM_OBJECT_ALLOCATION_FAILURE,
                      what + " exceeds the device's largest allocation " +
                          "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = " +
                          std::to_string(info.max_alloc_bytes) + " bytes) on " + info.name);
    try {
        return cl::Image2D(ctx->cl_context(), CL_MEM_READ_WRITE, format, width, height);
    } catch (const cl::Error& e) {
        // Within the limit the driver may still refuse (memory taken by other objects): keep its
        // code, which the bindings map to DeviceMemoryError, but say what was asked for.
        const int code = e.err();
        if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
            code == CL_OUT_OF_HOST_MEMORY)
            throw ClError("clCreateImage", code,
                          what + " refused by " + info.name + " (largest allocation " +
                              std::to_string(info.max_alloc_bytes) + " bytes, global memory " +
                              std::to_string(info.global_mem_bytes) + " bytes)");
        throw;
    }
}

}  // namespace

void require_image_support(const Context& ctx, const char* what) {
    if (!ctx.info().image_support)
        throw InvalidArgument(std::string(what) + " needs image support, which " +
                              ctx.info().name + " lacks (CL_DEVICE_IMAGE_SUPPORT = CL_FALSE)");
}

Image::Image(ContextPtr ctx, std::size_t width, std::size_t height, int channels, bool half)
    : ctx_(std::move(ctx)),
      width_(width),
      height_(height),
      channels_(channels),
      half_(half),
      image_(allocate(ctx_, width, height, channels, half)) {}

const cl::Image2D& Image::handle() const {
    if (released_)
        throw ReleasedError("image of " + std::to_string(width_) + " x " +
                            std::to_string(height_) + " texels was released");
    return image_;
}

void Image::check_bytes(std::size_t nbytes, const char* what) const {
    if (nbytes != this->nbytes())
        throw InvalidArgument(std::string(what) + ": the image holds " +
                              std::to_string(this->nbytes()) + " bytes (" +
                              std::to_string(height_) + " x " + std::to_string(width_) + " x " +
                              std::to_string(channels_) + (half_ ? " halves), got " : " floats), got ") +
                              std::to_string(nbytes));
}

void Image::write(const void* src, std::size_t nbytes) {
    check_bytes(nbytes, "image write");
    const auto& img = handle();
    const cl::array<cl::size_type, 3> origin{0, 0, 0};
    const cl::array<cl::size_type, 3> region{width_, height_, 1};
    ctx_->queue().enqueueWriteImage(img, CL_TRUE, origin, region, width_ * texel_bytes(), 0,
                                    src);
}

void Image::read(void* dst, std::size_t nbytes) const {
    check_bytes(nbytes, "image read");
    const auto& img = handle();
    const cl::array<cl::size_type, 3> origin{0, 0, 0};
    const cl::array<cl::size_type, 3> region{width_, height_, 1};
    ctx_->queue().enqueueReadImage(img, CL_TRUE, origin, region, width_ * texel_bytes(), 0, dst);
}

void Image::release() {
    if (released_) return;
    image_ = cl::Image2D();
    released_ = true;
}

}  // namespace pyclperf
