// An interpreter of the whole SmartArray API against a model, driven by bytes. The libFuzzer target
// (tests/fuzz/fuzz_smart_array.cpp) feeds it the fuzzer's input and the property test
// (tests/test_property.cu) pseudo-random bytes. Each step decodes one operation, applies it to
// some of three arrays and to their models, and checks every array afterwards.
//
// An array's model is a std::vector with the capacity that the growth policy gives, the memory
// mode, and the residency: the host copy is valid on a suffix [host_begin, n) and the device copy
// on a prefix [0, device_end) (docs/design.md). The exact transfers of each operation follow from
// it (docs/vector.md), and each array's own counters must equal them: a copy more than the
// contract allows is a divergence, and so is a missing one. Mapped and managed arrays keep one
// buffer: they never copy, managed ones prefetch the whole array instead, and a reallocation makes
// the data host-current.
//
// Operations: the std::vector interface, host access with each intent, device views with each
// intent on one of three streams, kernels through for_each_index, transform, map, fill, copy,
// reduce and launch's binding, the Numba names, copies and moves between the arrays, new arrays in
// every memory mode, stream replacement and synchronization, the stale-host guard, injected
// allocation and copy failures, and misuse: calls with a destroyed or bogus stream, a device that
// does not exist or a range past the end, which must throw and change nothing. After an injected
// failure the arrays must hold what they held before the call (the call is then repeated with the
// fault cleared). At the end of a sequence a kernel reads every valid device copy, and the default
// pools must have as many bytes in use as before it.
//
// Header-only and plain C++ apart from SMARTARRAY_HOST_DEVICE functors: clang builds it into the
// fuzzer, nvcc into the property test, where the same adapters launch real kernels.
//
// The parts, under api_model/: byte_reader.hpp (the input), kernels.hpp (the device functors),
// model.hpp (the class and its state), residency.hpp (the residency model), checks.hpp (steps, the
// log and the checks), decoding.hpp (picking arrays, streams, modes and sizes, and the dispatch),
// vector_ops.hpp, construction_ops.hpp, host_ops.hpp, device_ops.hpp and streams_and_faults.hpp
// (the operations), and run_sequence.hpp (a whole sequence).
#pragma once

#include "support/api_model/byte_reader.hpp"
#include "support/api_model/checks.hpp"
#include "support/api_model/construction_ops.hpp"
#include "support/api_model/decoding.hpp"
#include "support/api_model/device_ops.hpp"
#include "support/api_model/host_ops.hpp"
#include "support/api_model/kernels.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"
#include "support/api_model/run_sequence.hpp"
#include "support/api_model/streams_and_faults.hpp"
#include "support/api_model/vector_ops.hpp"
