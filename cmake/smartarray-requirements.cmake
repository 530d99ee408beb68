# The floors, checked at configure time by smartarray's own build (CMakeLists.txt) and by
# find_package(smartarray) in a consumer (smartarray-config.cmake), so that an unsupported tool
# stops with a message naming what was found and what is needed, never with an error deep in a
# header. Installed next to smartarray-config.cmake.
#
#   CMake 3.22        cmake_minimum_required; nothing newer is needed (see CMakeLists.txt).
#   CUDA  12.4        nvcc and the toolkit: the oldest supported.
#   GCC   11          C++20 as the headers use it; GCC 10 has no <source_location>.
#   Clang 14          the same (with libstdc++ 12 it lacks the builtin of <source_location>:
#                     include/smartarray/config.hpp has a fallback; the fuzz build uses clang 14).
# Checked: the C++ compiler, and nvcc with its host compiler, in the directory this runs in. No
# include_guard: the floors are variables of the including scope (find_package may run in several).

set(SMARTARRAY_MIN_CUDA 12.4)
set(SMARTARRAY_MIN_GNU 11)
set(SMARTARRAY_MIN_Clang 14)

# _smartarray_check_host_compiler(<var> <id> <version> <role> <hint>): appends a line to <var>
# when compiler <id> at <version> is below its floor (ids without a floor pass).
function(_smartarray_check_host_compiler _sa_out _sa_id _sa_version _sa_role _sa_hint)
  if(DEFINED SMARTARRAY_MIN_${_sa_id} AND _sa_version VERSION_LESS SMARTARRAY_MIN_${_sa_id})
    set(_sa_text "${${_sa_out}}")
    string(APPEND _sa_text "smartarray needs ${_sa_id} ${SMARTARRAY_MIN_${_sa_id}} or newer as "
      "${_sa_role} (C++20); found ${_sa_id} ${_sa_version}. ${_sa_hint}\n")
    set(${_sa_out} "${_sa_text}" PARENT_SCOPE)
  endif()
endfunction()

# smartarray_check_requirements(<out>): sets <out> to one line per unmet requirement, or "".
function(smartarray_check_requirements out)
  set(problems "")
  if(CMAKE_CXX_COMPILER_LOADED)
    _smartarray_check_host_compiler(problems "${CMAKE_CXX_COMPILER_ID}"
      "${CMAKE_CXX_COMPILER_VERSION}" "the C++ compiler"
      "Set CMAKE_CXX_COMPILER (or CXX) to a newer one than ${CMAKE_CXX_COMPILER}.")
  endif()
  if(CMAKE_CUDA_COMPILER_LOADED)
    if(NOT CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
      string(APPEND problems "smartarray needs nvcc as the CUDA compiler; found "
        "${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}).\n")
    elseif(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS SMARTARRAY_MIN_CUDA)
      string(APPEND problems "smartarray needs CUDA ${SMARTARRAY_MIN_CUDA} or newer; found nvcc "
        "${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}). Set CMAKE_CUDA_COMPILER (or "
        "CUDACXX) to the nvcc of a newer toolkit.\n")
    endif()
    _smartarray_check_host_compiler(problems "${CMAKE_CUDA_SIMULATE_ID}"
      "${CMAKE_CUDA_SIMULATE_VERSION}" "nvcc's host compiler"
      "Set CMAKE_CUDA_HOST_COMPILER (or CUDAHOSTCXX) to a newer one.")
  endif()
  string(STRIP "${problems}" problems)
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()
