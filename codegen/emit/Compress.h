//===- Compress.h - the weight codecs' GPU kernels --------------*- C++ -*-===//
//
// CUDA sources of the kernels that pack fp32 weights into ScaleDNN's 3:1
// format and unpack them (the format and its scalar reference:
// runtime/internal/cuts/rt/Compress.h), and of bf16 truncation, the
// comparison point. Each launch covers every range of a table
// (cuts_codec_range, cuts/rt/WeightCodec.h's CodecTableEntry) in one item
// space, so a model's weights take one launch a direction. Grid-stride
// loops: any grid of whole warps serves any count, each thread taking four
// items (cuts/rt/WeightCodec.h's kCodecItemsPerThread). Escaped groups take
// side slots from an atomic counter, one atomic a block and tile (their order
// may differ from the reference's); those past side_capacity are counted only.
//
//   cuts_compress3to1(const u8 *weights, u8 *staging,
//                     const cuts_codec_range *ranges, unsigned count,
//                     u64 items, unsigned *side_groups,
//                     unsigned side_capacity, u64 side_offset)
//   cuts_decompress3to1(const u8 *staging, u8 *weights,
//                       const cuts_codec_range *ranges, unsigned count,
//                       u64 items, u64 side_offset)
//   cuts_truncate_bf16(const u8 *weights, u8 *staging,
//                      const cuts_codec_range *ranges, unsigned count,
//                      u64 items)
//   cuts_expand_bf16(const u8 *staging, u8 *weights,
//                    const cuts_codec_range *ranges, unsigned count,
//                    u64 items)
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_COMPRESS_H
#define CUTS_CODEGEN_EMIT_COMPRESS_H

#include <string>

namespace cuts::codegen {

/// The four kernels in one source (an artifact's "codec.<arch>" module).
std::string weightCodecSource();

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_COMPRESS_H
