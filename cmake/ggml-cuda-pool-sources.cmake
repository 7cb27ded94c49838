# The module's sources, by layer folder (ggml-cuda/README.md), in two libraries: the core, what
# llama.cpp and the PyTorch library link, and the testing part (the sim driver, the calls of
# ggml-cuda-pool-testing.h, the leak ledger) that the tests, the tools and the installed library
# add over it. The two differ by one object, the seam of drivers/seam.h: GCP_CORE_SEAM alone, or
# testing/seam.cpp among GCP_TESTING_SOURCES.
set(GCP_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
set(GCP_CORE_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/api/capi.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/context.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/stream-slots.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/trace/trace.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/pool.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/legacy.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/recovery.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/vmm.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/warm-record.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/neighbours/neighbours.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/neighbours/os.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/factory.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/fault.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/fault-spec.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/env.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/log.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/names.cpp)
# the real device (CUDA, or HIP through vendors/hip.h), part of the core where it is built
set(GCP_DRIVER_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda-vmm.cpp)
# the seam of the core alone: no sim driver, no ledger
set(GCP_CORE_SEAM ${GCP_SOURCE_DIR}/ggml-cuda/drivers/seam-core.cpp)
set(GCP_TESTING_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/seam.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/capi-testing.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim-vmm.cpp)
