//===- SharedFusion.h - two tiled ops in one kernel -------------*- C++ -*-===//
//
// Shared-memory-level concatenation (thesis §3.3.2, Fig. 3.4(d)): when the
// second of two tiled ops (a conv, pooling, matmul or row op) reads its input
// tile from the first, the first runs as a phase of the second's kernel whose
// thread block computes exactly that tile (halos recomputed), stores it into
// the shared buffer the second would have fetched it into, and a barrier
// separates the phases. The intermediate never touches global memory.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_OPS_SHAREDFUSION_H
#define CUTS_CODEGEN_OPS_SHAREDFUSION_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// The prefix of the producer's tensors and shared tiles in a fused kernel.
inline constexpr const char *kProducerPrefix = "pre_";

/// Fuses `producer` (a kernel with one output tensor) into `consumer` in
/// place of the consumer's fetch of its tensor `input`. The producer's block
/// extents must equal that fetch's tile extents along the producer's output
/// axes, and the consumer must run one C_input iteration (its whole input on
/// chip). The producer's tensors and tiles are renamed with kProducerPrefix.
std::optional<Kernel> fuseShared(Kernel producer, Kernel consumer,
                                 const std::string &input, std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_SHAREDFUSION_H
