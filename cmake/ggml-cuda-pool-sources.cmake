# The module's sources, by layer folder (ggml-cuda/README.md): one list for the project's own build
# and for the llama.cpp integration.
set(GCP_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
set(GCP_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/api/capi.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/api/capi-options.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/context.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/graph-pins.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/pool-factory.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/quarantine.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/context/stream-slots.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/trace/trace.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/pool.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/legacy.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/recovery.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/vmm.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pools/warm-record.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/driver.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/factory.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/fault.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/fault-spec.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/env.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/log.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/support/names.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/capi-testing.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim-mempool.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/testing/sim-vmm.cpp)
# the real device (CUDA, or HIP through vendors/hip.h)
set(GCP_DRIVER_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/drivers/cuda-vmm.cpp)
