// The distributed layer's calls on Python SmartArrays: SmartArray<std::byte> with a dtype. Each
// does what the C++ template of the same name does for a SmartArray<T> of that dtype (the same
// local checks, the same cross-rank agreement on bytes, element type, op, root and periodicity,
// the same acquires and message counts), through the layer's type-erased entry points.
#pragma once

#include "elements.hpp"

#include <smartarray/distributed.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace smartarray_python::dist {

using Bytes = smartarray::SmartArray<std::byte>;

/// dist::exchange_halos of `a` (elements `e`) with halos of `width` elements.
void exchange_halos(Bytes& a, const Elements& e, std::int64_t width, bool periodic,
                    const sd::Communicator& comm, smartarray::StreamRef stream);
/// dist::all_reduce of `a` with the reduction named `op`.
void all_reduce(Bytes& a, const Elements& e, const std::string& op, const sd::Communicator& comm,
                smartarray::StreamRef stream);
/// dist::broadcast of `a` from `root`.
void broadcast(Bytes& a, const Elements& e, int root, const sd::Communicator& comm,
               smartarray::StreamRef stream);
/// dist::all_gather of `in` into `out` (both of one dtype).
void all_gather(const Bytes& in, const Elements& in_elements, Bytes& out,
                const Elements& out_elements, const sd::Communicator& comm,
                smartarray::StreamRef stream);
/// dist::reduce_scatter of `in` into `out` (both of one dtype) with the reduction named `op`.
void reduce_scatter(const Bytes& in, const Elements& in_elements, Bytes& out,
                    const Elements& out_elements, const std::string& op,
                    const sd::Communicator& comm, smartarray::StreamRef stream);

}  // namespace smartarray_python::dist
