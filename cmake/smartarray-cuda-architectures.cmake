# The default of CMAKE_CUDA_ARCHITECTURES, included before project(): enabling CUDA fixes the value,
# and CMake's own default (one old architecture) is not what a user of this library wants.
#
#   given                 CMAKE_CUDA_ARCHITECTURES (-D, cache, or the project that added smartarray)
#                         or the CUDAARCHS environment variable: used as is.
#   a GPU is present      its architecture(s), as reported by `nvidia-smi --query-gpu=compute_cap`,
#                         SASS only ("90-real"): what `native` gives on CMake 3.24+, but decided
#                         here the same way on 3.22/3.23 (no `native`) and printed as numbers.
#   otherwise             a fat binary: SASS for Volta (70), Turing (75), Ampere (80, 86), Ada (89),
#                         Hopper (90), Blackwell (100, 120), each where the nvcc in use still or
#                         already supports it, plus PTX for the newest so later GPUs can JIT it.
#                         CUDA 13.0: 75-real;80-real;86-real;89-real;90-real;100-real;120
#                         (13.0 dropped sm_50 to sm_72); 12.8/12.9: from 70-real, with 100 and
#                         120; 12.4 to 12.6: 70-real to 89-real;90.
#
# The choice is stored in the cache (CMAKE_CUDA_ARCHITECTURES) on the first configure, so that later
# configures neither probe again nor change it; -DCMAKE_CUDA_ARCHITECTURES=... overrides it.
# Sets SMARTARRAY_CUDA_ARCHITECTURES_WHY for the STATUS line that CMakeLists.txt prints.
include_guard(GLOBAL)

function(_smartarray_default_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES)
    if(DEFINED CACHE{SMARTARRAY_DEFAULT_CUDA_ARCHITECTURES}
       AND "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${SMARTARRAY_DEFAULT_CUDA_ARCHITECTURES}")
      set(why "${SMARTARRAY_DEFAULT_CUDA_ARCHITECTURES_WHY}, chosen at the first configure")
    else()
      set(why "given: -D, the cache, or the project that added smartarray")
    endif()
    set(SMARTARRAY_CUDA_ARCHITECTURES_WHY "${why}" PARENT_SCOPE)
    return()
  endif()
  if(NOT "$ENV{CUDAARCHS}" STREQUAL "")
    set(SMARTARRAY_CUDA_ARCHITECTURES_WHY "from the CUDAARCHS environment variable" PARENT_SCOPE)
    return()
  endif()

  # The nvcc that project() will pick, found the way CMake finds it: CMAKE_CUDA_COMPILER, then
  # CUDACXX, then PATH and $CUDA_PATH/bin. Without one, project() stops with CMake's own message.
  if(CMAKE_CUDA_COMPILER)
    get_filename_component(nvcc "${CMAKE_CUDA_COMPILER}" PROGRAM)
  elseif(NOT "$ENV{CUDACXX}" STREQUAL "")
    get_filename_component(nvcc "$ENV{CUDACXX}" PROGRAM)
  else()
    find_program(nvcc nvcc PATHS "$ENV{CUDA_PATH}/bin" NO_CACHE)
  endif()
  if(NOT nvcc OR NOT EXISTS "${nvcc}")
    set(SMARTARRAY_CUDA_ARCHITECTURES_WHY "no nvcc found before project(): CMake's default"
      PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND "${nvcc}" --list-gpu-code OUTPUT_VARIABLE codes RESULT_VARIABLE rc
    ERROR_QUIET TIMEOUT 60)
  string(REGEX MATCHALL "sm_[0-9]+" codes "${codes}")  # sm_90a, sm_100f: the plain ones only
  string(REPLACE "sm_" "" supported "${codes}")
  if(NOT rc EQUAL 0 OR NOT supported)
    set(SMARTARRAY_CUDA_ARCHITECTURES_WHY
      "`${nvcc} --list-gpu-code` failed: CMake's default" PARENT_SCOPE)
    return()
  endif()

  set(gpu_archs "")
  set(unsupported "")
  find_program(nvidia_smi nvidia-smi NO_CACHE)
  if(nvidia_smi)
    execute_process(COMMAND "${nvidia_smi}" --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 60)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
      foreach(cap IN LISTS caps)
        string(REPLACE "." "" arch "${cap}")
        if(arch IN_LIST supported)
          list(APPEND gpu_archs "${arch}-real")
        else()
          list(APPEND unsupported "sm_${arch}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES gpu_archs)
      list(REMOVE_DUPLICATES unsupported)
    endif()
  endif()

  if(gpu_archs AND NOT unsupported)
    set(archs "${gpu_archs}")
    set(why "the GPU present, from nvidia-smi")
  else()
    set(archs "")
    foreach(arch 70 75 80 86 89 90 100 120)
      if(arch IN_LIST supported)
        list(APPEND archs "${arch}-real")
        set(newest "${arch}")
      endif()
    endforeach()
    if(NOT archs)
      set(SMARTARRAY_CUDA_ARCHITECTURES_WHY "nvcc supports none of sm_70 to sm_120: CMake's default"
        PARENT_SCOPE)
      return()
    endif()
    list(TRANSFORM archs REPLACE "^${newest}-real$" "${newest}")  # SASS and PTX
    if(unsupported)
      list(JOIN unsupported ", " unsupported)
      message(WARNING "smartarray: this nvcc (${nvcc}) cannot build for the GPU present "
        "(${unsupported}); building the default fat binary instead, which will not run on it. "
        "Use a CUDA toolkit that supports it, or set CMAKE_CUDA_ARCHITECTURES.")
      set(why "GPU ${unsupported} not supported by this nvcc: fat binary")
    else()
      set(why "no GPU found (nvidia-smi): fat binary for sm_70 to sm_120 where this nvcc has them")
    endif()
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${archs}" CACHE STRING
    "CUDA architectures to build for (smartarray's default: ${why})")
  set(SMARTARRAY_DEFAULT_CUDA_ARCHITECTURES "${archs}" CACHE INTERNAL "")
  set(SMARTARRAY_DEFAULT_CUDA_ARCHITECTURES_WHY "${why}" CACHE INTERNAL "")
  set(SMARTARRAY_CUDA_ARCHITECTURES_WHY "${why}" PARENT_SCOPE)
endfunction()

_smartarray_default_cuda_architectures()
