//===- C3.h - cuts c3 -------------------------------------------*- C++ -*-===//
#ifndef CUTS_TOOLS_CUTS_RUN_C3_H
#define CUTS_TOOLS_CUTS_RUN_C3_H

#include <string>
#include <vector>

namespace cuts::cli {

/// `cuts c3 [--gpus 0,0] [--collective all-gather|all-to-all|both]
/// [--scenarios NAME,...] [--splits 8,16,32,64] [--scale F] [--iters N]
/// [--blocks N] [--json]`: ConCCL's C3 study on one GPU (C3.cpp).
int cmdC3(const std::vector<std::string> &args);

} // namespace cuts::cli

#endif // CUTS_TOOLS_CUTS_RUN_C3_H
