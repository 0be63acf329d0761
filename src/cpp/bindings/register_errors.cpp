// The exception hierarchy seen from Python, and the translation of every core error into it.
//
//   PyclperfError
//   ├── ClError (also RuntimeError)          .call .code .name
//   │   ├── BuildError                       .log .options
//   │   └── DeviceMemoryError (also MemoryError)  for allocation / resource exhaustion, and
//   │                                             a buffer or image past the largest allocation
//   ├── InvalidArgumentError (also ValueError)
//   │   └── DeviceLimitError                 beyond what the device reports it can take
//   └── ReleasedError (also RuntimeError)    a released buffer, an unmapped mapping
#include <pybind11/pybind11.h>

#include "../clhpp.hpp"
#include "../error.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

struct Types {
    py::object base, cl, build, memory, invalid, limit, released;
};

// Created once and deliberately never destroyed: exception types must outlive the interpreter's
// module teardown, when a pybind11 static destructor could run without the GIL.
Types* types = nullptr;

py::object make_type(py::module_& m, const char* name, py::tuple bases, const char* doc) {
    py::dict ns;
    ns["__module__"] = m.attr("__name__");
    ns["__doc__"] = doc;
    py::object t = py::module_::import("builtins").attr("type")(name, bases, ns);
    m.attr(name) = t;
    return t;
}

// CL_INVALID_BUFFER_SIZE counts too: a buffer larger than the device can hold in one allocation.
bool is_memory_code(int code) {
    return code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
           code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE;
}

// An instance of cls (ClError by default, DeviceMemoryError for exhaustion) with its attributes.
py::object cl_exception(const std::string& call, int code, const std::string& message,
                        const py::object* type = nullptr) {
    const py::object& cls = type ? *type : (is_memory_code(code) ? types->memory : types->cl);
    py::object exc = cls(message);
    exc.attr("call") = call;
    exc.attr("code") = code;
    exc.attr("name") = error_name(code);
    return exc;
}

void set_python_error(const py::object& exc) { PyErr_SetObject(exc.get_type().ptr(), exc.ptr()); }

void translate(std::exception_ptr p) {
    try {
        std::rethrow_exception(p);
    } catch (const BuildError& e) {
        py::object exc = cl_exception(e.call(), e.code(), e.what(), &types->build);
        exc.attr("log") = e.log();
        exc.attr("options") = e.options();
        set_python_error(exc);
    } catch (const ClError& e) {
        set_python_error(cl_exception(e.call(), e.code(), e.what()));
    } catch (const cl::Error& e) {
        set_python_error(cl_exception(e.what(), e.err(), std::string(e.what()) + ": " + error_name(e.err())));
    } catch (const DeviceLimit& e) {
        PyErr_SetString(types->limit.ptr(), e.what());
    } catch (const InvalidArgument& e) {
        PyErr_SetString(types->invalid.ptr(), e.what());
    } catch (const ReleasedError& e) {
        PyErr_SetString(types->released.ptr(), e.what());
    }
}

}  // namespace

void register_errors(py::module_& m) {
    auto builtins = py::module_::import("builtins");
    types = new Types;
    types->base = make_type(m, "PyclperfError", py::make_tuple(builtins.attr("Exception")),
                            "Base of every error pyclperf raises.");
    types->cl = make_type(m, "ClError",
                          py::make_tuple(types->base, builtins.attr("RuntimeError")),
                          "An OpenCL call failed; .call, .code and .name say which and how.");
    types->build = make_type(m, "BuildError", py::make_tuple(types->cl),
                             "A program failed to build; .log holds the device's build log and "
                             ".options the options used.");
    types->memory = make_type(m, "DeviceMemoryError",
                              py::make_tuple(types->cl, builtins.attr("MemoryError")),
                              "The device or host ran out of memory or resources.");
    types->invalid = make_type(m, "InvalidArgumentError",
                               py::make_tuple(types->base, builtins.attr("ValueError")),
                               "A request that cannot work, refused before anything ran.");
    types->limit = make_type(m, "DeviceLimitError", py::make_tuple(types->invalid),
                             "A request beyond what the device reports it can take (a "
                             "work-group or an image larger than its limits).");
    types->released = make_type(m, "ReleasedError",
                                py::make_tuple(types->base, builtins.attr("RuntimeError")),
                                "An object was used after release(), or a mapping after "
                                "unmap().");
    py::register_exception_translator(&translate);
    m.def("error_name", &error_name, py::arg("code"),
          "The CL_* name of an OpenCL status code.");
}

}  // namespace pyclperf::bindings
