//===- Pipeline.h - a plan cut into pipeline stages -------------*- C++ -*-===//
//
// BigCuts' pipeline groups (DIM_P, issue 35): the plan's steps cut, in
// order, into stages that separate processes run, each passing the tensors
// live across its cut to the next. A stage is a manifest of its own: its
// steps, the tensors crossing in as its inputs and those crossing out as
// its outputs, so that the runtime loads and runs it as any model. Stage 0
// takes the model's inputs and the last stage gives its outputs.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_PIPELINE_H
#define CUTS_RUNTIME_PIPELINE_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cuts::rt {

/// The root tensors live across a cut before step `b` (written before it,
/// or an input, and read from it on, or an output), by id.
std::vector<int> crossingTensors(const Manifest &m, size_t b);

/// Step indices 0 = c0 < c1 < ... < cS = steps.size() cutting `m` into
/// `stages` stages of about equal weight bytes (FLOPs where it has no
/// weights), each cut moved to where the fewest bytes cross nearby. Never
/// between a cuSync producer and its consumer. Empty (and `error`) where
/// the plan has too few steps or a tensor-parallel collective.
std::vector<size_t> pipelineCuts(const Manifest &m, int stages,
                                 std::string &error);

/// Steps [begin, end) of `m` as a plan of their own: crossingTensors(begin)
/// its inputs (the model's own for begin 0), crossingTensors(end) its
/// outputs (the model's for the last stage); one that is both is copied
/// through. Weights the stage does not read become unused intermediates.
Manifest pipelineStage(const Manifest &m, size_t begin, size_t end);

/// pipelineCuts of `a`'s plan; empty (and `error`) also where it has
/// batch profiles or tensor-parallel ranks, which are not cut.
std::vector<size_t> stageCuts(const Artifact &a, int stages,
                              std::string &error);

/// Artifact `a` (its plan and every batch profile) reduced to stage
/// `stage` of `stages`. Where `packed` is given, the weights the stage
/// reads are packed into it and their offsets moved there (else they stay
/// where the weights section has them). False (and `error`) where it
/// cannot be cut, or the profiles' cuts do not pass the same tensors.
bool takeStage(Artifact &a, int stages, int stage, std::vector<uint8_t> *packed,
               std::string &error);

/// Reads `n` bytes of the weights section from `offset` into `to`.
using SectionReader =
    std::function<bool(uint64_t offset, uint64_t n, uint8_t *to)>;
/// A reader of `f`, whose weights section starts at `sectionOffset`.
SectionReader fileSection(std::FILE *f, uint64_t sectionOffset);

/// Ranges of the weights section (offset -> bytes) read through `read` and
/// packed back to back into `packed`, each 256-byte aligned; `at` says
/// where each went. False where a read fails.
bool packSpans(const std::map<uint64_t, uint64_t> &spans,
               const SectionReader &read, std::vector<uint8_t> &packed,
               std::map<uint64_t, uint64_t> &at);

/// The weight tensors of `m` (from `all`, the weights section) packed into
/// `packed` (tensors at one offset once) and their offsets moved there:
/// what a plan that reads part of the weights (a stage, a tensor-parallel
/// rank) puts on its device.
void packWeights(Manifest &m, const uint8_t *all, std::vector<uint8_t> &packed);
/// The same, each weight read from the file at `path`, whose weights
/// section starts at `sectionOffset`; false and `error` on a short read.
bool packWeightsFromFile(Manifest &m, const std::string &path,
                         uint64_t sectionOffset, std::vector<uint8_t> &packed,
                         std::string &error);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_PIPELINE_H
