//===- TileSync.h - the tiles a consumer tile waits for ---------*- C++ -*-===//
//
// cuSync (../shared/papers/cusync.txt) lets a consumer kernel's tile start
// once the producer tiles it reads are done, instead of once the whole
// producer kernel is. The paper's users describe the dependence in a DSL
// (cuSyncGen); here it is derived from what the code generator already
// knows: the consumer's fetch of the tensor (FetchDim: the global range a
// block reads along each axis) and the producer's exit store (the output
// dimension each axis follows, in blocks of the producer's extent).
//
// A policy maps producer tiles to semaphores (§III-E): TileSync gives each
// tile its own, RowSync merges the producer grid dimensions a consumer tile
// reads whole into one semaphore that counts their tiles, StridedSync
// merges the tiles a stride apart (a fused Q|K|V product's head's Q, K and
// V, which attention's scores read through two fetches). A conv's halo
// makes a consumer tile wait for a box of producer tiles (the paper's
// Conv2DTileSync) with no policy of its own.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_SYNC_TILESYNC_H
#define CUTS_CODEGEN_SYNC_TILESYNC_H

#include "codegen/ops/Kernel.h"
#include "codegen/sync/Policy.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuts::codegen::sync {

/// k's grid of blocks.
TileGrid tileGrid(const Kernel &k);

/// k's fetch `fetch` of a tensor in tiles: Kernel::fetches[fetch], or for a
/// tensor-core product (no fetches) fetch 0 or 1, its A or B operand: the
/// block's rows of A (columns of B), every position of the K loop, the
/// block's product of a batch, read in place through a view where it has
/// one. Nullopt for an implicit GEMM's windows, and for a batch whose
/// products step along several axes of a view.
std::optional<Fetch> tiledFetch(const Kernel &k, int fetch);

/// The dependence through consumer fetch `fetch`, which reads the tensor
/// producer stores (its exit's output). Nullopt, with `why`, where the maps
/// are not ones this analysis follows (a digit, a strided store, a grouped
/// or fused fetch): those pairs stay stream-synchronised.
std::optional<Dependence> dependence(const Kernel &producer,
                                     const Kernel &consumer, int fetch,
                                     std::string &why);

/// The policies worth trying for d: TileSync, and RowSync where a consumer
/// tile reads some producer dimension of several tiles whole.
std::vector<Policy> policies(const Dependence &d);
/// For a consumer that reads the producer's output through several
/// fetches (the scores' product reads Q and K of a fused Q|K|V product),
/// one dependence each: also StridedSync where their reads along a
/// producer dimension are a whole number of tiles apart.
std::vector<Policy> policies(const std::vector<Dependence> &deps);

/// The waits of consumer block `c` under policy p, semaphores ascending.
std::vector<Wait> waitsOf(const Dependence &d, const Policy &p,
                          const std::array<int64_t, 4> &c);

/// One kernel of a pair run alone: its time, and its blocks an SM holds.
struct KernelTiming {
  double us = 0;
  int64_t perSM = 1;
};

/// The fixed cost of a synchronised pair: the epoch's increment, the wait
/// kernel and the streams' fork and join (about 7 us on an H200, the
/// difference at 64 rows of cuts-sync-bench, where no wave is saved).
constexpr double kSyncOverheadUs = 7.0;
/// Over PDL (one stream, the consumer the producer's programmatic
/// dependent: no wait kernel, fork or join) the epoch's increment and the
/// semaphores' traffic: 0.5-2.7 us at 1 row of cuts-sync-bench's fp16 MLPs
/// on an H200, against 3-5 us on two streams.
constexpr double kSyncOverPdlOverheadUs = 1.5;

/// The model's estimate for a pair (the paper's wave quantisation, §I):
/// in stream order the consumer's waves start after the producer's last;
/// synchronised, the consumer tiles whose producer tiles are all done when
/// the producer's last wave starts (blocks run in index order) fill that
/// wave's empty slots, and the consumer has that many tiles fewer to run.
struct SyncEstimate {
  double streamUs = 0, syncUs = 0;
  int64_t earlyTiles = 0; // consumer tiles run in the producer's last wave
  double gain() const { return streamUs - syncUs; }
};

/// With the producer's tiles in `order` (T), the tiles done when its last
/// wave starts are the order's first.
SyncEstimate estimate(const Dependence &d, const Policy &p,
                      const KernelTiming &producer,
                      const KernelTiming &consumer, int64_t sms,
                      double overheadUs = kSyncOverheadUs,
                      const TileOrder &order = {});
/// A consumer tile of several dependences starts once all its waits are
/// complete.
SyncEstimate estimate(const std::vector<Dependence> &deps, const Policy &p,
                      const KernelTiming &producer,
                      const KernelTiming &consumer, int64_t sms,
                      double overheadUs = kSyncOverheadUs,
                      const TileOrder &order = {});

/// T, chosen by the model: of the orders of the producer's grid
/// dimensions, the one whose estimate is fastest (the early consumer tiles
/// save a wave); blockIdx order unless another is strictly faster (none is
/// where the producer runs in one wave: nothing of it is done before its
/// last).
TileOrder bestOrder(const Dependence &d, const Policy &p,
                    const KernelTiming &producer, const KernelTiming &consumer,
                    int64_t sms);
TileOrder bestOrder(const std::vector<Dependence> &deps, const Policy &p,
                    const KernelTiming &producer, const KernelTiming &consumer,
                    int64_t sms);

} // namespace cuts::codegen::sync

#endif // CUTS_CODEGEN_SYNC_TILESYNC_H
