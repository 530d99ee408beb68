// bench_distributed's hand-written Jacobi solvers: the baselines, in the style of NVIDIA's
// multi-gpu-programming-models. Every step reads the residual on the host.
// - HandNcclJacobi with overlap is nccl_overlap: the boundary rows on a high-priority stream, their
//   exchange as grouped ncclSend/ncclRecv on that stream, the interior on the compute stream
//   meanwhile, events between them, the norm's ncclAllReduce and its copy to the host on the
//   compute stream. Without overlap it is their nccl variant: one kernel over every row, then the
//   exchange and the norm, all on one stream.
// - HandMpiJacobi with overlap is their mpi_overlap with host copies in place of a CUDA-aware MPI:
//   the boundary rows computed and copied to pinned buffers on the high-priority stream, MPI
//   non-blocking messages on the host, the halos copied up on that stream, the interior on the
//   compute stream meanwhile; the norm copied to the host and summed by MPI_Allreduce. Without
//   overlap, all of it on one stream after one kernel over every row.
// The host waits on events recorded right after what it needs (a stream synchronize would also
// wait for the halo's copy up, and costs more). Included by bench_distributed.cu only (unnamed
// namespace).
#pragma once

#include "distributed_support.cuh"
#include "jacobi_kernel.cuh"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace {

/// What both hand-written solvers hold: the two grids, the norm on the device and its pinned host
/// slot, the compute stream and the high-priority push stream (the compute stream itself without
/// overlap), and their events.
struct HandBlock {
  Block block;
  bool overlap;
  float* a = nullptr;
  float* a_new = nullptr;
  float* norm = nullptr;
  float* norm_host = nullptr;
  cudaStream_t compute = nullptr;
  cudaStream_t push = nullptr;
  cudaEvent_t reset_done = nullptr;  // the norm is zero (compute)
  cudaEvent_t push_done = nullptr;   // the halos are in place (push)
  cudaEvent_t norm_done = nullptr;   // the norm is on the host (compute)

  HandBlock(const Block& b, bool overlapped) : block(b), overlap(overlapped) {
    const std::vector<float> start = initial_block(block);
    const std::size_t bytes = start.size() * sizeof(float);
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&a_new, bytes));
    CHECK(cudaMalloc(&norm, sizeof(float)));
    CHECK(cudaMallocHost(&norm_host, sizeof(float)));
    CHECK(cudaMemcpy(a, start.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(a_new, start.data(), bytes, cudaMemcpyHostToDevice));
    int least = 0;
    int greatest = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(cudaStreamCreateWithPriority(&compute, cudaStreamNonBlocking, least));
    if (overlap) {
      CHECK(cudaStreamCreateWithPriority(&push, cudaStreamNonBlocking, greatest));
    } else {
      push = compute;
    }
    for (cudaEvent_t* event : {&reset_done, &push_done, &norm_done}) {
      CHECK(cudaEventCreateWithFlags(event, cudaEventDisableTiming));
    }
  }
  ~HandBlock() {
    CHECK(cudaDeviceSynchronize());
    for (cudaEvent_t event : {reset_done, push_done, norm_done}) CHECK(cudaEventDestroy(event));
    if (push != compute) CHECK(cudaStreamDestroy(push));
    CHECK(cudaStreamDestroy(compute));
    CHECK(cudaFreeHost(norm_host));
    CHECK(cudaFree(norm));
    CHECK(cudaFree(a_new));
    CHECK(cudaFree(a));
  }
  HandBlock(const HandBlock&) = delete;
  HandBlock& operator=(const HandBlock&) = delete;

  /// Zeroes the norm, then sweeps: with overlap, the boundary rows on the push stream (after the
  /// zeroing and the previous step's interior) and the interior on the compute stream; without,
  /// every row in one kernel.
  void sweeps() {
    const std::size_t nx = block.nx;
    const int rows = block.rows;
    CHECK(cudaMemsetAsync(norm, 0, sizeof(float), compute));
    if (!overlap) {
      sweep(a, a_new, norm, nx, 1, rows, compute);
      return;
    }
    CHECK(cudaEventRecord(reset_done, compute));
    CHECK(cudaStreamWaitEvent(push, reset_done));
    sweep(a, a_new, norm, nx, 1, 1, push);
    sweep(a, a_new, norm, nx, rows, 1, push);
    sweep(a, a_new, norm, nx, 2, rows - 2, compute);
  }

  /// The address of row `r` of the new grid.
  [[nodiscard]] float* new_row(int r) const {
    return a_new + static_cast<std::size_t>(r) * block.nx;
  }
};

/// The hand-written solver over NCCL (nccl_overlap, or nccl without overlap).
struct HandNcclJacobi {
  HandBlock b;
  ncclComm_t comm;

  HandNcclJacobi(bool overlap, ncclComm_t nccl, const Block& block)
      : b(block, overlap), comm(nccl) {}

