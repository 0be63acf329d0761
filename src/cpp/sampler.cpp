#include "sampler.hpp"

#include <utility>

#include "error.hpp"
#include "image.hpp"

namespace pyclperf {

namespace {

const std::vector<std::pair<std::string, cl_addressing_mode>>& addressing_table() {
    static const std::vector<std::pair<std::string, cl_addressing_mode>> table{
        {"none", CL_ADDRESS_NONE},
        {"clamp_to_edge", CL_ADDRESS_CLAMP_TO_EDGE},
        {"clamp", CL_ADDRESS_CLAMP},
        {"repeat", CL_ADDRESS_REPEAT},
        {"mirrored_repeat", CL_ADDRESS_MIRRORED_REPEAT}};
    return table;
}

const std::vector<std::pair<std::string, cl_filter_mode>>& filter_table() {
    static const std::vector<std::pair<std::string, cl_filter_mode>> table{
        {"nearest", CL_FILTER_NEAREST}, {"linear", CL_FILTER_LINEAR}};
    return table;
}

template <class T>
T lookup(const std::vector<std::pair<std::string, T>>& table, const std::string& name,
         const char* what) {
    std::string valid;
    for (const auto& [n, value] : table) {
        if (n == name) return value;
        valid += (valid.empty() ? "" : ", ") + n;
    }
    throw InvalidArgument(std::string("unknown sampler ") + what + " '" + name +
                          "'; valid: " + valid);
}

cl::Sampler make_sampler(const ContextPtr& ctx, bool normalized, const std::string& addressing,
                         const std::string& filter) {
    if (!ctx) throw InvalidArgument("sampler needs a context");
    const auto mode = lookup(addressing_table(), addressing, "addressing");
    const auto filt = lookup(filter_table(), filter, "filter");
    if (!normalized && (mode == CL_ADDRESS_REPEAT || mode == CL_ADDRESS_MIRRORED_REPEAT))
        throw InvalidArgument("sampler addressing '" + addressing +
                              "' needs normalized coordinates (OpenCL allows repeat modes only "
                              "with normalized=True)");
    require_image_support(*ctx, "a sampler");
    return cl::Sampler(ctx->cl_context(), normalized ? CL_TRUE : CL_FALSE, mode, filt);
}

template <class T>
std::vector<std::string> names(const std::vector<std::pair<std::string, T>>& table) {
    std::vector<std::string> out;
    for (const auto& entry : table) out.push_back(entry.first);
    return out;
}

}  // namespace

Sampler::Sampler(ContextPtr ctx, bool normalized, const std::string& addressing,
                 const std::string& filter)
    : ctx_(std::move(ctx)),
      normalized_(normalized),
      addressing_(addressing),
      filter_(filter),
      sampler_(make_sampler(ctx_, normalized, addressing, filter)) {}

std::vector<std::string> Sampler::addressing_modes() { return names(addressing_table()); }
std::vector<std::string> Sampler::filter_modes() { return names(filter_table()); }

}  // namespace pyclperf
