"""The device layer: contexts, programs, kernels, buffers, the devices and their clocks."""
