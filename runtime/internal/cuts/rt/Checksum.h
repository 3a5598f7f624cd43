//===- Checksum.h - the artifact's checksum: XXH64 --------------*- C++ -*-===//
//
// XXH64 with seed 0, after the xxHash specification (Yann Collet's
// xxhash_spec.md), written here from it. Four independent lanes of 8-byte
// words: a few GB/s on one core, where the FNV-1a of format version 1
// hashed a byte at a time (1 GB/s, seconds for a model of gigabytes, on
// every write and every load).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_CHECKSUM_H
#define CUTS_RUNTIME_CHECKSUM_H

#include <cstddef>
#include <cstdint>

namespace cuts::rt {

/// Streaming XXH64: update() with pieces in order, then digest(); the
/// pieces hash as their concatenation would.
class Xxh64 {
public:
  Xxh64();
  void update(const uint8_t *p, size_t n);
  uint64_t digest() const;

private:
  uint64_t lane[4];
  uint8_t tail[32];
  size_t tailBytes = 0;
  uint64_t total = 0;
};

/// XXH64 (seed 0) of p[0, n).
uint64_t xxh64(const uint8_t *p, size_t n);

} // namespace cuts::rt

#endif