  float step() {
    const std::size_t nx = b.block.nx;
    const int rows = b.block.rows;
    b.sweeps();
    CHECK(ncclGroupStart());
    if (b.block.up() >= 0) {
      CHECK(ncclRecv(b.new_row(0), nx, ncclFloat, b.block.up(), comm, b.push));
      CHECK(ncclSend(b.new_row(1), nx, ncclFloat, b.block.up(), comm, b.push));
    }
    if (b.block.down() >= 0) {
      CHECK(ncclRecv(b.new_row(rows + 1), nx, ncclFloat, b.block.down(), comm, b.push));
      CHECK(ncclSend(b.new_row(rows), nx, ncclFloat, b.block.down(), comm, b.push));
    }
    CHECK(ncclGroupEnd());
    if (b.overlap) {
      // NCCL calls on one communicator must not run concurrently: the all-reduce follows the
      // exchange.
      CHECK(cudaEventRecord(b.push_done, b.push));
      CHECK(cudaStreamWaitEvent(b.compute, b.push_done));
    }
    CHECK(ncclAllReduce(b.norm, b.norm, 1, ncclFloat, ncclSum, comm, b.compute));
    CHECK(cudaMemcpyAsync(b.norm_host, b.norm, sizeof(float), cudaMemcpyDeviceToHost, b.compute));
    CHECK(cudaEventRecord(b.norm_done, b.compute));
    CHECK(cudaEventSynchronize(b.norm_done));
    std::swap(b.a, b.a_new);
    return std::sqrt(*b.norm_host);
  }
};

/// The hand-written solver over MPI from pinned host buffers (mpi_overlap with host copies, or
/// without overlap all on one stream).
struct HandMpiJacobi {
  HandBlock b;
  float* send = nullptr;  // pinned: row 1, then row `rows`
  float* recv = nullptr;  // pinned: the halo above, then the halo below
  cudaEvent_t sent_ready = nullptr;

  HandMpiJacobi(bool overlap, const Block& block) : b(block, overlap) {
    CHECK(cudaMallocHost(&send, 2 * block.nx * sizeof(float)));
    CHECK(cudaMallocHost(&recv, 2 * block.nx * sizeof(float)));
    CHECK(cudaEventCreateWithFlags(&sent_ready, cudaEventDisableTiming));
  }
  ~HandMpiJacobi() {
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(sent_ready));
    CHECK(cudaFreeHost(recv));
    CHECK(cudaFreeHost(send));
  }
  HandMpiJacobi(const HandMpiJacobi&) = delete;
  HandMpiJacobi& operator=(const HandMpiJacobi&) = delete;

  float step() {
    const Block& block = b.block;
    const std::size_t nx = block.nx;
    const std::size_t row_bytes = nx * sizeof(float);
    const int rows = block.rows;
    b.sweeps();
    // The boundary rows down to the host, behind their sweeps (on the push stream with overlap,
    // so that the interior computes meanwhile).
    CHECK(cudaMemcpyAsync(send, b.new_row(1), row_bytes, cudaMemcpyDeviceToHost, b.push));
    CHECK(cudaMemcpyAsync(send + nx, b.new_row(rows), row_bytes, cudaMemcpyDeviceToHost, b.push));
    CHECK(cudaEventRecord(sent_ready, b.push));
    CHECK(cudaEventSynchronize(sent_ready));
    exchange(block);
    if (block.up() >= 0) {
      CHECK(cudaMemcpyAsync(b.new_row(0), recv, row_bytes, cudaMemcpyHostToDevice, b.push));
    }
    if (block.down() >= 0) {
      CHECK(cudaMemcpyAsync(b.new_row(rows + 1), recv + nx, row_bytes, cudaMemcpyHostToDevice,
                            b.push));
    }
    CHECK(cudaMemcpyAsync(b.norm_host, b.norm, sizeof(float), cudaMemcpyDeviceToHost, b.compute));
    CHECK(cudaEventRecord(b.norm_done, b.compute));
    if (b.overlap) {
      // The next step's sweeps read the halos.
      CHECK(cudaEventRecord(b.push_done, b.push));
      CHECK(cudaStreamWaitEvent(b.compute, b.push_done));
    }
    CHECK(cudaEventSynchronize(b.norm_done));
    float sum = 0.0F;
    CHECK(MPI_Allreduce(b.norm_host, &sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    std::swap(b.a, b.a_new);
    return std::sqrt(sum);
  }

  /// The boundary rows to the neighbours, their rows into `recv`, as non-blocking messages
  /// (the host reused `recv` only after the previous copies up, which precede `sent_ready`).
  void exchange(const Block& block) {
    const int count = static_cast<int>(block.nx);
    MPI_Request requests[4];
    int n = 0;
    if (block.up() >= 0) {
      CHECK(MPI_Irecv(recv, count, MPI_FLOAT, block.up(), 0, MPI_COMM_WORLD, &requests[n++]));
      CHECK(MPI_Isend(send, count, MPI_FLOAT, block.up(), 1, MPI_COMM_WORLD, &requests[n++]));
    }
    if (block.down() >= 0) {
      CHECK(MPI_Irecv(recv + block.nx, count, MPI_FLOAT, block.down(), 1, MPI_COMM_WORLD,
                      &requests[n++]));
      CHECK(MPI_Isend(send + block.nx, count, MPI_FLOAT, block.down(), 0, MPI_COMM_WORLD,
                      &requests[n++]));
    }
    CHECK(MPI_Waitall(n, requests, MPI_STATUSES_IGNORE));
  }
};

}  // namespace
