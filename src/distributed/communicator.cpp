// dist::Communicator (distributed/communicator.hpp): the duplicated communicator, the node-local
// rank and device, and the transport that every process agrees on.
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/runtime.hpp>

#include "distributed/transport.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::dist {

const char* to_string(Transport transport) noexcept {
  switch (transport) {
    case Transport::nccl: return "nccl";
    case Transport::mpi_device: return "mpi_device";
    case Transport::mpi_host: return "mpi_host";
  }
  return "unknown";
}

namespace detail {

void throw_mpi_error(const char* call, int code) {
  int error_class = 0;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) error_class = code;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw mpi_error(smartarray::detail::concat(call, " failed: error class ", error_class, ": ",
                                             std::string(text, static_cast<std::size_t>(length))),
                  code);
}

void require_mpi_running(const char* what) {
  int initialized = 0;
  int finalized = 0;
  SMARTARRAY_MPI_CHECK(MPI_Initialized(&initialized));
  SMARTARRAY_MPI_CHECK(MPI_Finalized(&finalized));
  SMARTARRAY_EXPECTS(initialized != 0, logic_error, what,
                     ": MPI is not initialized (call MPI_Init first)");
  SMARTARRAY_EXPECTS(finalized == 0, logic_error, what, ": MPI was finalized (MPI_Finalize ran)");
}

}  // namespace detail

namespace {

/// True when the MPI library reads and writes device memory itself.
bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

/// Why this process cannot use `transport` (empty when it can); `shares_device`: another process
/// of its node works on the same device.
std::string cannot_run(Transport transport, bool shares_device) {
  const bool host_backend = backend() == BackendKind::host;
  switch (transport) {
    case Transport::nccl:
      if (SMARTARRAY_DIST_NCCL == 0) {
        return "the nccl transport was not built in (configure with NCCL found and "
               "SMARTARRAY_WITH_NCCL on)";
      }
      if (host_backend) return "the nccl transport needs the cuda backend";
      if (shares_device) {
        return "the nccl transport needs a device of its own for each process of a node, and "
               "another process of this node works on the same device";
      }
      return {};
    case Transport::mpi_device:
      if (host_backend || mpi_is_cuda_aware()) return {};
      return "the mpi_device transport needs a CUDA-aware MPI, and MPIX_Query_cuda_support() "
             "says this one is not";
    case Transport::mpi_host: return {};
  }
  return smartarray::detail::concat("transport ", static_cast<int>(transport),
                                    " is not a Transport");
}

/// The transport this process (rank `rank`) asks for: the one in the options, else its first that
/// runs.
Transport choose_transport(const std::optional<Transport>& asked, bool shares_device, int rank) {
  if (asked) {
    const std::string why = cannot_run(*asked, shares_device);
    if (!why.empty()) {
      throw logic_error(smartarray::detail::concat("Communicator: rank ", rank, ": ", why));
    }
    return *asked;
  }
  // The host backend emulates mpi_device only when asked for it.
  if (backend() == BackendKind::host) return Transport::mpi_host;
  for (const Transport transport : {Transport::nccl, Transport::mpi_device}) {
    if (cannot_run(transport, shares_device).empty()) return transport;
  }
  return Transport::mpi_host;
}

/// True when another process of the node `node` works on this process's `device` (-1: none).
bool shares_device(int device, MPI_Comm node, int local_size) {
  std::vector<int> devices(static_cast<std::size_t>(local_size));
  SMARTARRAY_MPI_CHECK(MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, node));
  return device >= 0 && std::count(devices.begin(), devices.end(), device) > 1;
}

/// The calling thread's current device, or none when the backend cannot tell (it failed to start).
std::optional<Device> current_device_if_any() noexcept {
  try {
    return current_device();
  } catch (...) {
    return std::nullopt;
  }
}

/// Makes `device` current again after a failed constructor.
void restore_device(const std::optional<Device>& device) noexcept {
  if (!device) return;
  try {
    set_current_device(*device);
  } catch (...) {  // the device was current a moment ago; nothing better to do than keep going
  }
}

}  // namespace

bool transport_available(Transport transport) { return cannot_run(transport, false).empty(); }

