//===- Emulate.h - run a whole artifact on the CPU --------------*- C++ -*-===//
//
// `cuts run --emulate`: the artifact's plan executed step by step on host
// buffers, each kernel being its own CUDA source (stored in the artifact)
// compiled for the host with the code generator's cuda_host.h. No GPU, and
// the kernels are the ones the GPU would run.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_CUTS_RUN_EMULATE_H
#define CUTS_TOOLS_CUTS_RUN_EMULATE_H

#include "cuts/Artifact.h"

#include <string>
#include <vector>

namespace cuts {

/// inputs[i] holds the model's input i (manifest.inputs order), outputs[i]
/// receives output i. `progress` (if set) is told each step as it starts.
bool emulateArtifact(const rt::Artifact &a,
                     const std::vector<std::vector<float>> &inputs,
                     std::vector<std::vector<float>> &outputs,
                     std::string &error, bool verbose = false);

} // namespace cuts

#endif // CUTS_TOOLS_CUTS_RUN_EMULATE_H
