#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "../error.hpp"
#include "../image.hpp"
#include "arrays.hpp"
#include "integers.hpp"
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

// InvalidArgument saying what is wrong unless `a` is a float32 (float16 for a half image) array
// of exactly the image's shape. Either byte order passes: write() and read() convert.
void check_texels(const Image& img, const py::array& a, const char* what) {
    const py::dtype want_dtype = img.half() ? py::dtype("float16") : py::dtype::of<float>();
    py::dtype got_dtype = a.dtype();
    if (!inspect(got_dtype).native) got_dtype = got_dtype.attr("newbyteorder")("=");
    if (!got_dtype.equal(want_dtype))
        throw InvalidArgument(std::string(what) + ": the image holds " +
                              (img.half() ? "float16" : "float32") + " texels, got dtype " +
                              dtype_text(a.dtype()));
    const auto want = image_shape(img);
    const std::vector<py::ssize_t> got(a.shape(), a.shape() + a.ndim());
    if (got != want)
        throw InvalidArgument(std::string(what) + ": array of shape " + shape_text(got) +
                              " does not match the image's " + shape_text(want) +
                              " (height, width" + (img.channels() > 1 ? ", channels)" : ")"));
}

}  // namespace

void register_image(py::module_& m) {
    py::class_<Image, ImagePtr>(
        m, "Image",
        "A 2-D image of float32 texels with 1 (CL_R) or 4 (CL_RGBA) channels, read by kernels "
        "through a sampler.")
        .def(py::init([](ContextPtr ctx, const py::object& width, const py::object& height,
                         const py::object& channels, bool half) {
                 return std::make_shared<Image>(
                     std::move(ctx), to_size(width, "image width"),
                     to_size(height, "image height"), to_int(channels, "image channels", 0),
                     half);
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
                check_texels(self, src, "image write");
                const py::array data = outgoing(src);  // the host's byte order
                auto info = data.request();
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
                check_texels(self, dst, "image read");
                incoming(dst, [&](void* ptr, std::size_t n) { self.read(ptr, n); });
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
