/**
 * @file distributed/communicator.hpp
 * @brief `dist::Communicator`: a group of MPI processes that exchange SmartArrays, the device each
 *        process works on, and the transport that carries the arrays' bytes.
 */
#pragma once

#include <smartarray/runtime/device.hpp>

#include <mpi.h>

#include <optional>
#include <stdexcept>
#include <string>

/// NCCL's communicator (`ncclComm_t` is a pointer to it); declared here so that this header does
/// not need `nccl.h`.
struct ncclComm;

namespace smartarray::dist {

/// @brief What carries an array's bytes between processes.
enum class Transport {
  nccl,        ///< NCCL, from device memory to device memory
  mpi_device,  ///< CUDA-aware MPI, from device memory (emulated device memory on the host backend)
  mpi_host,    ///< MPI from host memory: the device side is copied to the host first
};

/// @brief "nccl", "mpi_device" or "mpi_host".
[[nodiscard]] const char* to_string(Transport transport) noexcept;

/**
 * @brief A call of the transport's library failed: the message names the call, the error and the
 *        library's text for it.
 */
class transport_error : public std::runtime_error {
 public:
  /// @brief Builds the error. @param message the full message. @param code the library's code.
  transport_error(const std::string& message, int code)
      : std::runtime_error(message), code_(code) {}
  /// @brief The library's error code (an MPI error code, an `ncclResult_t`).
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

/// @brief An MPI call failed (its error class and MPI's error string are in the message).
class mpi_error : public transport_error {
 public:
  using transport_error::transport_error;
};

/// @brief An NCCL call failed (NCCL's error string and its last error are in the message).
class nccl_error : public transport_error {
 public:
  using transport_error::transport_error;
};

/**
 * @brief True when this process can use `transport`: `nccl` needs the cuda backend and a build
 *        with NCCL (SMARTARRAY_WITH_NCCL), `mpi_device` the host backend (which emulates it) or a
 *        CUDA-aware MPI (`MPIX_Query_cuda_support`); `mpi_host` always runs. A group of processes
 *        also needs a device of its own for each process of a node to use `nccl`.
 */
[[nodiscard]] bool transport_available(Transport transport);

/// @brief How a Communicator binds its process to a device and picks its transport.
struct CommunicatorOptions {
  /// The device of this process. Default: its node-local rank (the rank among the processes of
  /// its node, from `MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED`) modulo the device count,
  /// so that the ranks of one node spread over its devices.
  std::optional<Device> device = std::nullopt;
  /// The transport; every process must ask for the same one. Default: each process's first of
  /// NCCL (built in, the cuda backend, and no other process of its node on the same device), MPI
  /// from device memory (a CUDA-aware MPI), MPI from host memory; the processes then take the
  /// last of their defaults in that order, the one that every process can run. The host backend
  /// defaults to `mpi_host`; it also emulates `mpi_device` (MPI reads and writes the emulated
  /// device memory), so that the device path runs without a GPU.
  std::optional<Transport> transport = std::nullopt;
  /// Before each collective call (the collectives and the halo exchange), every rank checks its
  /// arguments, then one small reduction over every rank (MPI_Allreduce of 17 integers) agrees
  /// on the outcome and on what must match: bytes, element type, op, root, halo periodicity.
  /// When any rank failed or anything differs, every rank throws the same error before anything
  /// is acquired. With `nccl`, each point-to-point message is also first announced to its
  /// receiver (one round trip), which has no probe. Debug builds always check. A release build
  /// may turn it off to save that one latency per call: then a rank whose check fails throws
  /// alone (the others may wait forever in the call), and ranks that pass different bytes,
  /// types, ops, roots or periodicity get undefined results. Every rank must pass the same value:
  /// the constructor throws on every rank when they differ.
  bool check_sizes = true;
};

/**
 * @brief A group of processes, duplicated from an MPI communicator, each bound to one device.
 *
 * The constructor is collective over `comm`: every process of it must make one. It duplicates
 * `comm` (`MPI_Comm_dup`), so that the library's messages never match the application's, makes
 * the chosen device current on the calling thread, and agrees with the other processes on the
 * transport (every process must use the same one). With `nccl`, it also creates an NCCL
 * communicator over the same processes (`ncclCommInitRank`, its id broadcast over MPI). MPI must
 * be initialized, and still be when the communicator is used; its destructor frees the duplicate
 * unless MPI was finalized already, and destroys the NCCL communicator.
 */
class Communicator {
 public:
  /**
   * @brief Joins the processes of `comm`.
   * @param comm an MPI communicator (`MPI_COMM_WORLD`, or any other).
   * @param options the device and the transport; defaults as documented in CommunicatorOptions.
   * @throws logic_error when MPI is not initialized or already finalized, when the device is not
   *         one of this process's, when the transport cannot run here (NCCL not built in, or the
   *         host backend asked for it; `nccl` with two processes of a node on one device;
   *         `mpi_device` on the cuda backend without a CUDA-aware MPI), when the processes ask
   *         for different transports, or when their `check_sizes` differ.
   * @throws mpi_error when an MPI call fails.
   * @throws nccl_error when NCCL cannot create its communicator (on every process).
   *
   * Every process takes part in one agreement whatever fails on it (a backend that cannot start
   * included): when any process fails, every process throws the same error, of the failing
   * process's kind (cuda_error, logic_error, ...), naming its rank and its message. A
   * constructor that throws leaves the calling thread's current device as it found it.
   */
  explicit Communicator(MPI_Comm comm, CommunicatorOptions options = {});
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// @brief This process's rank, 0 to size() - 1.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// @brief The number of processes.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// @brief The transport of every transfer.
  [[nodiscard]] Transport transport() const noexcept { return transport_; }
  /// @brief This process's rank among the processes of its node.
  [[nodiscard]] int local_rank() const noexcept { return local_rank_; }
  /// @brief The number of processes of this node.
  [[nodiscard]] int local_size() const noexcept { return local_size_; }
  /// @brief The device this process works on.
  [[nodiscard]] Device device() const noexcept { return device_; }
  /// @brief True when collectives and halo exchanges check sizes across ranks first.
  [[nodiscard]] bool checks_sizes() const noexcept { return check_sizes_; }
  /// @brief The largest message tag (MPI's `MPI_TAG_UB` of the communicator, at least 32767).
  [[nodiscard]] int max_tag() const noexcept { return max_tag_; }
  /**
   * @brief The duplicated MPI communicator (for the library's own messages).
   * @throws logic_error when MPI was finalized, or the communicator was moved from.
   */
  [[nodiscard]] MPI_Comm native() const;
  /**
   * @brief The NCCL communicator (an `ncclComm_t`), for your own NCCL calls on this group.
   * @throws logic_error when the transport is not `nccl`, or the communicator was moved from.
   */
  [[nodiscard]] ncclComm* nccl() const;

 private:
  void release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  ncclComm* nccl_ = nullptr;
  int rank_ = 0;
  int size_ = 0;
  int local_rank_ = 0;
  int local_size_ = 0;
  Device device_{};
  Transport transport_ = Transport::mpi_host;
  bool check_sizes_ = true;
  int max_tag_ = 32767;
};

}  // namespace smartarray::dist
