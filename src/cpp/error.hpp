// Error types of the core. Bindings map each to a Python exception; nothing here knows Python.
// OpenCL failures inside CLHPP surface as cl::Error (call name + code); the bindings translate
// those exactly like ClError, so both read "clCall: CL_NAME" in Python.
#pragma once

#include <stdexcept>
#include <string>

namespace pyclperf {

// "CL_INVALID_WORK_GROUP_SIZE" for -54; "CL_UNKNOWN_ERROR(-9999)" for codes we do not know.
std::string error_name(int code);

// An OpenCL call failed. what() reads "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE".
class ClError : public std::runtime_error {
public:
    ClError(std::string call, int code, const std::string& detail = "");
    const std::string& call() const noexcept { return call_; }
    int code() const noexcept { return code_; }
    std::string name() const { return error_name(code_); }

private:
    std::string call_;
    int code_;
};

// A program failed to build: carries the device's build log and the options used.
class BuildError : public ClError {
public:
    BuildError(int code, std::string log, std::string options);
    const std::string& log() const noexcept { return log_; }
    const std::string& options() const noexcept { return options_; }

private:
    std::string log_;
    std::string options_;
};

// A request that cannot work (bad size, local size, argument); raised before anything is enqueued.
class InvalidArgument : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// A request beyond what the device reports it can do (a work-group or image larger than its
// limits): the request is sound, this device cannot take it. Sweeps record it as skipped.
class DeviceLimit : public InvalidArgument {
public:
    using InvalidArgument::InvalidArgument;
};

// An object was used after release(), or a mapping after unmap().
class ReleasedError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

}  // namespace pyclperf

