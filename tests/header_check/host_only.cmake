# cmake -DSOURCE=<file> -P host_only.cmake: fails when <file>, a .cu file of src/, holds device
# code. The CUDA 12 source check compiles src/ with g++ as C++ (there is no CUDA 12 nvcc to compile
# device code), which holds only while those files keep to host code.
file(STRINGS "${SOURCE}" lines REGEX "__global__|__device__|__shared__|<<<")
if(lines)
  list(GET lines 0 line)
  message(FATAL_ERROR "${SOURCE} holds device code (${line}): g++ cannot check it against the "
    "CUDA 12 headers. Keep the .cu files of src/ host-only.")
endif()
