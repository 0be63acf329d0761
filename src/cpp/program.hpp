// Programs built from OpenCL C source with -D defines and build options, and their kernels.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clhpp.hpp"
#include "context.hpp"

namespace pyclperf {

using Defines = std::vector<std::pair<std::string, std::string>>;

class Program {
public:
    // Builds for the context's device. BuildError (with the log and the options) on failure;
    // InvalidArgument for empty source or a define name that is not a C identifier.
    Program(ContextPtr ctx, const std::string& source, const Defines& defines = {},
            const std::string& options = "");

    const ContextPtr& context() const noexcept { return ctx_; }
    const cl::Program& handle() const noexcept { return program_; }
    // The full option string given to clBuildProgram (defines first).
    const std::string& options() const noexcept { return options_; }
    // The build log of a successful build (warnings, often empty).
    std::string build_log() const;
    std::vector<std::string> kernel_names() const;

private:
    ContextPtr ctx_;
    std::string options_;
    cl::Program program_;
};

// "-D NAME=VALUE ... <options>"; InvalidArgument for a bad define name.
std::string compose_options(const Defines& defines, const std::string& options);

using ProgramPtr = std::shared_ptr<Program>;

}  // namespace pyclperf
