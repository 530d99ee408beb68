# One consumer test (tests/consumers/CMakeLists.txt), run by the CMake under test in script mode,
# so that it too must work on CMake 3.22. Every step starts from an empty folder under WORK and
# logs its commands and their output to WORK/<step>.log; a failure prints the log's last lines.
#   cmake -DSTEP=library -DSOURCE_DIR=<repository> -DWORK=<folder> -DCUDA_BIN=<nvcc's folder>
#         -P consumer.cmake
#     The library alone (tests, examples and benchmarks off), for CUDA architectures
#     $LIBRARY_CUDA_ARCHITECTURES (default 75-virtual, one, for speed), configured, built and
#     installed with `cmake --install` into WORK/prefix.
#   cmake -DSTEP=consumer -DNAME=<consumer> -DHOST_ONLY=ON|OFF ... -P consumer.cmake
#     tests/consumers/<consumer> configured with plain `cmake` and no flags of its own (a
#     find_package consumer gets only CMAKE_PREFIX_PATH=WORK/prefix; an add_subdirectory one the
#     library's build type, RelWithDebInfo, and CUDA architectures, so that it compiles the library
#     as the library step did), built, and its app run on the
#     host backend: it computes on random data, checks its result and exits non-zero on a
#     mismatch. Also checked: the app's compile line has exactly one -std= flag, its link line
#     one CUDA runtime, and the build never looked for GoogleTest or Google Benchmark. HOST_ONLY: PATH without nvcc and no CUDACXX,
#     as a C++-only consumer must not need the CUDA compiler.
#   cmake -DSTEP=project ... -P consumer.cmake
#     The whole project configured with default options (tests, examples and benchmarks on, so
#     GoogleTest and Google Benchmark must be installed; configure only).
cmake_minimum_required(VERSION 3.22)
cmake_host_system_information(RESULT jobs QUERY NUMBER_OF_LOGICAL_CORES)
if(DEFINED ENV{CMAKE_BUILD_PARALLEL_LEVEL})
  set(jobs $ENV{CMAKE_BUILD_PARALLEL_LEVEL})
endif()
set(log ${WORK}/${STEP}.log)
if(STEP STREQUAL "consumer")
  set(log ${WORK}/${NAME}.log)
endif()
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${log} "")

# run(<what> <command>...): runs the command, appends it and its output to the log, and stops with
# the log's last 40 lines when it fails.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REPLACE ";" " " command "${ARGN}")
  file(APPEND ${log} "$ ${command}\n${out}")
  if(NOT rc EQUAL 0)
    file(STRINGS ${log} lines)
    list(LENGTH lines count)
    if(count GREATER 40)
      math(EXPR first "${count} - 40")
      list(SUBLIST lines ${first} 40 lines)
    endif()
    list(JOIN lines "\n" tail)
    message(FATAL_ERROR "${what} failed (${rc}; log ${log}); its last lines:\n${tail}")
  endif()
endfunction()

set(ENV{PATH} "${CUDA_BIN}:$ENV{PATH}")
set(archs 75-virtual)
if(DEFINED ENV{LIBRARY_CUDA_ARCHITECTURES})
  set(archs $ENV{LIBRARY_CUDA_ARCHITECTURES})
endif()
if(STEP STREQUAL "library")
  file(REMOVE_RECURSE ${WORK}/library ${WORK}/prefix)
  run("configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/library
    -DSMARTARRAY_BUILD_TESTS=OFF -DSMARTARRAY_BUILD_EXAMPLES=OFF -DSMARTARRAY_BUILD_BENCHMARKS=OFF
    -DCMAKE_CUDA_ARCHITECTURES=${archs})
  run("build" ${CMAKE_COMMAND} --build ${WORK}/library -j ${jobs})
  run("install" ${CMAKE_COMMAND} --install ${WORK}/library --prefix ${WORK}/prefix)
  message("library (CMake ${CMAKE_VERSION}, CUDA architectures ${archs}): installed into ${WORK}/prefix")

elseif(STEP STREQUAL "consumer")
  if(HOST_ONLY)
    string(REPLACE ":" ";" dirs "$ENV{PATH}")
    set(path "")
    foreach(dir ${dirs})
      if(dir AND NOT EXISTS "${dir}/nvcc")
        list(APPEND path "${dir}")
      endif()
    endforeach()
    string(REPLACE ";" ":" path "${path}")
    set(ENV{PATH} "${path}")
    unset(ENV{CUDACXX})
  endif()
  set(dir ${WORK}/${NAME})
  set(args "")
  if(NAME MATCHES "^find_package")
    set(args -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  else()
    set(args -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=${archs})
  endif()
  file(REMOVE_RECURSE ${dir})
  run("configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumers/${NAME} -B ${dir} ${args})
  run("build" ${CMAKE_COMMAND} --build ${dir} -j ${jobs} --verbose)
  # The app's compile line: exactly one language-standard flag (its C++20 is checked by a
  # static_assert in the app itself).
  file(STRINGS ${log} lines REGEX " -c [^ ]*tests/consumers/app\\.(cpp|cu)( |$)")
  list(POP_BACK lines line)
  string(REGEX MATCHALL " -std=[^ ]*" stds "${line}")
  string(REPLACE " " "" stds "${stds}")
  list(LENGTH stds count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${NAME}: expected one -std flag on the app's compile line, got "
      "'${stds}' in: ${line}")
  endif()
  # The app's link line: one CUDA runtime, the library's, never also CMake's default.
  file(STRINGS ${log} links REGEX " -o app( |$)")
  list(POP_BACK links link)
  set(runtimes "")
  if(link MATCHES "cudart_static")
    list(APPEND runtimes static)
  endif()
  if(link MATCHES "libcudart\\.so|-lcudart( |$)")
    list(APPEND runtimes shared)
  endif()
  list(LENGTH runtimes count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${NAME}: expected one CUDA runtime on the app's link line, got "
      "'${runtimes}' in: ${link}")
  endif()
  file(STRINGS ${dir}/CMakeCache.txt looked_for REGEX "^(GTest_DIR|benchmark_DIR):")
  if(looked_for)
    message(FATAL_ERROR "${NAME}: GoogleTest or Google Benchmark was looked for: ${looked_for}")
  endif()
  set(ENV{SMARTARRAY_BACKEND} host)
  execute_process(COMMAND ${dir}/app RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(APPEND ${log} "$ ${dir}/app\n${out}\n")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: the app failed (${rc}): ${out}")
  endif()
  message("${NAME} (CMake ${CMAKE_VERSION}, ${stds}, ${runtimes} CUDA runtime): ${out}")

elseif(STEP STREQUAL "project")
  file(REMOVE_RECURSE ${WORK}/project)
  run("configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/project)
  file(STRINGS ${log} archs REGEX "smartarray: CUDA architectures ")
  string(REGEX REPLACE "^-- smartarray: " "" archs "${archs}")
  string(REPLACE "\\;" ";" archs "${archs}")
  message("project (CMake ${CMAKE_VERSION}): configured with default options; ${archs}")

else()
  message(FATAL_ERROR "consumer.cmake: unknown STEP '${STEP}' (library, consumer or project)")
endif()
