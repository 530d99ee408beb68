/**
 * @file distributed.hpp
 * @brief The distributed layer (namespace `smartarray::dist`): SmartArrays exchanged between MPI
 *        processes. Built when MPI is found (`SMARTARRAY_WITH_MPI`); link `smartarray::distributed`.
 */
#pragma once

#include <smartarray/smartarray.hpp>
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/point_to_point.hpp>
#include <smartarray/distributed/halo.hpp>
#include <smartarray/distributed/collectives.hpp>
