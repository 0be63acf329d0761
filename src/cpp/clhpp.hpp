// The one place that configures OpenCL-CLHPP, so every translation unit sees the same settings.
#pragma once

#define CL_HPP_ENABLE_EXCEPTIONS
// 110 keeps the run-time choice between clCreateCommandQueue (1.x platforms) and its 2.0 successor.
#define CL_HPP_MINIMUM_OPENCL_VERSION 110
#define CL_HPP_TARGET_OPENCL_VERSION 300
#include <CL/opencl.hpp>
