// The agreement that opens every collective call (distributed/detail/agreement.hpp): one
// reduction in the common case, and on any failure or difference one all-gather of what each
// rank had, from which every rank builds the same error.
#include <smartarray/distributed/collectives.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include "distributed/transport.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace smartarray::dist::detail {

namespace {

using smartarray::detail::concat;

/// The slots of the terms; `call` identifies the collective itself.
enum Slot : std::size_t { call, bytes, halo_bytes, type, op, root, periodic, check_sizes, slots };

/// The value of an absent term: no term takes it.
constexpr std::int64_t absent = INT64_MIN / 2;

/// A number of the call's name, alike on every rank (FNV-1a, kept positive).
std::int64_t call_code(const char* what) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char* c = what; *c != '\0'; ++c) {
    hash = (hash ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
  }
  return static_cast<std::int64_t>(hash >> 2);
}

template <typename Value>
std::int64_t slot_value(const std::optional<Value>& term) {
  return term ? static_cast<std::int64_t>(*term) : absent;
}

std::array<std::int64_t, slots> values_of(const char* what, const Terms& terms) {
  return {call_code(what),
          slot_value(terms.bytes),
          slot_value(terms.halo_bytes),
          slot_value(terms.type),
          slot_value(terms.op),
          slot_value(terms.root),
          slot_value(terms.periodic),
          slot_value(terms.check_sizes)};
}

/// The kinds of exception that every rank can build again from a message (and a code).
enum class Kind : std::int32_t {
  none,
  logic,         // smartarray::logic_error
  out_of_range,  // std::out_of_range
  length,        // std::length_error
  invalid,       // std::invalid_argument
  std_logic,     // another std::logic_error
  cuda,          // smartarray::cuda_error
  memory,        // smartarray::out_of_memory
  bad_alloc,     // another std::bad_alloc
  mpi,           // mpi_error
  nccl,          // nccl_error
  runtime,       // another std::exception
  unknown,       // not a std::exception
};

/// What one rank had: its terms, and its failure (kind, code and message).
struct Record {
  std::int64_t values[slots];
  std::int32_t kind;
  std::int32_t code;
  char name[32];
  char message[472];
};

void copy_text(char* to, std::size_t capacity, const std::string& text) {
  const std::size_t length = std::min(text.size(), capacity - 1);
  std::memcpy(to, text.data(), length);
  to[length] = '\0';
}

/// The kind, code and message of `failure`.
void classify(const std::exception_ptr& failure, Record& record) {
  const auto keep = [&](Kind kind, const std::string& message, int code = 0) {
    record.kind = static_cast<std::int32_t>(kind);
    record.code = code;
    copy_text(record.message, sizeof(record.message), message);
  };
  try {
    std::rethrow_exception(failure);
  } catch (const nccl_error& error) {
    keep(Kind::nccl, error.what(), error.code());
  } catch (const mpi_error& error) {
    keep(Kind::mpi, error.what(), error.code());
  } catch (const cuda_error& error) {
    keep(Kind::cuda, error.what(), error.status());
  } catch (const out_of_memory& error) {
    keep(Kind::memory, error.what());
  } catch (const std::bad_alloc& error) {
    keep(Kind::bad_alloc, error.what());
  } catch (const logic_error& error) {
    keep(Kind::logic, error.what());
  } catch (const std::out_of_range& error) {
    keep(Kind::out_of_range, error.what());
  } catch (const std::length_error& error) {
    keep(Kind::length, error.what());
  } catch (const std::invalid_argument& error) {
    keep(Kind::invalid, error.what());
  } catch (const std::logic_error& error) {
    keep(Kind::std_logic, error.what());
  } catch (const std::exception& error) {
    keep(Kind::runtime, error.what());
  } catch (...) {
    keep(Kind::unknown, "an exception that is not a std::exception");
  }
}

/// Throws an exception of `kind` with `message`.
[[noreturn]] void throw_kind(Kind kind, const std::string& message, int code) {
  switch (kind) {
    case Kind::logic: throw logic_error(message);
    case Kind::out_of_range: throw std::out_of_range(message);
    case Kind::length: throw std::length_error(message);
    case Kind::invalid: throw std::invalid_argument(message);
    case Kind::std_logic: throw std::logic_error(message);
    case Kind::cuda: throw cuda_error(message, code);
    case Kind::memory:
    case Kind::bad_alloc: throw out_of_memory(message);
    case Kind::mpi: throw mpi_error(message, code);
    case Kind::nccl: throw nccl_error(message, code);
    case Kind::none:
    case Kind::runtime:
    case Kind::unknown: break;
  }
  throw std::runtime_error(message);
}

std::string type_name(std::int64_t code) {
  const std::int64_t bits = (code >> 3) * 8;
  if ((code & 4) == 0) return concat(code >> 3, "-byte elements");
  if ((code & 2) != 0) return concat("float", bits, " elements");
  return concat((code & 1) != 0 ? "int" : "uint", bits, " elements");
}

std::string op_name(std::int64_t value) { return to_string(static_cast<Op>(value)); }

