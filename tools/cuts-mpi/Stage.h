//===- Stage.h - a pipeline stage, on a GPU or the CPU ---------*- C++ -*-===//
//
// What a rank of cuts-mpi runs: stage s of a model cut into P pipeline
// stages (runtime/internal/cuts/rt/Pipeline.h), through the C API on a GPU
// (its weights resident or streamed under a budget) or emulated on the
// CPU. One micro-batch a call, host buffers in and out.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_CUTS_MPI_STAGE_H
#define CUTS_TOOLS_CUTS_MPI_STAGE_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cuts::mpi {

/// The inputs and outputs of stage `stage` of `stages` (the tensors
/// crossing its cuts), as the artifact at `path` gives them.
struct StageIO {
  std::vector<rt::Tensor> inputs, outputs;
};

/// What a rank's runs cost it, summed over its micro-batches.
struct StageStats {
  double runMs = 0;         // in the stage's runs (host to host)
  double streamReadMs = 0;  // of which reading streamed weights
  double streamedBytes = 0; // weights read from storage
};

class Stage {
public:
  virtual ~Stage() = default;
  /// One micro-batch: `in` per input, `out` resized and filled per output.
  virtual bool run(const std::vector<std::vector<uint8_t>> &in,
                   std::vector<std::vector<uint8_t>> &out,
                   std::string &error) = 0;
  virtual StageStats stats() const = 0;
};

struct StageOptions {
  int stages = 1, stage = 0;
  int device = 0;
  uint64_t weightBudget = 0; // GPU only: weights streamed
  bool emulate = false;
};

/// Every stage's I/O (stages of them), or empty with `error`.
std::vector<StageIO> stageIOs(const rt::Artifact &a, int stages,
                              std::string &error);

/// Stage `o.stage` of the artifact at `path` (already parsed as `a`; its
/// I/O `io`, one of stageIOs'), loaded; nullptr with `error`.
std::unique_ptr<Stage> openStage(const std::string &path, const rt::Artifact &a,
                                 const StageIO &io, const StageOptions &o,
                                 std::string &error);

} // namespace cuts::mpi

#endif // CUTS_TOOLS_CUTS_MPI_STAGE_H
