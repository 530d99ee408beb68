# The distributed layer (include/smartarray/distributed/, src/distributed/): its own target,
# smartarray::distributed, over MPI, added to smartarray_installed_targets. Built when MPI is
# found, unless SMARTARRAY_WITH_MPI is off. Its nccl transport is built when NCCL is found, unless
# SMARTARRAY_WITH_NCCL is off: nccl.h and libnccl (a wheel such as nvidia-nccl-cu13 has only
# libnccl.so.2, hence that name too), in the folder NCCL_ROOT (a variable or the environment)
# names, which holds include/ and lib/, or in the system's.
find_package(MPI COMPONENTS CXX QUIET)
option(SMARTARRAY_WITH_MPI "Build the distributed layer (smartarray::distributed) over MPI"
  ${MPI_CXX_FOUND})
if(NOT SMARTARRAY_WITH_MPI)
  message(STATUS "smartarray: no distributed layer: MPI not found or SMARTARRAY_WITH_MPI off")
  return()
endif()
if(NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "SMARTARRAY_WITH_MPI is on but no MPI was found (install Open MPI or MPICH, "
    "e.g. libopenmpi-dev openmpi-bin)")
endif()

find_path(SMARTARRAY_NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ENV NCCL_ROOT
  PATH_SUFFIXES include)
find_library(SMARTARRAY_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${NCCL_ROOT} ENV NCCL_ROOT
  PATH_SUFFIXES lib lib64)
set(smartarray_nccl_found OFF)
if(SMARTARRAY_NCCL_INCLUDE_DIR AND SMARTARRAY_NCCL_LIBRARY)
  set(smartarray_nccl_found ON)
endif()
option(SMARTARRAY_WITH_NCCL "The distributed layer's nccl transport (needs NCCL)"
  ${smartarray_nccl_found})
if(SMARTARRAY_WITH_NCCL AND NOT smartarray_nccl_found)
  message(FATAL_ERROR "SMARTARRAY_WITH_NCCL is on but nccl.h and libnccl were not found (set "
    "NCCL_ROOT to the folder that holds include/nccl.h and lib/)")
endif()

file(GLOB_RECURSE SMARTARRAY_DISTRIBUTED_SOURCES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/src/distributed/*.cpp)
if(NOT SMARTARRAY_WITH_NCCL)
  list(FILTER SMARTARRAY_DISTRIBUTED_SOURCES EXCLUDE REGEX "/src/distributed/nccl[.]cpp$")
endif()
add_library(smartarray_distributed STATIC ${SMARTARRAY_DISTRIBUTED_SOURCES})
add_library(smartarray::distributed ALIAS smartarray_distributed)
set_target_properties(smartarray_distributed PROPERTIES EXPORT_NAME distributed
  POSITION_INDEPENDENT_CODE ON)
target_link_libraries(smartarray_distributed PUBLIC smartarray MPI::MPI_CXX
  PRIVATE $<BUILD_INTERFACE:smartarray_warnings>)
target_include_directories(smartarray_distributed PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(smartarray_distributed PRIVATE
  SMARTARRAY_DIST_NCCL=$<BOOL:${SMARTARRAY_WITH_NCCL}>)
list(APPEND smartarray_installed_targets smartarray_distributed)
if(SMARTARRAY_WITH_NCCL)
  target_include_directories(smartarray_distributed PRIVATE ${SMARTARRAY_NCCL_INCLUDE_DIR})
  target_link_libraries(smartarray_distributed PRIVATE ${SMARTARRAY_NCCL_LIBRARY})
  message(STATUS "smartarray: the distributed layer over MPI ${MPI_CXX_VERSION} and NCCL "
    "(${SMARTARRAY_NCCL_LIBRARY})")
else()
  message(STATUS "smartarray: the distributed layer over MPI ${MPI_CXX_VERSION}, without NCCL")
endif()
