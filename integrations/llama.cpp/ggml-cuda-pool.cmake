# Included by the patched ggml-cuda/CMakeLists.txt (option GGML_CUDA_POOL, GGML_CUDA_POOL_DIR):
# compiles the module and its adapter into ggml-cuda, with ggml's own flags and CUDA runtime, so
# the module and ggml share one runtime (one current device, one sticky error).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/ggml-cuda-pool-sources.cmake)

# the adapter: ggml's pool interface over the module (scripts/llama-check.sh compiles each of these
# and fails on an adapter source missing here)
set(GCP_ADAPTER_SOURCES
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-compute.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-pools.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-settings.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/adapter-stats.cu
    ${GCP_SOURCE_DIR}/ggml-cuda/adapter/ggml-cuda-pool-adapter.cu)

# The core alone (no sim driver, no leak ledger, no calls of ggml-cuda-pool-testing.h), and the
# sources named after the target, in a library of ggml's, which keeps default visibility. The
# module's own sources are compiled hidden, as in the module's own libraries: a pool's calls to its
# own functions then bind inside the library, direct and open to inlining, not each through the
# PLT and a line of the GOT (a cold alloc + free pair of the VMM pool read 10 lines that way and 5
# hidden, docs/benchmarking.md). ggml-cuda reaches the module only through the adapter, in the same
# library, so nothing outside it needs the module's symbols.
function(ggml_cuda_pool_add_core target)
    set(sources ${GCP_CORE_SOURCES} ${GCP_CORE_SEAM} ${ARGN})
    target_sources(${target} PRIVATE ${sources})
    if (NOT MSVC) # a DLL exports only what is marked for export
        set_source_files_properties(${sources} PROPERTIES COMPILE_OPTIONS
                                    "-fvisibility=hidden;-fvisibility-inlines-hidden")
    endif()
endfunction()

function(ggml_cuda_pool_add_to target)
    ggml_cuda_pool_add_core(${target} ${GCP_DRIVER_SOURCES})
    target_sources(${target} PRIVATE ${GCP_ADAPTER_SOURCES})
    # the public header, the adapter's headers, and ggml-cuda's own headers for the adapter
    target_include_directories(${target} PRIVATE ${GCP_SOURCE_DIR}/include ${GCP_SOURCE_DIR}/ggml-cuda/adapter
                               ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_definitions(${target} PRIVATE GGML_CUDA_POOL GGML_CPOOL_HAVE_CUDA)
endfunction()
