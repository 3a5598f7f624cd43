//===- HostRun.cpp - run a generated kernel on the CPU --------------------===//
#include "codegen/emit/HostRun.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostCompile.h"

namespace cuts::codegen {

bool runOnHost(const Kernel &k, const std::map<std::string, void *> &buffers,
               std::string &error) {
  auto hk = compileOnHost(k, error);
  return hk && launchOnHost(*hk, k, buffers, error);
}

std::unique_ptr<HostKernel> compileOnHost(const Kernel &k, std::string &error) {
  KernelSignature sig{k.name, {}};
  for (const auto &[name, type] : kernelParams(k))
    sig.params.push_back({name, type});
  return compileForHost(emitSource(k), sig, error);
}

bool launchOnHost(const HostKernel &hk, const Kernel &k,
                  const std::map<std::string, void *> &buffers,
                  std::string &error) {
  std::vector<KernelArg> args;
  for (const auto &param : kernelParams(k)) {
    auto it = buffers.find(param.first);
    if (it == buffers.end()) {
      error =
          "no buffer for parameter '" + param.first + "' of kernel " + k.name;
      return false;
    }
    args.push_back(KernelArg::buffer(it->second));
  }
  LaunchShape s = launchShape(k);
  return hk.launch({unsigned(s.blocks), 1, 1}, {unsigned(s.threads), 1, 1},
                   args, error, size_t(s.sharedBytes));
}

} // namespace cuts::codegen
