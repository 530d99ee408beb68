/**
 * @file graph.hpp
 * @brief The graph layer: `sa::capture` records a pipeline of SmartArray calls as a graph, and
 *        `sa::Graph::launch` replays it with exact residency (graph/capture.hpp).
 */
#pragma once

#include <smartarray/graph/capture.hpp>
