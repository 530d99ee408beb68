// The failure paths of SMARTARRAY_CUDA_TRY / SMARTARRAY_CUDA_LOG.
#include <smartarray/runtime/detail/cuda_check.hpp>

#include <cuda_runtime_api.h>

#include <iostream>

namespace smartarray::detail {

void throw_cuda_error(cudaError_t status, const char* call, const std::string& what,
                      const char* file, int line) {
  // Allocation failures are not sticky; clear them so that later calls still work.
  if (status == cudaErrorMemoryAllocation) (void)cudaGetLastError();
  std::string message = concat(what, ": ", cudaGetErrorName(status), " (",
                               cudaGetErrorString(status), ") in ", call, " at ", file, ":", line);
  if (status == cudaErrorMemoryAllocation) throw out_of_memory(std::move(message));
  throw cuda_error(message, static_cast<int>(status));
}

void log_cuda_error(cudaError_t status, const char* call, const char* what, const char* file,
                    int line) noexcept {
  std::cerr << "smartarray: " << what << ": " << cudaGetErrorName(status) << " ("
            << cudaGetErrorString(status) << ") in " << call << " at " << file << ":" << line
            << "\n";
}

}  // namespace smartarray::detail
