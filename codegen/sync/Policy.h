//===- Policy.h - cuSync's tiles, dependences, policies ---------*- C++ -*-===//
//
// The data of tile synchronisation (see TileSync.h for how it is derived):
// plain values that a Kernel carries, so that the emitter can write its
// waits and posts.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_SYNC_POLICY_H
#define CUTS_CODEGEN_SYNC_POLICY_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cuts::codegen::sync {

/// A kernel's blocks along N, K, H, W: `tiles` of `extent` outputs each.
/// Block b has coordinates in the emitter's order (W fastest):
/// b = ((n * tiles[K] + k) * tiles[H] + h) * tiles[W] + w.
struct TileGrid {
  std::array<int64_t, 4> tiles{1, 1, 1, 1}, extent{1, 1, 1, 1};
  int64_t blocks() const { return tiles[0] * tiles[1] * tiles[2] * tiles[3]; }
  std::array<int64_t, 4> coords(int64_t block) const;
};

/// Along one producer grid dimension: the global positions a consumer block
/// reads, [c * mul + add, c * mul + add + span) with c its coordinate along
/// `consumerDim` (-1: the same range for every block), or every position.
struct DimRead {
  bool all = true;
  int consumerDim = -1;
  int64_t mul = 0, add = 0, span = 0;
  int64_t globalExtent = 0; // positions past it are padding: nothing read
};

/// Producer tiles, per producer grid dimension an inclusive range (empty
/// where lo > hi).
struct Box {
  std::array<int64_t, 4> lo{0, 0, 0, 0}, hi{0, 0, 0, 0};
  bool empty() const;
};

/// How the blocks of `consumer` depend on those of `producer` through one
/// tensor: the producer's output, read by one of the consumer's fetches.
struct Dependence {
  TileGrid producer, consumer;
  std::array<DimRead, 4> read; // indexed by producer grid dimension
  std::string tensor;          // the consumer's name for it

  /// The producer tiles consumer block `c` (its coordinates) reads.
  Box box(const std::array<int64_t, 4> &c) const;
};

/// Producer grid dimensions merged into one semaphore each (RowSync), or
/// merged modulo a stride of tiles (StridedSync: the tiles s apart along a
/// dimension share a semaphore, as Q, K and V of one head do in a fused
/// Q|K|V product's columns).
struct Policy {
  std::string name; // "TileSync", "RowSync", "StridedSync"
  std::array<bool, 4> merged{false, false, false, false};
  std::array<int64_t, 4> stride{0, 0, 0, 0}; // tiles; 0: none

  /// Semaphores over the producer's grid, and the posts each gets a run.
  int64_t semaphores(const TileGrid &g) const;
  int64_t postsPerSemaphore(const TileGrid &g) const;
  /// The semaphore producer tile `c` posts to.
  int64_t semaphore(const TileGrid &g, const std::array<int64_t, 4> &c) const;
  /// The coordinates of the semaphores box b's tiles post to: 0 along a
  /// merged dimension, residues along a strided one (all of them where b's
  /// range wraps).
  Box waited(Box b) const;
};

/// The order a producer runs its tiles in (the paper's custom tile order,
/// T): its grid dimensions from the fastest-varying on. {W, H, K, N} is
/// blockIdx order. The k-th of its blocks to start takes slot k (an atomic
/// counter), the slot's tile in this order.
struct TileOrder {
  std::array<int, 4> fastest{3, 2, 1, 0};
  /// The slot of tile `c`, and the tile of a slot.
  int64_t position(const TileGrid &g, const std::array<int64_t, 4> &c) const;
  std::array<int64_t, 4> coords(const TileGrid &g, int64_t slot) const;
  /// Whether g's blocks run in blockIdx order under it (dimensions of one
  /// tile do not count).
  bool natural(const TileGrid &g) const;
  /// "K,W,H,N": the dimensions of g with more than one tile, fastest first.
  std::string text(const TileGrid &g) const;
};

/// One wait of a consumer tile: semaphore `semaphore` has counted `posts`
/// this run.
struct Wait {
  int64_t semaphore = 0, posts = 0;
};

} // namespace cuts::codegen::sync

#endif // CUTS_CODEGEN_SYNC_POLICY_H
