#include "program.hpp"

#include <cctype>
#include <sstream>

#include "error.hpp"

namespace pyclperf {

namespace {

bool is_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

std::string log_for(const cl::Program& p, const cl::Device& d) {
    std::string log;
    try {
        log = p.getBuildInfo<CL_PROGRAM_BUILD_LOG>(d);
    } catch (const cl::Error&) {
        return "(the device gave no build log)";
    }
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

// OpenCL takes source and options as C strings: a NUL would end them there, silently dropping
// the rest (a kernel, a define), so text holding one is refused.
void refuse_nul(const std::string& text, const std::string& what) {
    const auto at = text.find('\0');
    if (at != std::string::npos)
        throw InvalidArgument(what + " contains a NUL character (at offset " + std::to_string(at) +
                              "); OpenCL would read it only up to there, so remove it");
}

}  // namespace

std::string compose_options(const Defines& defines, const std::string& options) {
    refuse_nul(options, "build options");
    std::ostringstream out;
    for (const auto& [name, value] : defines) {
        refuse_nul(name, "define name");
        refuse_nul(value, "define " + name + "'s value");
        if (!is_identifier(name))
            throw InvalidArgument("define name '" + name + "' is not a C identifier");
        if (value.find_first_of(" \t\n\"'") != std::string::npos)
            throw InvalidArgument("define " + name + " has a value with spaces or quotes: '" +
                                  value + "'");
        // Always NAME=VALUE: an empty value defines an empty macro, as the caller asked, where a
        // bare -D NAME would define it as 1.
        out << "-D " << name << '=' << value << ' ';
    }
    // Argument metadata lets the bindings name an argument's declared type in error messages.
    out << "-cl-kernel-arg-info";
    if (!options.empty()) out << ' ' << options;
    return out.str();
}

Program::Program(ContextPtr ctx, const std::string& source, const Defines& defines,
                 const std::string& options)
    : ctx_(std::move(ctx)), options_(compose_options(defines, options)) {
    if (!ctx_) throw InvalidArgument("program needs a context");
    if (source.find_first_not_of(" \t\r\n") == std::string::npos)
        throw InvalidArgument("program source is empty");
    refuse_nul(source, "program source");
    program_ = cl::Program(ctx_->cl_context(), source);
    const cl_int err = clBuildProgram(program_(), 1, &ctx_->device()(), options_.c_str(),
                                      nullptr, nullptr);
    if (err != CL_SUCCESS) throw BuildError(err, log_for(program_, ctx_->device()), options_);
}

std::string Program::build_log() const { return log_for(program_, ctx_->device()); }

std::vector<std::string> Program::kernel_names() const {
    std::vector<std::string> names;
    std::stringstream all(program_.getInfo<CL_PROGRAM_KERNEL_NAMES>());
    std::string name;
    while (std::getline(all, name, ';')) {
        while (!name.empty() && name.back() == '\0') name.pop_back();
        if (!name.empty()) names.push_back(name);
    }
    return names;
}

}  // namespace pyclperf