Communicator::Communicator(MPI_Comm comm, CommunicatorOptions options) {
  detail::require_mpi_running("Communicator");
  SMARTARRAY_EXPECTS(comm != MPI_COMM_NULL, logic_error, "Communicator: comm is MPI_COMM_NULL");
  SMARTARRAY_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  const std::optional<Device> previous = current_device_if_any();
  try {
    // Errors come back as codes, which the library turns into mpi_error, instead of aborting.
    SMARTARRAY_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    SMARTARRAY_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    SMARTARRAY_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    MPI_Comm node = MPI_COMM_NULL;
    SMARTARRAY_MPI_CHECK(
        MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    const int local_rank_code = MPI_Comm_rank(node, &local_rank_);
    const int local_size_code = MPI_Comm_size(node, &local_size_);
    // The device: whether another process of the node works on it decides whether NCCL can run.
    // A process that cannot bind its device, whatever the reason (a backend that fails included),
    // still takes part in every collective call here (as device -1, asking for no transport), so
    // that all throw together.
    std::exception_ptr failure;
    int device = -1;
    try {
      device_ = options.device.value_or(Device{local_rank_ % device_count()});
      set_current_device(device_);
      device = device_.ordinal;
    } catch (...) {
      failure = std::current_exception();
    }
    bool shared = false;
    int shared_code = MPI_SUCCESS;
    if (local_size_code == MPI_SUCCESS) {
      try {
        shared = shares_device(device, node, local_size_);
      } catch (const mpi_error& error) {
        shared_code = error.code();
      }
    }
    SMARTARRAY_MPI_CHECK(MPI_Comm_free(&node));
    SMARTARRAY_MPI_CHECK(local_rank_code);
    SMARTARRAY_MPI_CHECK(local_size_code);
    SMARTARRAY_MPI_CHECK(shared_code);

    int mine = -1;
    if (!failure) {
      try {
        mine = static_cast<int>(choose_transport(options.transport, shared, rank_));
      } catch (...) {
        failure = std::current_exception();
      }
    }
    // Every process learns whether any failed, and whether all check sizes alike, before any
    // throws, so that none is left waiting here or in a later collective.
    check_sizes_ = options.check_sizes || SMARTARRAY_DEBUG_CHECKS != 0;
    detail::agree("Communicator", comm_, rank_, {.check_sizes = check_sizes_}, failure);

    // Each contributes its choice and whether it asked for it; one reduction of the maxima of
    // {choice, -choice, asked} tells whether all asked alike and which default all can run.
    const int contributed[3] = {mine, -mine, options.transport ? 1 : 0};
    int agreed[3] = {0, 0, 0};
    SMARTARRAY_MPI_CHECK(MPI_Allreduce(contributed, agreed, 3, MPI_INT, MPI_MAX, comm_));
    const int highest = agreed[0];
    const int lowest = -agreed[1];
    // Asked for: every rank must ask for the same. Defaults: the last choice, which all can run.
    SMARTARRAY_EXPECTS(agreed[2] == 0 || lowest == highest, logic_error,
                       "Communicator: the ranks ask for different transports (",
                       to_string(static_cast<Transport>(lowest)), " and ",
                       to_string(static_cast<Transport>(highest)), ")");
    transport_ = static_cast<Transport>(highest);
    void* tag_bound = nullptr;
    int has_tag_bound = 0;
    SMARTARRAY_MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_bound, &has_tag_bound));
    if (has_tag_bound != 0 && tag_bound != nullptr) max_tag_ = *static_cast<int*>(tag_bound);
#if SMARTARRAY_DIST_NCCL
    if (transport_ == Transport::nccl) nccl_ = detail::nccl_create(comm_, rank_, size_);
#endif
  } catch (...) {
    restore_device(previous);
    release();
    throw;
  }
}

Communicator::~Communicator() { release(); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      nccl_(std::exchange(other.nccl_, nullptr)),
      rank_(other.rank_),
      size_(other.size_),
      local_rank_(other.local_rank_),
      local_size_(other.local_size_),
      device_(other.device_),
      transport_(other.transport_),
      check_sizes_(other.check_sizes_),
      max_tag_(other.max_tag_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    nccl_ = std::exchange(other.nccl_, nullptr);
    rank_ = other.rank_;
    size_ = other.size_;
    local_rank_ = other.local_rank_;
    local_size_ = other.local_size_;
    device_ = other.device_;
    transport_ = other.transport_;
    check_sizes_ = other.check_sizes_;
    max_tag_ = other.max_tag_;
  }
  return *this;
}

MPI_Comm Communicator::native() const {
  detail::require_mpi_running("Communicator");
  SMARTARRAY_EXPECTS(comm_ != MPI_COMM_NULL, logic_error,
                     "Communicator: used after it was moved from");
  return comm_;
}

ncclComm* Communicator::nccl() const {
  SMARTARRAY_EXPECTS(transport_ == Transport::nccl, logic_error, "Communicator: rank ", rank_,
                     " has no NCCL communicator: its transport is ", to_string(transport_));
  SMARTARRAY_EXPECTS(nccl_ != nullptr, logic_error, "Communicator: used after it was moved from");
  return nccl_;
}

void Communicator::release() noexcept {
#if SMARTARRAY_DIST_NCCL
  detail::nccl_destroy(std::exchange(nccl_, nullptr));
#endif
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 1;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace smartarray::dist
