// dist::Communicator (distributed/communicator.hpp): the duplicated communicator, the node-local
// rank and device, and the transport that every process agrees on.
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/runtime.hpp>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <string>
#include <utility>

namespace smartarray::dist {

const char* to_string(Transport transport) noexcept {
  switch (transport) {
    case Transport::nccl:
      return "nccl";
    case Transport::mpi_device:
      return "mpi_device";
    case Transport::mpi_host:
      return "mpi_host";
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

/// The transport this process asks for, checked against what the build and backend can run.
Transport choose_transport(const std::optional<Transport>& asked) {
  const bool host_backend = backend() == BackendKind::host;
  if (!asked) {
    if (host_backend) return Transport::mpi_host;
    return mpi_is_cuda_aware() ? Transport::mpi_device : Transport::mpi_host;
  }
  switch (*asked) {
    case Transport::nccl:
      throw logic_error(
          "Communicator: the nccl transport was not built in (configure with NCCL found and "
          "SMARTARRAY_WITH_NCCL on)");
    case Transport::mpi_device:
      SMARTARRAY_EXPECTS(host_backend || mpi_is_cuda_aware(), logic_error,
                         "Communicator: the mpi_device transport needs a CUDA-aware MPI, and "
                         "MPIX_Query_cuda_support() says this one is not");
      return Transport::mpi_device;
    case Transport::mpi_host:
      return Transport::mpi_host;
  }
  throw logic_error(smartarray::detail::concat("Communicator: transport ",
                                               static_cast<int>(*asked), " is not a Transport"));
}

}  // namespace

Communicator::Communicator(MPI_Comm comm, CommunicatorOptions options) {
  detail::require_mpi_running("Communicator");
  SMARTARRAY_EXPECTS(comm != MPI_COMM_NULL, logic_error, "Communicator: comm is MPI_COMM_NULL");
  SMARTARRAY_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
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
    SMARTARRAY_MPI_CHECK(MPI_Comm_free(&node));
    SMARTARRAY_MPI_CHECK(local_rank_code);
    SMARTARRAY_MPI_CHECK(local_size_code);

    // Every process agrees on the transport before any throws, so that none is left waiting in a
    // later collective: each one's choice (or -1 when it cannot run the one asked) is reduced.
    int mine = -1;
    std::string why;
    try {
      device_ = options.device.value_or(Device{local_rank_ % device_count()});
      set_current_device(device_);
      mine = static_cast<int>(choose_transport(options.transport));
    } catch (const logic_error& error) {
      why = error.what();
    }
    int lowest = 0;
    int highest = 0;
    SMARTARRAY_MPI_CHECK(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm_));
    SMARTARRAY_MPI_CHECK(MPI_Allreduce(&mine, &highest, 1, MPI_INT, MPI_MAX, comm_));
    if (!why.empty()) throw logic_error(smartarray::detail::concat("rank ", rank_, ": ", why));
    SMARTARRAY_EXPECTS(lowest >= 0, logic_error, "Communicator: rank ", rank_,
                       ": another rank cannot run its transport (its own error names it)");
    SMARTARRAY_EXPECTS(lowest == highest, logic_error, "Communicator: rank ", rank_, " uses ",
                       to_string(static_cast<Transport>(mine)),
                       " but the ranks ask for different transports (",
                       to_string(static_cast<Transport>(lowest)), " and ",
                       to_string(static_cast<Transport>(highest)), ")");
    transport_ = static_cast<Transport>(mine);
    check_sizes_ = options.check_sizes || SMARTARRAY_DEBUG_CHECKS != 0;
  } catch (...) {
    release();
    throw;
  }
}

Communicator::~Communicator() { release(); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(other.rank_),
      size_(other.size_),
      local_rank_(other.local_rank_),
      local_size_(other.local_size_),
      device_(other.device_),
      transport_(other.transport_),
      check_sizes_(other.check_sizes_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    local_rank_ = other.local_rank_;
    local_size_ = other.local_size_;
    device_ = other.device_;
    transport_ = other.transport_;
    check_sizes_ = other.check_sizes_;
  }
  return *this;
}

MPI_Comm Communicator::native() const {
  detail::require_mpi_running("Communicator");
  SMARTARRAY_EXPECTS(comm_ != MPI_COMM_NULL, logic_error,
                     "Communicator: used after it was moved from");
  return comm_;
}

void Communicator::release() noexcept {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 1;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace smartarray::dist
