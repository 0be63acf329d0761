// pyclperf._core: wires the per-area registrations together and does nothing else.
#include "registers.hpp"

PYBIND11_MODULE(_core, m) {
    using namespace pyclperf::bindings;
    m.doc() = "pyclperf's C++ core over OpenCL (private: use the pyclperf package)";
    register_errors(m);
    register_device(m);
    register_context(m);
    register_buffer(m);
    register_image(m);
    register_sampler(m);
    register_program(m);
    register_kernel(m);
    register_launch(m);
    register_transfer(m);
    register_peer(m);
}
