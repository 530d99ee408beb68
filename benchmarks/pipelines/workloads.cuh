// The workloads of bench_pipelines, one file each in pipelines/: the factories of the seven
// contenders' workloads (see contender.cuh) and the bandwidth benchmark.
#pragma once

#include "pipelines/contender.cuh"

#include <smartarray/runtime/stream.hpp>

#include <benchmark/benchmark.h>

#include <memory>

namespace smartarray::bench::pipelines {

/// add (elementwise.cu): c = a + b, with a and b written once by the host and c left on the device.
std::unique_ptr<Contender> make_add(ContenderKind kind, StreamRef stream);
/// gaussian (elementwise.cu): the normal density of one input, elementwise.
std::unique_ptr<Contender> make_gaussian(ContenderKind kind, StreamRef stream);
/// polar (elementwise.cu): the distance of two points given in polar coordinates, elementwise.
std::unique_ptr<Contender> make_polar(ContenderKind kind, StreamRef stream);
/// chain10 (chain.cu): the host writes x, 10 kernels y = a x + y / 2, the host reads y.
std::unique_ptr<Contender> make_chain(ContenderKind kind, StreamRef stream);
/// iterative (iterative.cu): a relaxation kernel and a sum; the host reads the sum every call.
std::unique_ptr<Contender> make_iterative(ContenderKind kind, StreamRef stream);

/// How bandwidth moves a host-written array to the device.
enum class Transfer { smartarray, pinned_memcpy, pageable_memcpy };

/// bandwidth (bandwidth.cu): a host-written array of state.range(0) bytes read once on the device.
void bandwidth(benchmark::State& state, Transfer how);

}  // namespace smartarray::bench::pipelines
