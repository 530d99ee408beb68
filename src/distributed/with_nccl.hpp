// Private: whether the distributed layer was built with its nccl transport. CMake defines
// SMARTARRAY_DIST_NCCL (1 with SMARTARRAY_WITH_NCCL); a compile without it (the header checks) is a
// build without NCCL. With it, the nccl transport's functions (nccl.hpp).
#pragma once

#ifndef SMARTARRAY_DIST_NCCL
#define SMARTARRAY_DIST_NCCL 0
#endif

#if SMARTARRAY_DIST_NCCL
#include "distributed/nccl.hpp"
#endif
