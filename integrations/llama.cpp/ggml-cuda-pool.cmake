# Included by the patched ggml-cuda/CMakeLists.txt (option GGML_CUDA_POOL, GGML_CUDA_POOL_DIR):
# compiles the module and its adapter into ggml-cuda, with ggml's own flags and CUDA runtime, so
# the module and ggml share one runtime (one current device, one sticky error).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/ggml-cuda-pool-sources.cmake)

# the adapter: ggml's pool interface over the module (scripts/llama-check.sh compiles each of these
# and fails on an adapter source missing here)
set(GCP_ADAPTER_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-compute.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-module-pool.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-settings.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-stats.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-watched-pool.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/ggml-cuda-pool-adapter.cu)

function(ggml_cuda_pool_add_to target)
    # the core alone: no sim driver, no leak ledger, no calls of ggml-cuda-pool-testing.h
    target_sources(${target} PRIVATE ${GCP_CORE_SOURCES} ${GCP_DRIVER_SOURCES} ${GCP_CORE_SEAM} ${GCP_ADAPTER_SOURCES})
    # the public header, the adapter's headers, and ggml-cuda's own headers for the adapter
    target_include_directories(${target} PRIVATE ${GCP_SOURCE_DIR}/include ${GCP_SOURCE_DIR}/ggml-cuda/adapter
                               ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_definitions(${target} PRIVATE GGML_CUDA_POOL GGML_CPOOL_HAVE_CUDA)
endfunction()
