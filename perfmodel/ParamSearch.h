//===- ParamSearch.h - enumerate and prune tile parameters ------*- C++ -*-===//
//
// §3.2.1: the searched parameters of Table 3.3 under the rules of the thesis
// (per-thread extents are powers of two, per-block extents multiples of them)
// and the resource limits, scored by PUL; the top T % are kept (never fewer
// than K) for code generation and measurement.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_PARAMSEARCH_H
#define CUTS_PERFMODEL_PARAMSEARCH_H

#include "perfmodel/Roofline.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace cuts {

struct PruneOptions {
  double topPercent = 1.0; // T: keep the best T % by PUL
  int minKeep = 8;         // K: but never fewer than this many
  /// M: and never more than this many. T % of a large op's space is huge
  /// (ResNet-50's convs at batch 64: 11M sets, so 112k kept), yet only the
  /// best few are ever lowered or timed, and keeping, scoring and fusing
  /// them all made the search 50x slower. A cap keeps the same best sets,
  /// in the same order (the pruning is a top-k); it does not bind at batch 1
  /// on the bundled models (at most 3115 kept there).
  int64_t maxKeep = 4096;
};

/// The block shapes of tensor-core sets an op's kept sets span at least
/// (searchParams), so that the tuner times as many tilings.
constexpr int64_t kKeptTilings = 4;

struct Candidate {
  TileParams params;
  Bound bound;
};

struct SearchResult {
  int64_t enumerated = 0;      // parameter sets considered
  std::vector<Candidate> kept; // best first
};

/// Calls fn for every parameter set of op d allowed by the rules: per-thread
/// extents powers of two (capped so the accumulators fit in registers), block
/// extents the thread extents times a power-of-two thread count, at least one
/// warp per block (unless the op is smaller), at most the GPU's block size,
/// C_input a power of two dividing the iteration (or all of C), and the
/// distinct FORMAT_shared layouts (orders that differ only in extent-1 axes
/// are one layout; elementwise and batch-norm ops, which stage nothing in
/// shared memory, only NCHW).
void forEachParams(const OpDesc &d, const GpuArch &arch,
                   const std::function<void(const TileParams &)> &fn);

/// How an op's inputs arrive.
enum class InputFrom {
  Global,      // from global memory: the op alone, or a fusion anchor
  SharedMemory // from a shared-memory-level fused predecessor (§3.2.4):
               // NUM_trans = 0 (GMRatio = 1) and, for a complex op,
               // C_input = C (its whole input is on chip)
};

/// Keeps the top T % (at least K, at most M) of the parameter sets by their
/// bound, best first; of sets with equal bounds, the earlier enumerated.
/// Every dropped set has a PUL no higher than every kept one, but that
/// where the kept sets are tensor-core ones of fewer than kKeptTilings
/// block shapes, the best set of each next shape follows them. Bank
/// conflicts are counted only for the sets that can still be kept.
SearchResult searchParams(const OpDesc &d, const GpuArch &arch,
                          const PruneOptions &opts = {},
                          InputFrom input = InputFrom::Global);

/// What a shared-memory-level predecessor must produce for a successor set:
/// its block's extents and thread count (see FusionModel::estimateShared).
using BlockKey = std::array<int64_t, 5>;

/// The best set (by its bound) of each distinct BlockKey among op d's sets,
/// best first, and the number of sets enumerated. A fused pair's time
/// depends on the predecessor's block, which the successor's own top k can
/// miss: MobileNetV2's expansion conv and depthwise conv at batch 64 fuse
/// only beyond the depthwise conv's 4096 best sets. Within a key the tiles,
/// and so the grid and the predecessor's work, are the same.
std::vector<Candidate>
bestPerBlockKey(const OpDesc &d, const GpuArch &arch, InputFrom input,
                const std::function<BlockKey(const TileParams &)> &key,
                int64_t *enumerated = nullptr);

/// The best parameter set of op d whose thread block computes exactly
/// `block` (Nb, Kb, Hb, Wb) with `threads` threads sweeping its thread-tiles
/// in rounds: the predecessor of a shared-memory-level fusion, whose output
/// tile must be its successor's input tile. Its bound's WBRatio is the
/// efficiency of those rounds and COEF_r is left to the caller (the grid,
/// residency and shared memory are the fused kernel's). Empty when no thread
/// tiling divides the block with its accumulators (one set per round) in
/// registers.
std::optional<Candidate> bestForBlock(const OpDesc &d, const GpuArch &arch,
                                      const TileParams &block, int64_t threads);

/// The first n indices of `ranked` (best first) to time: the best set of
/// each tiling (all but FORMAT_shared; for tensor cores, all but C_input
/// and the stages) in rank order, then the others in rank order if fewer
/// tilings than n are kept. Formats of one tiling
/// differ in COEF_bc only: on an H200 their times were a median 2-7 %
/// apart, the tilings' several-fold, and equal-bound formats fill the top
/// ranks in pairs.
std::vector<size_t> distinctTilingsFirst(const std::vector<Candidate> &ranked,
                                         size_t n);

/// For tensor-core set ranked[i]: the best-ranked set of the same tiling
/// whose pipeline runs differently (wgmma overlapping its slices or not,
/// TileParams::slicesAhead, or another count of resident blocks), the
/// tuner's second variant of the tiling. The bound cannot rank these
/// variants (each hides latency another way); on an H100 a 3-stage 128 x
/// 128 set with two blocks a SM ran BERT's batch-32 products 5-15 % faster
/// than the 4-stage one ranked above it.
std::optional<size_t> pipelineAlternative(const std::vector<Candidate> &ranked,
                                          size_t i);

/// The number of sets to keep out of n.
int64_t keepCount(int64_t n, const PruneOptions &opts);

} // namespace cuts

#endif // CUTS_PERFMODEL_PARAMSEARCH_H
