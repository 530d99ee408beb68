/**
 * @file graph.hpp
 * @brief The graph layer: `sa::capture` records a pipeline of SmartArray calls as a graph, and
 *        `sa::Graph::launch` replays it with exact residency (graph/graph.hpp).
 */
#pragma once

#include <smartarray/graph/graph.hpp>
