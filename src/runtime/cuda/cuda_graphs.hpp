// Private to the cuda backend: stream capture and CUDA graphs (cuda_graphs.cu), which the backend's
// Runtime overrides call.
#pragma once

#include <smartarray/runtime/detail/capture.hpp>

#include <cuda_runtime_api.h>

namespace smartarray::detail::cuda_graphs {

/// Starts a relaxed-mode capture on `stream`.
void begin(cudaStream_t stream);
/// Ends the capture on `stream`, instantiates its graph and returns the executable graph.
[[nodiscard]] GraphHandle end(cudaStream_t stream);
/// Ends the capture on `stream` and drops its graph, clearing any error the capture left.
void abort(cudaStream_t stream) noexcept;
/// True while `stream` captures (also when the capture was invalidated and has not ended).
[[nodiscard]] bool capturing(cudaStream_t stream);
void launch(GraphHandle graph, cudaStream_t stream);
void destroy(GraphHandle graph) noexcept;

}  // namespace smartarray::detail::cuda_graphs
