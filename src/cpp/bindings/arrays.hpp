// NumPy arrays as raw host memory, shared by the registrations that take arrays.
#pragma once

#include <pybind11/numpy.h>

#include "../error.hpp"

namespace pyclperf::bindings {

// A C-contiguous NumPy array's bytes; InvalidArgument for anything else (no silent copies).
inline pybind11::buffer_info contiguous(const pybind11::array& a, bool writable) {
    if (!(a.flags() & pybind11::array::c_style))
        throw InvalidArgument("array must be C-contiguous (use numpy.ascontiguousarray)");
    if (writable && !a.writeable()) throw InvalidArgument("destination array is read-only");
    return a.request(writable);
}

}  // namespace pyclperf::bindings
