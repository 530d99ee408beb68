#include "calls.hpp"

#include <smartarray/core/detail/array_messages.hpp>
#include <smartarray/error.hpp>

#include <utility>

namespace smartarray_python::dist {
namespace {

namespace sdd = sd::detail;
using smartarray::Access;
using smartarray::StreamRef;
using Messages = smartarray::detail::ArrayMessages;

/// The Terms' op: -1 for a name that is no reduction (its rank fails its checks anyway).
int op_term(const std::optional<sd::Op>& op) { return op ? static_cast<int>(*op) : -1; }

/// Throws dtype_error naming `what` when `in` and `out` have different dtypes.
void check_same_dtype(const char* what, const Elements& in, const Elements& out) {
  if (in.code != out.code || in.dtype != out.dtype) {
    throw dtype_error(smartarray::detail::concat(what, ": out has dtype ", out.dtype,
                                                 ", in has dtype ", in.dtype));
  }
}

}  // namespace

void exchange_halos(Bytes& a, const Elements& e, std::int64_t width, bool periodic,
                    const sd::Communicator& comm, StreamRef stream) {
  const auto where = smartarray::source_location::current();
  const std::size_t w = width < 0 ? 0 : static_cast<std::size_t>(width);
  const sd::Halo halo{w, periodic};
  sdd::open_collective(
      "exchange_halos", comm, stream,
      {.halo_bytes = w * e.bytes, .type = e.code, .periodic = periodic}, [&] {
        if (width < 0) {
          throw smartarray::logic_error(smartarray::detail::concat(
              "exchange_halos: rank ", comm.rank(), ": width ", width, " is negative"));
        }
        sdd::check_halo(a.size() / e.bytes, e.bytes, halo, comm);
      });
  const sdd::Neighbours neighbours = sdd::halo_neighbours(halo, comm);
  if (w == 0 || (neighbours.left < 0 && neighbours.right < 0)) return;
  sdd::exchange_halo_rows(a, w * e.bytes, w * e.bytes, neighbours, comm, stream, where);
}

void all_reduce(Bytes& a, const Elements& e, const std::string& op_name,
                const sd::Communicator& comm, StreamRef stream) {
  const auto where = smartarray::source_location::current();
  const std::optional<sd::Op> op = find_op(op_name);
  const std::size_t count = a.size() / e.bytes;
  sdd::open_collective("all_reduce", comm, stream,
                       {.bytes = a.size(), .type = e.code, .op = op_term(op)}, [&] {
                         checked_op("all_reduce", op, op_name);
                         sdd::check_element_type("all_reduce", reducible("all_reduce", e), comm);
                         sdd::check_count("all_reduce", count, "elements", comm);
                       });
  if (a.empty()) return;
  auto range = a.slice(0, a.size());
  std::byte* data = sdd::transport_data(range, Access::read_write, comm, stream, where);
  sdd::all_reduce_in_place(data, count, *e.reducible, *op, comm, stream);
  Messages::sent(a, a.size(), -1, "all_reduce", where);
  Messages::received(a, a.size(), -1, "all_reduce", where);
}

void broadcast(Bytes& a, const Elements& e, int root, const sd::Communicator& comm,
               StreamRef stream) {
  const auto where = smartarray::source_location::current();
  const std::size_t bytes = a.size();
  sdd::open_collective("broadcast", comm, stream, {.bytes = bytes, .type = e.code, .root = root},
                       [&] {
                         sdd::check_root("broadcast", root, comm);
                         sdd::check_count("broadcast", bytes, "bytes", comm);
                       });
  if (a.empty()) return;
  void* data = nullptr;
  if (comm.rank() == root) {
    const auto range = std::as_const(a).slice(0, bytes);
    data = const_cast<std::byte*>(sdd::transport_data(range, Access::read, comm, stream, where));
  } else {
    auto range = a.slice(0, bytes);
    data = sdd::transport_data(range, Access::discard, comm, stream, where);
  }
  sdd::broadcast_bytes(data, bytes, root, comm, stream);
  Messages::sent(a, bytes, root, "broadcast", where);
  Messages::received(a, bytes, root, "broadcast", where);
}

void all_gather(const Bytes& in, const Elements& in_elements, Bytes& out,
                const Elements& out_elements, const sd::Communicator& comm, StreamRef stream) {
  const auto where = smartarray::source_location::current();
  const std::size_t bytes = in.size();
  const std::size_t unit = in_elements.bytes;
  sdd::open_collective(
      "all_gather", comm, stream, {.bytes = bytes, .type = in_elements.code}, [&] {
        check_same_dtype("all_gather", in_elements, out_elements);
        sdd::check_blocks("all_gather", &in, &out, out.size() / unit, in.size() / unit, "out",
                          comm);
        sdd::check_count("all_gather", out.size(), "bytes", comm);
      });
  if (in.empty()) return;
  const auto from = in.slice(0, in.size());
  auto to = out.slice(0, out.size());
  const std::byte* source = sdd::transport_data(from, Access::read, comm, stream, where);
  std::byte* target = sdd::transport_data(to, Access::discard, comm, stream, where);
  sdd::all_gather_bytes(source, target, bytes, comm, stream);
  Messages::sent(in, bytes, -1, "all_gather", where);
  Messages::received(out, out.size(), -1, "all_gather", where);
}

void reduce_scatter(const Bytes& in, const Elements& in_elements, Bytes& out,
                    const Elements& out_elements, const std::string& op_name,
                    const sd::Communicator& comm, StreamRef stream) {
  const auto where = smartarray::source_location::current();
  const std::optional<sd::Op> op = find_op(op_name);
  const std::size_t unit = in_elements.bytes;
  sdd::open_collective(
      "reduce_scatter", comm, stream,
      {.bytes = in.size(), .type = in_elements.code, .op = op_term(op)}, [&] {
        check_same_dtype("reduce_scatter", in_elements, out_elements);
        sdd::check_blocks("reduce_scatter", &in, &out, in.size() / unit, out.size() / unit, "in",
                          comm);
        checked_op("reduce_scatter", op, op_name);
        sdd::check_element_type("reduce_scatter", reducible("reduce_scatter", in_elements), comm);
        sdd::check_count("reduce_scatter", in.size() / unit, "elements", comm);
      });
  if (out.empty()) return;
  const auto from = in.slice(0, in.size());
  auto to = out.slice(0, out.size());
  const std::byte* source = sdd::transport_data(from, Access::read, comm, stream, where);
  std::byte* target = sdd::transport_data(to, Access::discard, comm, stream, where);
  sdd::reduce_scatter_block(source, target, out.size() / unit, *in_elements.reducible, *op, comm,
                            stream);
  Messages::sent(in, in.size(), -1, "reduce_scatter", where);
  Messages::received(out, out.size(), -1, "reduce_scatter", where);
}

}  // namespace smartarray_python::dist
