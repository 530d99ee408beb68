# Lets a directory compile targets that link smartarray, whose PUBLIC compile features include
# cuda_std_20. Installed next to smartarray-config.cmake, which uses it too.
#
# CMake reads what a compile feature means from the variables of the directory that holds the
# target being compiled, not from smartarray's directory. Two cases need help there:
#
# 1. CMake 3.22 to 3.25 know no C++20 flag for nvcc (3.26 added it). A CUDA target that requires
#    cuda_std_20 stops with 'The compiler feature "cuda_std_20" is not known to CUDA compiler
#    "NVIDIA"'. smartarray_enable_cuda20() teaches them the flag (-std=c++20, which 3.26 uses too).
#    On 3.26+ it sets nothing, so CMake emits its own flag once: never two -std flags.
# 2. Every CMake version: when CUDA is enabled in some directory of the build but not in this one
#    (a host-only project that add_subdirectory()s smartarray), a C++ target linking smartarray
#    stops with 'No known features for CUDA compiler ""'. smartarray_enable_cuda20() declares the
#    CUDA features there; such a target compiles no CUDA, so nothing else changes.
#
# It is a macro: it sets variables in the scope it is called from. It is a no-op where neither case
# applies, and safe to call several times.
include_guard(GLOBAL)

macro(smartarray_enable_cuda20)
  get_property(_smartarray_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  list(FIND _smartarray_languages CUDA _smartarray_index)
  if(NOT _smartarray_index EQUAL -1)
    if(CMAKE_CUDA_COMPILER_LOADED)  # CUDA is enabled in this directory: case 1
      if(CMAKE_VERSION VERSION_LESS 3.26 AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
        set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")  # nvcc has no -std=gnu++20
        list(FIND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20 _smartarray_index)
        if(_smartarray_index EQUAL -1)
          list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
          set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
        endif()
      endif()
    elseif(NOT CMAKE_CUDA_COMPILE_FEATURES)  # case 2
      set(CMAKE_CUDA_COMPILE_FEATURES cuda_std_03 cuda_std_11 cuda_std_14 cuda_std_17 cuda_std_20)
    endif()
  endif()
  unset(_smartarray_languages)
  unset(_smartarray_index)
endmacro()
