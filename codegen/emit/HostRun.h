//===- HostRun.h - run a generated kernel on the CPU ------------*- C++ -*-===//
//
// The CPU execution path of every emitted kernel: the kernel's own CUDA
// source, compiled for the host with emit/cuda_host.h (one block at a time,
// its threads concurrent with real barriers) and launched on host buffers.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_HOSTRUN_H
#define CUTS_CODEGEN_EMIT_HOSTRUN_H

#include "codegen/ops/Kernel.h"

#include <map>
#include <string>

namespace cuts::codegen {

/// Compiles k for the host and runs it once; `buffers` gives every tensor of
/// k.tensors by name. False with `error` if a buffer is missing, the host
/// compiler fails or the launch reports a problem (e.g. a barrier deadlock).
bool runOnHost(const Kernel &k, const std::map<std::string, void *> &buffers,
               std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_HOSTRUN_H
