//===- HostRun.cpp - run a generated kernel on the CPU --------------------===//
#include "codegen/emit/HostRun.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostCompile.h"

namespace cuts::codegen {

bool runOnHost(const Kernel &k, const std::map<std::string, void *> &buffers,
               std::string &error) {
  KernelSignature sig{k.name, {}};
  std::vector<KernelArg> args;
  for (const TensorArg &t : k.tensors) {
    auto it = buffers.find(t.name);
    if (it == buffers.end()) {
      error = "no buffer for tensor '" + t.name + "' of kernel " + k.name;
      return false;
    }
    sig.params.push_back({t.name, paramType(t)});
    args.push_back(KernelArg::buffer(it->second));
  }
  auto hk = compileForHost(emitSource(k), sig, error);
  if (!hk)
    return false;
  LaunchShape s = launchShape(k);
  return hk->launch({unsigned(s.blocks), 1, 1}, {unsigned(s.threads), 1, 1},
                    args, error, size_t(s.sharedBytes));
}

} // namespace cuts::codegen
