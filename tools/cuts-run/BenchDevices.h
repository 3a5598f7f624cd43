//===- BenchDevices.h - cuts bench --gpus -----------------------*- C++ -*-===//
#ifndef CUTS_TOOLS_CUTS_RUN_BENCHDEVICES_H
#define CUTS_TOOLS_CUTS_RUN_BENCHDEVICES_H

#include <cstdint>
#include <string>
#include <vector>

namespace cuts::cli {

struct DeviceBench {
  std::vector<int> gpus; // the device list
  bool master = false;   // the master-GPU baseline instead of the split
  bool preload = true;   // pre-loading (--no-preload: off)
  int weightSource = 0;  // a cuts_weight_source (--weights)
  int weightCodec = 0;   // a cuts_weight_codec (--weight-codec)
  int64_t batch = 0;     // 0: the largest the model serves
  int warmup = 10, iters = 100;
  bool json = false;
};

/// --weights' names, by cuts_weight_source; --weight-codec's, by
/// cuts_weight_codec.
extern const char *const kWeightSources[3];
extern const char *const kWeightCodecs[3];

/// `cuts bench MODEL --gpus LIST`: pipelined host runs of a model on a
/// device list, throughput and the data-movement breakdown per entry
/// (BenchDevices.cpp).
int benchDevices(const std::string &model, const DeviceBench &opts);

} // namespace cuts::cli

#endif // CUTS_TOOLS_CUTS_RUN_BENCHDEVICES_H
