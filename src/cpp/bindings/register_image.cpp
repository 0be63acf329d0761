#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "../error.hpp"
#include "../image.hpp"
#include "arrays.hpp"
#include "registers.hpp"

namespace py = pybind11;

namespace pyclperf::bindings {

namespace {

// (height, width) for one channel, (height, width, 4) for four: the NumPy shape of the texels.
std::vector<py::ssize_t> image_shape(const Image& img) {
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(img.height()),
                                   static_cast<py::ssize_t>(img.width())};
    if (img.channels() > 1) shape.push_back(img.channels());
    return shape;
}

std::string shape_text(const std::vector<py::ssize_t>& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
}

// A C-contiguous float32 (float16 for a half image) array of exactly the image's shape;
// InvalidArgument saying what is wrong.
py::buffer_info texels(const Image& img, const py::array& a, bool writable, const char* what) {
    const py::dtype want_dtype = img.half() ? py::dtype("float16") : py::dtype::of<float>();
    if (!a.dtype().is(want_dtype))
        throw InvalidArgument(std::string(what) + ": the image holds " +
                              (img.half() ? "float16" : "float32") + " texels, got dtype " +
                              py::str(a.dtype()).cast<std::string>());
    const auto want = image_shape(img);
    const std::vector<py::ssize_t> got(a.shape(), a.shape() + a.ndim());
    if (got != want)
        throw InvalidArgument(std::string(what) + ": array of shape " + shape_text(got) +
                              " does not match the image's " + shape_text(want) +
                              " (height, width" + (img.channels() > 1 ? ", channels)" : ")"));
    return contiguous(a, writable);
}

}  // namespace

void register_image(py::module_& m) {
    py::class_<Image, ImagePtr>(
        m, "Image",
        "A 2-D image of float32 texels with 1 (CL_R) or 4 (CL_RGBA) channels, read by kernels "
        "through a sampler.")
        .def(py::init([](ContextPtr ctx, std::size_t width, std::size_t height, int channels,
                         bool half) {
                 return std::make_shared<Image>(std::move(ctx), width, height, channels, half);
             }),
             py::arg("context"), py::arg("width"), py::arg("height"), py::arg("channels") = 1,
             py::arg("half") = false)
        .def_property_readonly("half", &Image::half,
                               "Whether the texels are CL_HALF_FLOAT (float16) rather than CL_FLOAT.")
        .def_property_readonly("width", &Image::width)
        .def_property_readonly("height", &Image::height)
        .def_property_readonly("channels", &Image::channels)
        .def_property_readonly("nbytes", &Image::nbytes)
        .def_property_readonly("released", &Image::released)
        .def_property_readonly("context", &Image::context)
        .def_property_readonly(
            "shape", [](const Image& self) { return py::tuple(py::cast(image_shape(self))); },
            "The NumPy shape of its texels: (height, width) or (height, width, 4).")
        .def("release", &Image::release, "Give the memory back now; later use raises.")
        .def(
            "write",
            [](Image& self, const py::array& src) {
                self.handle();  // a released image raises before the array is inspected
                auto info = texels(self, src, false, "image write");
                const auto n = static_cast<std::size_t>(info.size * info.itemsize);
                py::gil_scoped_release nogil;
                self.write(info.ptr, n);
            },
            py::arg("src"),
            "Copy a C-contiguous float32 (float16 for a half image) array of the image's shape into "
            "it (blocking).")
        .def(
            "read",
            [](const Image& self, py::array& dst) {
                self.handle();
                auto info = texels(self, dst, true, "image read");
                const auto n = static_cast<std::size_t>(info.size * info.itemsize);
                py::gil_scoped_release nogil;
                self.read(info.ptr, n);
            },
            py::arg("dst"),
            "Fill a C-contiguous writable float32 (float16 for a half image) array of the image's "
            "shape from it (blocking).")
        .def("__repr__", [](const Image& self) {
            return "<Image " + std::to_string(self.width()) + " x " +
                   std::to_string(self.height()) + (self.half() ? " half x" : " float x") +
                   std::to_string(self.channels()) +
                   (self.released() ? " released>" : ">");
        });
}

}  // namespace pyclperf::bindings
