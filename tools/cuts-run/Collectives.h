//===- Collectives.h - cuts collectives -------------------------*- C++ -*-===//
#ifndef CUTS_TOOLS_CUTS_RUN_COLLECTIVES_H
#define CUTS_TOOLS_CUTS_RUN_COLLECTIVES_H

#include <string>
#include <vector>

namespace cuts::cli {

/// `cuts collectives --gpus LIST [--sizes 64K,1M,...] [--collective ...]
/// [--engine ce|nccl|both] [--iters N] [--json]`: the copy-engine
/// collectives' and NCCL's bandwidth by size on a device list, each
/// result checked (Collectives.cpp).
int cmdCollectives(const std::vector<std::string> &args);

} // namespace cuts::cli

#endif // CUTS_TOOLS_CUTS_RUN_COLLECTIVES_H
