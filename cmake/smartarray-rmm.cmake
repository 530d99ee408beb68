# RMM for the interop tests and benchmarks (SMARTARRAY_WITH_RMM; preset rmm). RMM comes from PyPI's
# librmm-cu13 and rapids-logger wheels, as `pip install --target` lays them out
# (scripts/install_deps.sh --rmm puts them in build-deps/rmm): the target smartarray_rmm.
#
# RMM 26 needs CCCL 3.3 or later, and one binary must not mix two CCCL versions, so RMM's vendored
# CCCL comes before the toolkit's for every target of the build (the library's too).
set(SMARTARRAY_RMM_ROOT "${PROJECT_SOURCE_DIR}/build-deps/rmm" CACHE PATH
  "The folder holding librmm/ and rapids_logger/ (pip install --target of their wheels)")
set(smartarray_rmm "${SMARTARRAY_RMM_ROOT}/librmm")
set(smartarray_rapids_logger "${SMARTARRAY_RMM_ROOT}/rapids_logger")
if(NOT EXISTS "${smartarray_rmm}/include/rmm/device_uvector.hpp"
   OR NOT EXISTS "${smartarray_rapids_logger}/lib64/librapids_logger.so")
  message(FATAL_ERROR "SMARTARRAY_WITH_RMM: no librmm and rapids_logger under "
    "SMARTARRAY_RMM_ROOT=${SMARTARRAY_RMM_ROOT} (bash scripts/install_deps.sh --rmm)")
endif()
include_directories(BEFORE SYSTEM "${smartarray_rmm}/include/rapids")

add_library(smartarray_rmm INTERFACE)
target_include_directories(smartarray_rmm SYSTEM INTERFACE
  "${smartarray_rmm}/include" "${smartarray_rapids_logger}/include")
target_link_libraries(smartarray_rmm INTERFACE
  "${smartarray_rmm}/lib64/librmm.so" "${smartarray_rapids_logger}/lib64/librapids_logger.so")
# librmm finds librapids_logger through the executable's run path.
set_target_properties(smartarray_rmm PROPERTIES INTERFACE_LINK_OPTIONS
  "LINKER:-rpath,${smartarray_rmm}/lib64:${smartarray_rapids_logger}/lib64")
message(STATUS "smartarray: RMM from ${smartarray_rmm}")
