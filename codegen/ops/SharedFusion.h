//===- SharedFusion.h - two tiled ops in one kernel -------------*- C++ -*-===//
//
// Shared-memory-level concatenation (thesis §3.3.2, Fig. 3.4(d)): when the
// second of two tiled ops (a conv, pooling, matmul or row op) reads its input
// tile from the first, the first runs as a phase of the second's kernel whose
// thread block computes exactly that tile (halos recomputed), stores it into
// the shared buffer the second would have fetched it into, and a barrier
// separates the phases. The intermediate never touches global memory.
//
// Its tensor-core form, a chained product: the first product's block spans
// every column of its output, which it stores (others read it too) through
// its staged tile; a second product whose A is that output then takes its
// tile from there, with no global round trip (a ResNet block's last 1 x 1
// conv and residual, then the next block's first 1 x 1 conv). A pooling
// after an implicit GEMM pools the GEMM's staged tile instead (a ResNet
// stem and its max pool: the stem's output never leaves the chip).
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

/// The prefix of a chained product's tensors in a fused kernel.
inline constexpr const char *kChainPrefix = "chain_";

/// The mma.sync tiling of a chained product (Kernel::chain) after a block
/// of `producer`: the producer's rows and threads, its warps split along
/// the rows first (16 each), every one of the consumer `d`'s columns, and
/// its whole K (the producer's columns) in one slice. Nullopt where no
/// such tiling exists.
std::optional<TileParams> chainParams(const TileParams &producer,
                                      const OpDesc &d);

/// Chains `consumer` (a product on tensor cores, tiled by chainParams) after
/// `producer` (a multistage tensor-core product whose block spans every
/// output column): the consumer reads its tensor `input` (its A, the
/// producer's output, laid out row by row as the producer's rows) from the
/// producer's staged output tile instead of global memory. Its tensors are
/// renamed with kChainPrefix. Without `storeFirst` (the consumer is the
/// output's only reader) the producer's output is not stored.
std::optional<Kernel> fuseChained(Kernel producer, Kernel consumer,
                                  const std::string &input, std::string &error,
                                  bool storeFirst = true);

/// Fuses a max pooling, or an `average` one whose windows lie inside the
/// image unpadded (`pool`, describePool's, channels-last) after
/// `conv`, an implicit GEMM whose exit stages its output tile (stagesOutput):
/// each block computes a PoolBox of conv pixels, halos included, and
/// stores the pooled tile from its staged tile instead of the conv's
/// output (Kernel::pooled), which never leaves the chip. The kernel's output
/// becomes the pooling's, images x H x W x channels. A pooling of 1 x 1
/// windows at stride 1 pools nothing: the conv's own pixels in boxes
/// (convBox), which a patch (Kernel::patchA) needs.
std::optional<Kernel> fusePooled(Kernel conv, const OpDesc &pool, bool average,
                                 std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_SHAREDFUSION_H
