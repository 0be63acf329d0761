// Integer arguments from Python (sizes, offsets, counts, indices, launch ranges), converted once
// at the binding boundary. pybind11's own casters answer a float, a negative number or one past
// 64 bits with "incompatible function arguments ... Invoked with", naming neither the argument
// nor the problem, and Python's int() would quietly make 4 bytes of 4.7; these say which
// argument and what is wrong. A size is a Python int or a NumPy integer: a float (even 4.0) and
// a bool are refused, since either is far more likely a mistake than a byte count.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../error.hpp"

namespace pyclperf::bindings {

inline std::string repr_of(pybind11::handle v) { return pybind11::repr(v).cast<std::string>(); }

inline std::string type_name_of(pybind11::handle v) {
    return pybind11::type::handle_of(v).attr("__name__").cast<std::string>();
}

// numpy.<name>, looked up once per call site and kept for the life of the process: a type must
// outlive the interpreter's teardown, when a static destructor could run without the GIL.
inline PyObject* numpy_type(const char* name) {
    return pybind11::object(pybind11::module_::import("numpy").attr(name)).release().ptr();
}

inline bool is_instance(pybind11::handle v, PyObject* type) {
    const int is = PyObject_IsInstance(v.ptr(), type);
    if (is < 0) throw pybind11::error_already_set();
    return is == 1;
}

// A Python int (not a bool) or a NumPy integer (numpy.bool_ is none).
inline bool is_integer(pybind11::handle v) {
    PyObject* p = v.ptr();
    if (PyLong_CheckExact(p)) return true;
    if (PyBool_Check(p)) return false;
    if (PyLong_Check(p)) return true;  // int subclasses such as IntEnum members
    static PyObject* const numpy_integer = numpy_type("integer");
    return is_instance(v, numpy_integer);
}

// An integer's value where it fits 64 unsigned bits; otherwise which side it falls off.
struct IntegerValue {
    std::uint64_t value = 0;
    bool negative = false;
    bool too_large = false;
};

inline IntegerValue integer_value(pybind11::handle v) {
    const auto index = pybind11::reinterpret_steal<pybind11::object>(PyNumber_Index(v.ptr()));
    if (!index) throw pybind11::error_already_set();
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (s == -1 && PyErr_Occurred()) throw pybind11::error_already_set();
    IntegerValue out;
    if (overflow < 0 || (overflow == 0 && s < 0)) {
        out.negative = true;
    } else if (overflow == 0) {
        out.value = static_cast<std::uint64_t>(s);
    } else {
        const unsigned long long u = PyLong_AsUnsignedLongLong(index.ptr());
        if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
            PyErr_Clear();
            out.too_large = true;
        } else {
            out.value = u;
        }
    }
    return out;
}

[[noreturn]] inline void not_an_integer(pybind11::handle v, const std::string& what) {
    throw pybind11::type_error(what + " must be an integer (a Python int or a NumPy integer), " +
                               "got " + repr_of(v) + " (" + type_name_of(v) + ")");
}

// `v` as an integer in [lo, hi]: TypeError naming `what` for anything but an integer,
// InvalidArgument (a ValueError) naming it and the bound for one outside them. `noun` says what
// the number counts ("must be a positive number of bytes").
inline std::uint64_t to_integer(pybind11::handle v, const std::string& what, std::uint64_t lo = 0,
                                std::uint64_t hi = std::numeric_limits<std::uint64_t>::max(),
                                const std::string& noun = "integer") {
    if (!is_integer(v)) not_an_integer(v, what);
    const auto got = integer_value(v);
    if (got.negative || (!got.too_large && got.value < lo))
        throw InvalidArgument(what + " must be " +
                              (lo == 0   ? "a non-negative " + noun
                               : lo == 1 ? "a positive " + noun
                                         : "at least " + std::to_string(lo)) +
                              ", got " + repr_of(v));
    if (got.too_large || got.value > hi)
        throw InvalidArgument(what + " " + repr_of(v) + " is too large: at most " +
                              std::to_string(hi) +
                              (hi == std::numeric_limits<std::uint64_t>::max()
                                   ? " (2**64 - 1, the largest size OpenCL can express)"
                                   : ""));
    return got.value;
}

inline std::size_t to_size(pybind11::handle v, const std::string& what, std::uint64_t lo = 0,
                           const std::string& noun = "integer") {
    static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "sizes are 64-bit here");
    return static_cast<std::size_t>(
        to_integer(v, what, lo, std::numeric_limits<std::uint64_t>::max(), noun));
}

inline int to_int(pybind11::handle v, const std::string& what, int lo) {
    constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
    return static_cast<int>(to_integer(v, what, static_cast<std::uint64_t>(lo), most));
}

// The common case without building a message: a plain non-negative int that fits.
inline bool plain_size(PyObject* p, std::size_t& out) {
    if (!PyLong_CheckExact(p)) return false;
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0 || s < 0) return false;  // the full path says what is wrong
    out = static_cast<std::size_t>(s);
    return true;
}

// One integer, or an iterable of them (a list, a tuple, a NumPy array), as sizes: a launch
// range or an array shape. Entries are named "what[i]".
inline std::vector<std::size_t> to_sizes(pybind11::handle v, const std::string& what) {
    std::size_t n = 0;
    if (plain_size(v.ptr(), n)) return {n};
    if (is_integer(v)) return {to_size(v, what)};
    const bool text = PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr());
    PyObject* it = text ? nullptr : PyObject_GetIter(v.ptr());
    if (it == nullptr) {
        PyErr_Clear();
        throw pybind11::type_error(what + " must be an integer or a sequence of integers, got " +
                                   repr_of(v) + " (" + type_name_of(v) + ")");
    }
    const auto iter = pybind11::reinterpret_steal<pybind11::object>(it);
    std::vector<std::size_t> out;
    while (true) {
        const auto item = pybind11::reinterpret_steal<pybind11::object>(PyIter_Next(it));
        if (!item) break;
        if (plain_size(item.ptr(), n))
            out.push_back(n);
        else
            out.push_back(to_size(item, what + "[" + std::to_string(out.size()) + "]"));
    }
    if (PyErr_Occurred()) throw pybind11::error_already_set();
    return out;
}

}  // namespace pyclperf::bindings
