//===- Compress.h - cuts compress -------------------------------*- C++ -*-===//
#ifndef CUTS_TOOLS_CUTS_RUN_COMPRESS_H
#define CUTS_TOOLS_CUTS_RUN_COMPRESS_H

#include <string>
#include <vector>

namespace cuts::cli {

/// `cuts compress MODEL.cuts [--emulate] [--json] [-o RESTORED.cuts]`: the
/// 3:1 weight format's savings and errors on a model (Compress.cpp).
int cmdCompress(const std::vector<std::string> &args);

} // namespace cuts::cli

#endif // CUTS_TOOLS_CUTS_RUN_COMPRESS_H
