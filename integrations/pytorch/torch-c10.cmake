# Whether the PyTorch library raises PyTorch's own exception types (torch-raise-c10.cpp): where an
# installed torch is found at configure time (Python3_EXECUTABLE, else python3 on PATH, imports
# it) and a program built against its headers and libc10, with its _GLIBCXX_USE_CXX11_ABI, links.
# A refused allocation is then torch.OutOfMemoryError in Python; elsewhere torch-raise-std.cpp
# raises standard exceptions, which PyTorch turns into RuntimeError. Sets GCP_TORCH_C10 and, where
# it is ON, GCP_TORCH_INCLUDE, GCP_TORCH_C10_LIBRARY, GCP_TORCH_CXX11_ABI, GCP_TORCH_CXX_STANDARD.

option(GGML_CPOOL_TORCH_C10 "ggml-cuda-pool: raise PyTorch's own exception types where torch's headers are found" ON)
set(GCP_TORCH_C10 OFF)

function(gcp_find_torch_c10)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    set(python ${Python3_EXECUTABLE})
    if (NOT python)
        find_program(python python3 NO_CACHE)
    endif()
    if (NOT python)
        message(STATUS "PyTorch library: standard exceptions (no python3 to ask for torch)")
        return()
    endif()
    # where torch's C++ extensions find its headers and libraries (a distribution's torch may keep
    # them outside the package), its C++ ABI and version
    execute_process(COMMAND ${python} -c [[
import os, torch
d = os.path.dirname(torch.__file__)
paths = [os.path.join(d, "include")], [os.path.join(d, "lib")]
try:
    from torch.utils import cpp_extension
    paths = cpp_extension.include_paths(), cpp_extension.library_paths()
except Exception:
    pass
print(paths[0][0]); print(paths[1][0]); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)
]] OUTPUT_VARIABLE out ERROR_QUIET RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(REPLACE "\n" ";" out "${out}")
    list(LENGTH out lines)
    if (NOT rc EQUAL 0 OR lines LESS 4)
        message(STATUS "PyTorch library: standard exceptions (${python} cannot import torch)")
        return()
    endif()
    list(GET out 0 include)
    list(GET out 1 lib)
    list(GET out 2 abi)
    list(GET out 3 version)
    find_library(c10 c10 PATHS ${lib} NO_DEFAULT_PATH NO_CACHE)
    if (NOT EXISTS ${include}/c10/util/Exception.h OR NOT c10)
        message(STATUS "PyTorch library: standard exceptions (torch ${version}: no c10 headers in ${include} or "
                       "libc10 in ${lib})")
        return()
    endif()
    # the headers of torch >= 2.13 need C++20; a throw and a catch that link prove the ABI matches
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_INCLUDES ${include})
    set(CMAKE_REQUIRED_DEFINITIONS -D_GLIBCXX_USE_CXX11_ABI=${abi})
    set(CMAKE_REQUIRED_LIBRARIES ${c10})
    set(CMAKE_REQUIRED_LINK_OPTIONS -Wl,-rpath-link,${lib})
    set(CMAKE_REQUIRED_QUIET ON)
    foreach (std 17 20)
        set(CMAKE_CXX_STANDARD ${std})
        check_cxx_source_compiles([[
            #include <c10/util/Exception.h>
            int main() {
                try { C10_THROW_ERROR(OutOfMemoryError, "x"); } catch (const c10::Error & e) { return 0; }
                return 1;
            }]] GCP_TORCH_C10_LINKS_CXX${std})
        if (GCP_TORCH_C10_LINKS_CXX${std})
            message(STATUS "PyTorch library: torch ${version}'s exception types (${include}, C++${std}, ABI ${abi})")
            set(GCP_TORCH_C10 ON PARENT_SCOPE)
            set(GCP_TORCH_INCLUDE ${include} PARENT_SCOPE)
            set(GCP_TORCH_C10_LIBRARY ${c10} PARENT_SCOPE)
            set(GCP_TORCH_CXX11_ABI ${abi} PARENT_SCOPE)
            set(GCP_TORCH_CXX_STANDARD ${std} PARENT_SCOPE)
            return()
        endif()
    endforeach()
    message(STATUS "PyTorch library: standard exceptions (a program against torch ${version}'s c10 does not build)")
endfunction()

if (GGML_CPOOL_TORCH_C10)
    gcp_find_torch_c10()
endif()
