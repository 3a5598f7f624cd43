// Weights streamed from storage (runtime/internal/cuts/rt/Offload.h): the
// chunks a plan's steps are cut into under a slot size, the slot layout
// and the O_DIRECT-aligned file spans, checked on a layered plan against
// what every step reads.
#include "cuts/rt/Offload.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace cuts::rt;

namespace {

/// A chain of `layers` layers: each a kernel reading the activation and
/// its own weight of `floats` values (laid out as the weights section
/// would), the last also re-reading the first layer's weight (tied).
Manifest layered(int layers, int64_t floats) {
  Manifest m;
  Tensor x;
  x.name = "x", x.shape = {64}, x.kind = TensorKind::Input, x.index = 0;
  m.tensors.push_back(x);
  uint64_t offset = 0;
  for (int l = 0; l < layers; ++l) {
    Tensor w;
    w.name = "w" + std::to_string(l), w.shape = {floats};
    w.kind = TensorKind::Weight, w.weightOffset = offset;
    offset = (offset + w.bytes() + 255) / 256 * 256;
    m.tensors.push_back(w);
    Tensor y;
    y.name = "y" + std::to_string(l), y.shape = {64};
    y.kind = TensorKind::Intermediate;
    m.tensors.push_back(y);
    KernelLaunch k;
    k.name = "layer" + std::to_string(l);
    const int in = l == 0 ? 0 : 2 * l, weight = 2 * l + 1, out = 2 * l + 2;
    k.args = {in, weight, out};
    if (l == layers - 1)
      k.args.insert(k.args.begin() + 1, 1); // the first layer's weight
    k.outputs = {out};
    m.kernels.push_back(k);
    m.steps.push_back(Step{l, -1, -1});
  }
  return m;
}

} // namespace

TEST_CASE("streamed weights: chunks cover the steps in order and hold "
          "what each step reads",
          "[offload]") {
  std::string err;
  for (int64_t floats : {1000, 1024, 3000})
    for (uint64_t slot : {uint64_t(16384), uint64_t(50000), uint64_t(1) << 20})
      for (uint64_t section : {uint64_t(4096), uint64_t(4160)}) {
        INFO(floats << " floats a layer, slot " << slot << ", section at "
                    << section);
        const Manifest m = layered(12, floats);
        std::vector<StreamChunk> chunks = streamChunks(m, slot, section, err);
        INFO(err);
        // The last layer reads two weights: it needs a slot for both.
        const uint64_t one = (uint64_t(floats) * 4 + 255) / 256 * 256;
        if (2 * one > slot) {
          CHECK(chunks.empty());
          CHECK(err.find("step 11 reads") != std::string::npos);
          continue;
        }
        REQUIRE(!chunks.empty());
        size_t next = 0;
        for (const StreamChunk &c : chunks) {
          CHECK(c.firstStep == next);
          CHECK(c.endStep > c.firstStep);
          next = c.endStep;
          CHECK(c.slotBytes <= slot);
          std::set<int> held(c.tensors.begin(), c.tensors.end());
          CHECK(held.size() == c.tensors.size());
          for (size_t i = c.firstStep; i < c.endStep; ++i)
            for (int t : weightsOfStep(m, i))
              CHECK(held.count(t));
          // Slots do not overlap; each weight's bytes lie in a read span.
          for (size_t i = 0; i < c.tensors.size(); ++i) {
            const Tensor &w = m.tensors[size_t(c.tensors[i])];
            CHECK(c.slotOffset[i] % 256 == 0);
            if (i + 1 < c.tensors.size())
              CHECK(c.slotOffset[i] + w.bytes() <= c.slotOffset[i + 1]);
            const uint64_t file = section + w.weightOffset;
            CHECK(std::any_of(
                c.spans.begin(), c.spans.end(), [&](const FileSpan &s) {
                  return s.fileOffset <= file &&
                         file + w.bytes() <= s.fileOffset + s.bytes &&
                         c.stageOffset[i] ==
                             s.stageOffset + (file - s.fileOffset);
                }));
          }
          uint64_t staged = 0;
          for (const FileSpan &s : c.spans) {
            CHECK(s.fileOffset % kReadAlign == 0);
            CHECK(s.bytes % kReadAlign == 0);
            CHECK(s.stageOffset == staged);
            staged += s.bytes;
          }
          CHECK(staged == c.stageBytes);
        }
        CHECK(next == m.steps.size());
        if (slot >= (uint64_t(1) << 20))
          CHECK(chunks.size() == 1);
      }
  // A step reading more than a slot holds.
  CHECK(streamChunks(layered(3, 4096), 8192, 0, err).empty());
  CHECK(err.find("step 0 reads 16384 bytes of weights, more than a slot of "
                 "8192") != std::string::npos);
}

TEST_CASE("streamed weights: a weight two chunks read is found, and kept "
          "out of every chunk once resident",
          "[offload]") {
  std::string err;
  const Manifest m = layered(12, 1024); // the last layer re-reads w0 (1)
  const uint64_t slot = 3 * 4096;       // three layers' weights a chunk
  std::vector<StreamChunk> chunks = streamChunks(m, slot, 4096, err);
  REQUIRE(chunks.size() > 2);
  CHECK(sharedWeights(m, chunks) == std::vector<int>{1});
  chunks = streamChunks(m, slot, 4096, err, {1});
  REQUIRE(!chunks.empty());
  CHECK(sharedWeights(m, chunks).empty());
  for (const StreamChunk &c : chunks) {
    CHECK(std::count(c.tensors.begin(), c.tensors.end(), 1) == 0);
    for (size_t i = c.firstStep; i < c.endStep; ++i)
      for (int t : weightsOfStep(m, i))
        CHECK((t == 1 || std::count(c.tensors.begin(), c.tensors.end(), t)));
  }
}
