//===- Offload.h - weights streamed from storage under a budget -*- C++ -*-===//
//
// BigCuts' executor on one GPU (issue 35): a model whose weights do not fit
// (or may not take) the GPU's memory runs with its weights left in the
// artifact file. The plan's steps are cut, in order, into chunks whose
// weights fit one slot; two slots alternate on the device, so that while
// the kernels of one chunk run, the next chunk's weights are read from
// storage into pinned memory and copied in. This is the pure part: which
// steps form each chunk, where each weight lands in its slot, and which
// aligned spans of the file to read (O_DIRECT wants 4 KiB alignment).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_OFFLOAD_H
#define CUTS_RUNTIME_OFFLOAD_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cuts::rt {

constexpr uint64_t kReadAlign = 4096; // O_DIRECT's file and buffer alignment

/// A read of the file into the staging buffer: `bytes` from `fileOffset`
/// (both kReadAlign-aligned) to `stageOffset`.
struct FileSpan {
  uint64_t fileOffset = 0, bytes = 0, stageOffset = 0;
};

/// Steps [firstStep, endStep) and the weights they read: weight tensor
/// `tensors[i]` (a root Weight) at slotOffset[i] in the slot, its bytes
/// at stageOffset[i] in the staging buffer once `spans` are read.
struct StreamChunk {
  size_t firstStep = 0, endStep = 0;
  std::vector<int> tensors;
  std::vector<uint64_t> slotOffset, stageOffset;
  std::vector<FileSpan> spans;
  uint64_t slotBytes = 0, stageBytes = 0;
};

/// `path` opened for reading past the page cache (O_DIRECT) where the
/// file system allows it, else plainly; -1 where it cannot be opened.
int openUncached(const std::string &path);

/// The root weight tensors step `i` reads (its kernel's arguments, or a
/// copy's source), each once.
std::vector<int> weightsOfStep(const Manifest &m, size_t i);

/// `m`'s steps cut into chunks whose weights fit `slotBytes`, with the
/// weights section at `sectionOffset` in the file. Fails (empty, `error`)
/// where one step alone reads more than a slot holds.
/// Weights in `resident` stay on the device and are in no chunk.
std::vector<StreamChunk> streamChunks(const Manifest &m, uint64_t slotBytes,
                                      uint64_t sectionOffset,
                                      std::string &error,
                                      const std::vector<int> &resident = {});

/// The weights more than one chunk reads, by their bytes in the file (a
/// tied embedding: the first step's gather and the last one's product,
/// one tensor or two at one offset), which would be read twice a run.
std::vector<int> sharedWeights(const Manifest &m,
                               const std::vector<StreamChunk> &chunks);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_OFFLOAD_H
