// The cuda backend's stream capture and graphs. Captures run in relaxed mode: the capturing thread
// may still allocate (a pool that grows for a buffer the graph binds calls cudaMalloc), and the
// library itself refuses what a capture cannot hold (runtime/detail/capture.hpp).
#include "runtime/cuda/cuda_graphs.hpp"

#include <smartarray/runtime/detail/cuda_check.hpp>

namespace smartarray::detail::cuda_graphs {

void begin(cudaStream_t stream) {
  SMARTARRAY_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                      "begin a capture on stream ", static_cast<void*>(stream));
}

GraphHandle end(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw cuda_error(concat("end the capture on stream ", static_cast<void*>(stream), ": ",
                            cudaGetErrorString(ended),
                            ended == cudaErrorStreamCaptureUnjoined
                                ? " (a stream that waited for an event of the capture was not "
                                  "joined back into the capture's stream)"
                                : ""),
                     static_cast<int>(ended));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  SMARTARRAY_CUDA_LOG(cudaGraphDestroy(graph), "destroy a captured graph");
  SMARTARRAY_CUDA_TRY(made, "instantiate the graph captured on stream ",
                      static_cast<void*>(stream));
  return static_cast<GraphHandle>(exec);
}

void abort(cudaStream_t stream) noexcept {
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SMARTARRAY_CUDA_TRY(cudaStreamIsCapturing(stream, &status), "ask whether stream ",
                      static_cast<void*>(stream), " captures");
  return status != cudaStreamCaptureStatusNone;
}

void launch(GraphHandle graph, cudaStream_t stream) {
  SMARTARRAY_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream),
                      "launch a graph on stream ", static_cast<void*>(stream));
}

void destroy(GraphHandle graph) noexcept {
  SMARTARRAY_CUDA_LOG(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)),
                      "destroy a graph");
}

}  // namespace smartarray::detail::cuda_graphs
