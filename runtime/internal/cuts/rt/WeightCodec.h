//===- WeightCodec.h - weights sent encoded between devices -----*- C++ -*-===//
//
// The entries of a device list past the first may get the weights from the
// first encoded (cuts_load_options.weight_codec): its fp32 weights packed by
// a codec (ScaleDNN's 3:1 format, or bf16 truncation), every other weight's
// bytes as they are, all in one staging buffer that one peer copy or one
// NCCL broadcast sends. Here is where each range lies in that buffer; the
// kernels are the artifact's "codec.<arch>" module (codegen/emit/Compress.h).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_WEIGHTCODEC_H
#define CUTS_RUNTIME_WEIGHTCODEC_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <vector>

namespace cuts::rt {

/// Items (3:1: groups of three; bf16: values) each thread of the codec
/// kernels takes (codegen/emit/Compress.h): a launch needs
/// items / (this * blockDim.x) blocks, and a range's first item is a
/// multiple of it.
constexpr unsigned kCodecItemsPerThread = 4;

/// cuts_weight_codec's values.
enum class WeightCodec { None = 0, ThreeToOne = 1, Bf16 = 2 };

struct ByteRange {
  uint64_t offset = 0, bytes = 0;
};

/// The weights section as the codec sees it: the fp32 weights' ranges
/// (merged where they overlap, and none that shares a byte with another
/// dtype's weight: those go raw), and the other weights' bytes.
struct CodecRanges {
  std::vector<ByteRange> packed, raw;
  uint64_t packedBytes() const;
  uint64_t rawBytes() const;
};
CodecRanges codecRanges(const Artifact &a);

/// Offsets in the staging buffer: the packed ranges' table (below), the
/// raw ranges, then each packed range's encoding (3:1: a word per group of
/// three; bf16: two bytes a value), then the 3:1 side array of escaped
/// groups (three fp32 values each). Every piece starts 16-byte aligned, so
/// the kernels' vector accesses apply. The table travels with the rest: a
/// receiver decodes with what it was sent.
struct StagingLayout {
  uint64_t table = 0;
  std::vector<uint64_t> raw, packed;
  uint64_t side = 0;
  /// The buffer's bytes with `sideGroups` escaped groups.
  uint64_t bytes(uint64_t sideGroups) const { return side + 12 * sideGroups; }
};
StagingLayout stagingLayout(const CodecRanges &r, WeightCodec codec);

/// The encoding's bytes of `values` fp32 values (without side groups).
uint64_t encodedBytes(uint64_t values, WeightCodec codec);

/// The kernels' cuts_codec_range (codegen/emit/Compress.h): a packed
/// range's bytes at `weight` in the weights, its encoding at `staged` in
/// the staging buffer, its values, and its first item in the launch (3:1:
/// its first group; bf16: its first value), a multiple of four so that a
/// thread's four items lie in one range.
struct CodecTableEntry {
  uint64_t weight = 0, staged = 0, values = 0, first = 0;
};
static_assert(sizeof(CodecTableEntry) == 32, "the kernels' layout");

/// The table of r's packed ranges as `l` lays them out; `items` gets the
/// launch's item count.
std::vector<CodecTableEntry> codecTable(const CodecRanges &r,
                                        const StagingLayout &l,
                                        WeightCodec codec, uint64_t &items);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_WEIGHTCODEC_H
