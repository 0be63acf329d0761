// NumPy arrays as raw host memory, shared by the registrations that take arrays.
//
// The device is handed bytes, so only dtypes whose bytes are plain numbers may cross: booleans,
// integers, floats, complex numbers, and structs (and fixed-size sub-arrays) of those. Object
// arrays hold PyObject pointers (copying them out hands host addresses to a kernel; copying
// into them plants pointers that crash the interpreter when NumPy follows them); strings,
// datetimes and raw void bytes are no numbers a kernel declares. Byte order: the device reads
// numbers in the host's order (every OpenCL device of a host shares its endianness in
// practice), so data in the other order is converted on the way, never passed as raw bytes.
#pragma once

#include <pybind11/numpy.h>

#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace pyclperf::bindings {

// What the device would make of a dtype's bytes.
struct DtypeCheck {
    std::string problem;  // empty: plain numbers
    bool native = true;   // every number in the host's byte order
};

namespace detail {

inline void inspect_into(const pybind11::dtype& dt, DtypeCheck& out) {
    const char kind = dt.kind();
    switch (kind) {
        case 'b': case 'i': case 'u': case 'f': case 'c':
            // NumPy spells the host's order '=' and single bytes '|'; '<' or '>' is the other.
            if (dt.byteorder() == '<' || dt.byteorder() == '>') out.native = false;
            return;
        case 'O': out.problem = "holds Python object pointers"; return;
        case 'U': out.problem = "holds unicode text"; return;
        case 'S': out.problem = "holds byte strings"; return;
        case 'M': case 'm': out.problem = "holds dates or time spans"; return;
        default: break;
    }
    if (kind != 'V') {
        out.problem = std::string("is of NumPy kind '") + kind + "'";
        return;
    }
    const pybind11::object sub = dt.attr("subdtype");
    if (!sub.is_none()) {  // a fixed-size sub-array field: its element type decides
        inspect_into(sub.cast<pybind11::tuple>()[0].cast<pybind11::dtype>(), out);
        return;
    }
    const pybind11::object fields = dt.attr("fields");
    if (fields.is_none()) {
        out.problem = "holds raw bytes (void) with no numeric fields (numpy.uint8 is bytes)";
        return;
    }
    for (const auto item : fields.cast<pybind11::dict>()) {
        inspect_into(item.second.cast<pybind11::tuple>()[0].cast<pybind11::dtype>(), out);
        if (!out.problem.empty()) return;
    }
}

}  // namespace detail

inline DtypeCheck inspect(const pybind11::dtype& dt) {
    DtypeCheck out;
    detail::inspect_into(dt, out);
    return out;
}

inline std::string dtype_text(const pybind11::dtype& dt) {
    return pybind11::str(dt).cast<std::string>();
}

// InvalidArgument ("... holds no plain numbers") unless `dt` is plain numbers.
inline DtypeCheck require_plain(const pybind11::dtype& dt, const std::string& what) {
    auto check = inspect(dt);
    if (!check.problem.empty())
        throw InvalidArgument(what + ": dtype " + dtype_text(dt) + " " + check.problem +
                              ", so it holds no plain numbers for a device; pass a numeric array "
                              "(e.g. numpy.float32)");
    return check;
}

// A C-contiguous array of plain numbers, as its raw bytes; InvalidArgument for anything else
// (no silent copies). The bytes go as they are: callers that care about byte order use
// outgoing()/incoming() instead.
inline pybind11::buffer_info contiguous(const pybind11::array& a, bool writable) {
    if (!(a.flags() & pybind11::array::c_style))
        throw InvalidArgument("array must be C-contiguous (use numpy.ascontiguousarray)");
    if (writable && !a.writeable()) throw InvalidArgument("destination array is read-only");
    require_plain(a.dtype(), "array");
    return a.request(writable);
}

// The array in the host's byte order, of the same dtype otherwise.
inline pybind11::array in_host_order(const pybind11::array& a) {
    const pybind11::object host_order = a.dtype().attr("newbyteorder")("=");
    return a.attr("astype")(host_order, pybind11::arg("order") = "C");
}

// Host data bound for the device: `a` itself, or a copy in the host's byte order where `a` is
// in the other one. The caller keeps the returned array alive while it uses its bytes.
inline pybind11::array outgoing(const pybind11::array& a) {
    contiguous(a, false);
    if (inspect(a.dtype()).native) return a;
    return in_host_order(a);
}

// Fills `dst` through `read(ptr, nbytes)`. An array in the other byte order is filled from a
// temporary in the host's order and assigned, so it holds the same numbers, not swapped bytes.
template <class Read>
void incoming(pybind11::array& dst, Read&& read) {
    auto info = contiguous(dst, true);
    const auto n = static_cast<std::size_t>(info.size * info.itemsize);
    if (inspect(dst.dtype()).native) {
        pybind11::gil_scoped_release nogil;
        read(info.ptr, n);
        return;
    }
    const pybind11::dtype host_order = dst.dtype().attr("newbyteorder")("=");
    pybind11::array tmp(host_order,
                        std::vector<pybind11::ssize_t>(dst.shape(), dst.shape() + dst.ndim()));
    void* ptr = tmp.mutable_data();
    {
        pybind11::gil_scoped_release nogil;
        read(ptr, n);
    }
    dst.attr("__setitem__")(pybind11::ellipsis(), tmp);
}

// A new float64 array holding ``values`` (timings in ns, as the timing loops return them).
inline pybind11::array_t<double> to_numpy(const std::vector<double>& values) {
    return pybind11::array_t<double>(static_cast<pybind11::ssize_t>(values.size()), values.data());
}

}  // namespace pyclperf::bindings
