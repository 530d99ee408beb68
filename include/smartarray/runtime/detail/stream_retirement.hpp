/**
 * @file runtime/detail/stream_retirement.hpp
 * @brief Private: the generations of retired streams, on their own so that holders of stream
 * handles (each array's StreamOrder) check them without the backend interface.
 */
#pragma once

#include <smartarray/runtime/stream.hpp>

#include <cstdint>

namespace smartarray::detail {

/// True when `stream` retired after generation `seen`: a holder that last checked at `seen` names
/// the destroyed stream, not a later stream that the backend gave the same handle.
[[nodiscard]] bool stream_retired_since(StreamRef stream, std::uint64_t seen);
/// Changes whenever a stream is retired, so that holders of stream handles re-check cheaply.
[[nodiscard]] std::uint64_t retired_stream_generation() noexcept;

}  // namespace smartarray::detail
