#pragma once
// CUDA -> HIP names for the runtime and driver API calls the module makes, as ggml's vendors header does:
// the cuda driver compiles for AMD GPUs unchanged. The stream-ordered pool is not mapped (the async kind is
// compiled out on HIP); the VMM calls only when GGML_HIP_VMM asks for them (ROCm 5.3 and later declare them).

#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>

// runtime
#define cudaDeviceCanAccessPeer     hipDeviceCanAccessPeer
#define cudaDeviceSynchronize       hipDeviceSynchronize
#define cudaError_t                 hipError_t
#define cudaErrorMemoryAllocation   hipErrorOutOfMemory
#define cudaFree                    hipFree
#define cudaGetDevice               hipGetDevice
#define cudaGetDeviceCount          hipGetDeviceCount
#define cudaGetErrorString          hipGetErrorString
#define cudaGetLastError            hipGetLastError
#define cudaMalloc                  hipMalloc
#define cudaMemGetInfo              hipMemGetInfo
#define cudaPeekAtLastError         hipPeekAtLastError
#define cudaSetDevice               hipSetDevice
#define cudaStreamCaptureStatus     hipStreamCaptureStatus
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaStreamCreateWithFlags   hipStreamCreateWithFlags
#define cudaStreamDestroy           hipStreamDestroy
#define cudaStreamIsCapturing       hipStreamIsCapturing
#define cudaStreamNonBlocking       hipStreamNonBlocking
#define cudaStreamSynchronize       hipStreamSynchronize
#define cudaStream_t                hipStream_t
#define cudaSuccess                 hipSuccess

#ifdef GGML_HIP_VMM
// driver API: virtual memory management
#    define CUdevice                                                hipDevice_t
#    define CUdeviceptr                                             hipDeviceptr_t
#    define CUmemAccessDesc                                         hipMemAccessDesc
#    define CUmemAllocationProp                                     hipMemAllocationProp
#    define CUmemGenericAllocationHandle                            hipMemGenericAllocationHandle_t
#    define CUresult                                                hipError_t
#    define CUDA_SUCCESS                                            hipSuccess
#    define CUDA_ERROR_OUT_OF_MEMORY                                hipErrorOutOfMemory
#    define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED hipDeviceAttributeVirtualMemoryManagementSupported
#    define CU_MEM_ACCESS_FLAGS_PROT_READWRITE                      hipMemAccessFlagsProtReadWrite
#    define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED                    hipMemAllocationGranularityRecommended
#    define CU_MEM_ALLOCATION_TYPE_PINNED                           hipMemAllocationTypePinned
#    define CU_MEM_LOCATION_TYPE_DEVICE                             hipMemLocationTypeDevice
#    define cuDeviceGet                                             hipDeviceGet
#    define cuDeviceGetAttribute                                    hipDeviceGetAttribute
#    define cuMemAddressFree                                        hipMemAddressFree
#    define cuMemAddressReserve                                     hipMemAddressReserve
#    define cuMemCreate                                             hipMemCreate
#    define cuMemGetAllocationGranularity                           hipMemGetAllocationGranularity
#    define cuMemMap                                                hipMemMap
#    define cuMemRelease                                            hipMemRelease
#    define cuMemSetAccess                                          hipMemSetAccess
#    define cuMemUnmap                                              hipMemUnmap
#endif
