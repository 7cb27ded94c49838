# The module's sources: one list for the project's own build and for the llama.cpp integration.
set(GCP_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
set(GCP_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/backend.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/capi.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/capi-options.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/capi-testing.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-factory.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-fault.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-sim.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-sim-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-sim-vmm.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/env.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/fault-spec.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/graph-pins.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/log.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/names.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pool.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pool-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pool-factory.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pool-legacy.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/pool-vmm.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/quarantine.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/sim-mempool.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/stream-slots.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/trace.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/warm-record.cpp)
# the real device (CUDA, or HIP through vendors/hip.h)
set(GCP_DRIVER_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-cuda.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-cuda-async.cpp
    ${GCP_SOURCE_DIR}/ggml-cuda/driver-cuda-vmm.cpp)
