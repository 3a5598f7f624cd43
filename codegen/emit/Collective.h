//===- Collective.h - the kernel behind reduce-scatter ----------*- C++ -*-===//
//
// Copy engines move bytes and cannot add (ConCCL §V), so reduce-scatter is
// all-to-all's copies and then this kernel on each rank: the rank's `ranks`
// received chunks of n values summed in rank order, in fp32, rounded once,
// so that every rank's sum of the same values is the same bits.
//
//   cuts_reduce_chunks_<f32|f16|bf16>(const T *in, unsigned ranks,
//                                     unsigned long long n, T *out)
//   out[i] = sum over r = 0 .. ranks-1 of in[r * n + i]
//
// T is float, or unsigned short holding fp16 or bf16 bits.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_COLLECTIVE_H
#define CUTS_CODEGEN_EMIT_COLLECTIVE_H

#include "codegen/emit/HostCompile.h"

#include <string>

namespace cuts::codegen {

/// The three kernels, with the conversions they need.
std::string reduceChunksSource();
/// cuts_reduce_chunks_<suffix>'s signature, to run it on the host.
KernelSignature reduceChunksSignature(const std::string &suffix);

/// A collective's copies done by the SMs, as NCCL's kernels do them, where
/// the copy engines would do them otherwise (ConCCL's baseline, `cuts c3`):
///
///   cuts_copy_chunks(const unsigned long long *items, unsigned count)
///
/// items holds `count` triples (source address, destination address,
/// bytes, a multiple of 16); every block strides over every copy.
std::string copyChunksSource();

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_COLLECTIVE_H
