//===- Compress.h - the 3:1 weight compression's GPU kernels ----*- C++ -*-===//
//
// CUDA sources of the kernels that pack fp32 weights into ScaleDNN's 3:1
// format and unpack them (the format and its scalar reference:
// runtime/internal/cuts/rt/Compress.h). Grid-stride loops over the groups
// of three, so any grid of whole warps serves any count: compress takes
// kCompressGroupsPerThread groups a thread, decompress one. Escaped groups
// take side slots from an atomic counter, one atomic a block and tile
// (their order may differ from the reference's).
//
//   cuts_compress3to1(const float *x, unsigned long long n, unsigned *words,
//                     float *side, unsigned *side_groups)
//   cuts_decompress3to1(const unsigned *words, const float *side,
//                       unsigned long long n, float *out)
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_COMPRESS_H
#define CUTS_CODEGEN_EMIT_COMPRESS_H

#include <string>

namespace cuts::codegen {

/// Groups of three values each thread of cuts_compress3to1 packs per
/// iteration (its grid needs groups / (this * blockDim.x) blocks).
constexpr unsigned kCompressGroupsPerThread = 4;

/// Both kernels in one source.
std::string compress3to1Source();

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_COMPRESS_H