/// The message of the first term in which a rank differs from rank 0.
std::string difference(const char* what, const std::vector<Record>& records) {
  const Record& first = records[0];
  for (std::size_t slot = 0; slot < slots; ++slot) {
    for (std::size_t r = 1; r < records.size(); ++r) {
      const std::int64_t mine = first.values[slot];
      const std::int64_t theirs = records[r].values[slot];
      if (mine == theirs) continue;
      switch (slot) {
        case call:
          return concat("the ranks make different collective calls: rank 0 called ", first.name,
                        ", rank ", r, " ", records[r].name);
        case bytes:
          return concat(what, ": the arrays differ between ranks: rank 0's is ", mine,
                        " bytes, rank ", r, "'s ", theirs, " bytes");
        case halo_bytes:
          return concat(what, ": the halos differ between ranks: rank 0's are ", mine,
                        " bytes, rank ", r, "'s ", theirs,
                        " bytes (every rank exchanges halos of the same bytes)");
        case type:
          return concat(what, ": the element types differ between ranks: rank 0 passed ",
                        type_name(mine), ", rank ", r, " ", type_name(theirs));
        case op:
          return concat(what, ": rank 0 passed ", op_name(mine), ", rank ", r, " ", op_name(theirs),
                        ": every rank must reduce with the same op");
        case root:
          return concat(what, ": rank 0 named root ", mine, ", rank ", r, " root ", theirs,
                        ": every rank must name the same root");
        case periodic:
          return concat(what, ": rank 0 passed periodic = ", mine != 0 ? "true" : "false",
                        ", rank ", r, " periodic = ", theirs != 0 ? "true" : "false");
        default:
          return concat(what, ": rank 0 passed check_sizes = ", mine != 0 ? "true" : "false",
                        ", rank ", r, " ", theirs != 0 ? "true" : "false",
                        ": every rank must check sizes alike (a rank that checks waits for the "
                        "others in every collective call)");
      }
    }
  }
  return concat(what, ": the ranks disagree");
}

/// The message every rank throws for the failure of rank `rank`: its own, after "what: rank R: "
/// unless it starts so already.
std::string failure_message(const char* what, std::size_t rank, const Record& record) {
  const std::string prefix = concat(what, ": rank ", rank);
  const std::string message = record.message;
  if (message.rfind(prefix, 0) == 0) return message;
  return concat(prefix, ": ", message);
}

}  // namespace

void agree(const char* what, MPI_Comm comm, int rank, const Terms& terms,
           const std::exception_ptr& failure) {
  const std::array<std::int64_t, slots> values = values_of(what, terms);
  // The maxima of {failed, each value, minus each value}: every rank learns at once whether any
  // failed and whether any value differs (its maximum and minimum differ).
  std::array<std::int64_t, 1 + 2 * slots> mine{};
  mine[0] = failure ? 1 : 0;
  for (std::size_t slot = 0; slot < slots; ++slot) {
    mine[1 + 2 * slot] = values[slot];
    mine[2 + 2 * slot] = -values[slot];
  }
  std::array<std::int64_t, 1 + 2 * slots> all{};
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(mine.data(), all.data(), static_cast<int>(mine.size()),
                                     MPI_INT64_T, MPI_MAX, comm));
  bool differ = false;
  for (std::size_t slot = 0; slot < slots; ++slot) {
    differ = differ || all[1 + 2 * slot] != -all[2 + 2 * slot];
  }
  if (all[0] == 0 && !differ) return;

  // Every rank is here: learn what each had, and throw the same error.
  Record record{};
  std::copy(values.begin(), values.end(), record.values);
  copy_text(record.name, sizeof(record.name), what);
  if (failure) classify(failure, record);
  int size = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<Record> records(static_cast<std::size_t>(size));
  SMARTARRAY_MPI_CHECK(MPI_Allgather(&record, sizeof(Record), MPI_BYTE, records.data(),
                                     sizeof(Record), MPI_BYTE, comm));
  const auto failed = std::find_if(records.begin(), records.end(), [](const Record& each) {
    return each.kind != static_cast<std::int32_t>(Kind::none);
  });
  if (failed == records.end()) throw logic_error(difference(what, records));
  const auto first = static_cast<std::size_t>(failed - records.begin());
  const auto kind = static_cast<Kind>(failed->kind);
  // An exception that cannot be built again keeps its type on the rank that threw it.
  if (first == static_cast<std::size_t>(rank) && (kind == Kind::runtime || kind == Kind::unknown)) {
    std::rethrow_exception(failure);
  }
  const auto others = std::count_if(failed + 1, records.end(), [](const Record& each) {
    return each.kind != static_cast<std::int32_t>(Kind::none);
  });
  std::string message = failure_message(what, first, *failed);
  if (others > 0)
    message += concat(" (and ", others, others == 1 ? " more rank" : " more ranks",
                      " failed its checks too)");
  throw_kind(kind, message, failed->code);
}

void check_call(const char* what, const Communicator& comm, StreamRef stream) {
  smartarray::detail::runtime().check_stream(stream);
  check_stream(what, comm, stream);
  if (comm.transport() != Transport::nccl && smartarray::detail::active_capture() != nullptr) {
    smartarray::detail::refuse_in_capture(
        concat("dist::", what, " over ", to_string(comm.transport())).c_str(),
        "MPI moves the data on the host when it is called, not when the graph replays; capture "
        "it over the nccl transport, or call it outside the capture");
  }
}

MPI_Comm usable(const char* what, const Communicator& comm) {
  require_mpi_running(what);
  return comm.native();
}

}  // namespace smartarray::dist::detail
