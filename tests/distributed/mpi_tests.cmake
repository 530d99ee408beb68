# smartarray_add_mpi_test(<test> RANKS <n> BACKEND <host|cuda> COMMAND <target> [<arg>...]
#                         [ENVIRONMENT <var=value>...] [PROPERTIES <property> <value>...])
# A test that runs <target> under mpirun with <n> ranks on one backend, labelled "distributed",
# with a 300 s timeout so that a rank waiting forever fails it instead of hanging CI.
# Open MPI's settings travel as OMPI_* variables, which other MPIs ignore: running as root needs
# OMPI_ALLOW_RUN_AS_ROOT and its confirmation; a container may forbid the cross-memory attach that
# shared memory uses by default (btl_vader_single_copy_mechanism=none); oversubscription lets 4
# ranks run on 2 cores. Under AddressSanitizer, LeakSanitizer skips what Open MPI keeps until exit
# (lsan_suppressions.txt); other builds ignore LSAN_OPTIONS. A cuda test keeps NCCL off NVLink
# SHARP (NCCL_NVLS_ENABLE=0) and reads the markers of a machine without a device as "skipped".

# The cuda backend's runs are registered where configure finds a GPU (nvidia-smi lists one): on a
# machine without one they could only skip, and each mpirun costs its start-up. Asked once per
# configure (a global property), read by every directory that includes this file.
get_property(smartarray_gpu_probed GLOBAL PROPERTY SMARTARRAY_MPI_CUDA_TESTS SET)
if(NOT smartarray_gpu_probed)
  set(smartarray_gpu_found OFF)
  find_program(SMARTARRAY_NVIDIA_SMI nvidia-smi)
  if(SMARTARRAY_NVIDIA_SMI)
    execute_process(COMMAND ${SMARTARRAY_NVIDIA_SMI} -L OUTPUT_VARIABLE smartarray_gpus
      ERROR_QUIET RESULT_VARIABLE smartarray_smi_status)
    if(smartarray_smi_status EQUAL 0 AND smartarray_gpus MATCHES "GPU [0-9]+:")
      set(smartarray_gpu_found ON)
    endif()
  endif()
  set_property(GLOBAL PROPERTY SMARTARRAY_MPI_CUDA_TESTS ${smartarray_gpu_found})
endif()
get_property(SMARTARRAY_MPI_CUDA_TESTS GLOBAL PROPERTY SMARTARRAY_MPI_CUDA_TESTS)

include_guard(GLOBAL)
set(SMARTARRAY_MPIEXEC_FLAGS --oversubscribe CACHE STRING
  "mpirun flags of the distributed tests, before the binary (Open MPI: --oversubscribe)")
function(smartarray_add_mpi_test test)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "RANKS;BACKEND" "COMMAND;ENVIRONMENT;PROPERTIES")
  list(POP_FRONT arg_COMMAND target)
  add_test(NAME ${test} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${arg_RANKS}
    ${SMARTARRAY_MPIEXEC_FLAGS} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${arg_COMMAND}
    ${MPIEXEC_POSTFLAGS})
  set(environment SMARTARRAY_BACKEND=${arg_BACKEND} OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
    OMPI_MCA_rmaps_base_oversubscribe=1
    "LSAN_OPTIONS=fast_unwind_on_malloc=0:suppressions=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/lsan_suppressions.txt"
    ${arg_ENVIRONMENT})
  if(arg_BACKEND STREQUAL "cuda")
    list(APPEND environment NCCL_NVLS_ENABLE=0)
    set_tests_properties(${test} PROPERTIES SKIP_REGULAR_EXPRESSION
      "SMARTARRAY_NO_CUDA_DEVICE;no CUDA device: skipped")
  endif()
  set_tests_properties(${test} PROPERTIES ENVIRONMENT "${environment}" TIMEOUT 300
    PROCESSORS ${arg_RANKS} LABELS distributed ${arg_PROPERTIES})
endfunction()
