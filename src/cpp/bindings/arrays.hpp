// NumPy arrays as raw host memory, shared by the registrations that take arrays.
#pragma once

#include <pybind11/numpy.h>

#include <string>

#include "../error.hpp"

namespace pyclperf::bindings {

// A C-contiguous NumPy array's bytes; InvalidArgument for anything else (no silent copies).
inline pybind11::buffer_info contiguous(const pybind11::array& a, bool writable) {
    if (!(a.flags() & pybind11::array::c_style))
        throw InvalidArgument("array must be C-contiguous (use numpy.ascontiguousarray)");
    if (writable && !a.writeable()) throw InvalidArgument("destination array is read-only");
    // Object arrays hold PyObject pointers: copying those bytes to a device (or overwriting
    // them from one) would hand out or corrupt host addresses.
    const char kind = a.dtype().kind();
    if (kind == 'O' || kind == 'U' || kind == 'S' || kind == 'M' || kind == 'm')
        throw InvalidArgument(std::string("a ") + kind + "-kind NumPy array (dtype " +
                              std::string(pybind11::str(a.dtype())) +
                              ") holds no plain numbers; pass a numeric array");
    return a.request(writable);
}

}  // namespace pyclperf::bindings
