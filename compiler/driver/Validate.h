//===- Validate.h - sample parameter sets to check the model on a GPU -*- C++
//-*-===//
//
// Issue 3's validation: for every distinct convolution, depthwise
// convolution and matmul of a model, a broad sample of parameter sets (all
// the kept ones and pruned ones spread over the whole ranking) becomes
// kernels to time with `cuts tune`; scripts/validate_report.py then says, per
// op, whether the measured fastest set was kept (top T %) and how PUL ranks
// against measured throughput (Spearman).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_VALIDATE_H
#define CUTS_COMPILER_DRIVER_VALIDATE_H

#include "compiler/tune/Tuner.h"
#include "perfmodel/ParamSearch.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace cuts::driver {

struct ValidationSample {
  std::string op;     // "conv 3x3 ... (node name)"
  int64_t enumerated; // parameter sets of the op
  int64_t rank;       // 0 = best PUL
  bool kept;          // inside the top T % (at least K)
  double pul, timeLowerBoundUs;
  std::string params; // paramsText
  tune::Candidate candidate;
};

/// Up to `samples` sets per distinct op of @main whose kind is in `kinds`
/// (and whose node name contains one of `names`, unless that is empty):
/// every kept set, the rest drawn evenly over the pruned ranking
/// (deterministic).
std::optional<std::vector<ValidationSample>>
sampleForValidation(mlir::ModuleOp module, const GpuArch &arch,
                    const std::string &computeArch, const PruneOptions &prune,
                    int samples, const std::vector<OpKind> &kinds,
                    const std::vector<std::string> &names, std::string &error);

/// The samples as JSON (op, rank, kept, PUL, key), for validate_report.py.
std::string validationJson(const std::vector<ValidationSample> &s,
                           const std::string &arch);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_VALIDATE_H
