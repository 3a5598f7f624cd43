//===- Emulate.h - run a whole artifact on the CPU --------------*- C++ -*-===//
//
// `cuts run --emulate`: the artifact's plan executed step by step on host
// buffers, each kernel being its own CUDA source (stored in the artifact)
// compiled for the host with the code generator's cuda_host.h. No GPU, and
// the kernels are the ones the GPU would run.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_SUPPORT_EMULATE_H
#define CUTS_TOOLS_SUPPORT_EMULATE_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cuts {

/// inputs[i] holds the bytes of the model's input i (manifest.inputs
/// order) in its dtype; outputs[i] receives output i's bytes. With
/// `verbose`, each kernel's host compile and run time go to stderr. A
/// library step runs its generated alternative (rt::Step::hostKernel), as
/// a run on the GPU without a CUDA graph does, unless `graph`.
bool emulateArtifact(const rt::Artifact &a,
                     const std::vector<std::vector<uint8_t>> &inputs,
                     std::vector<std::vector<uint8_t>> &outputs,
                     std::string &error, bool verbose = false,
                     bool graph = false);

/// The C type a generated kernel's parameter of a manifest dtype points to
/// ("float" for float32, "long long" for int64, "int" for int32, "bool"
/// for bool, ...): what the code generator declares (codegen::typeName),
/// since the host compile checks the kernel's exact parameter types.
/// Nullptr for a dtype without one.
const char *kernelElementType(const std::string &dtype);

} // namespace cuts

#endif // CUTS_TOOLS_SUPPORT_EMULATE_H
