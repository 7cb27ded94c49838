#pragma once
// The GPU suites' check of a CUDA call: the test fails with the call and the error's name.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#define CHECK_CUDA(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(cudaGetLastError())
