//===- HostRun.h - run a generated kernel on the CPU ------------*- C++ -*-===//
//
// The CPU execution path of every emitted kernel: the kernel's own CUDA
// source, compiled for the host with emit/cuda_host.h (one block at a time,
// its threads concurrent with real barriers) and launched on host buffers.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_HOSTRUN_H
#define CUTS_CODEGEN_EMIT_HOSTRUN_H

#include "codegen/emit/HostCompile.h"
#include "codegen/ops/Kernel.h"

#include <map>
#include <memory>
#include <string>

namespace cuts::codegen {

/// Compiles k for the host and runs it once; `buffers` gives every tensor of
/// k.tensors by name. False with `error` if a buffer is missing, the host
/// compiler fails or the launch reports a problem (e.g. a barrier deadlock).
bool runOnHost(const Kernel &k, const std::map<std::string, void *> &buffers,
               std::string &error);

/// The two halves of runOnHost, for kernels that must run at the same time
/// (cuSync's producer and consumer, each compiled into its own module so
/// that their launches do not serialise): `buffers` also gives the
/// semaphore parameters of kernelParams by name.
std::unique_ptr<HostKernel> compileOnHost(const Kernel &k, std::string &error);
bool launchOnHost(const HostKernel &hk, const Kernel &k,
                  const std::map<std::string, void *> &buffers,
                  std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_HOSTRUN_H
