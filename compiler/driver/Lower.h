//===- Lower.h - a group of cuts ops as one generated kernel ----*- C++ -*-===//
//
// The bridge from the partition (perfmodel) to the code generator: a group
// of ops the partition search chose, with its anchor's tile parameters,
// becomes a codegen::Kernel whose tensors are bound to the graph's values.
// canGenerate is the code generator's side of the fusion rules, given to the
// partition search so that it only chooses groups that can be generated.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_LOWER_H
#define CUTS_COMPILER_DRIVER_LOWER_H

#include "codegen/ops/Kernel.h"
#include "compiler/tune/Tuner.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Library.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace cuts::driver {

struct GroupKernel {
  codegen::Kernel kernel;
  std::vector<mlir::Value> args; // the graph value of each kernel.tensors[i]
  std::string family; // "conv", "matmul", "pool", "row", "ew", "fused",
                      // "chain", "pooled"
};

/// True when `ops` (program order, no views) can be one generated kernel:
/// one anchor (conv, matmul/gemm, pooling, a row op) first and a chain of
/// elementwise ops after it reading scalars, per-channel vectors or
/// full-size tensors from outside; or two such anchored chains where the
/// second anchor reads the first chain's result as its tiled input and
/// nothing else does (shared-memory-level fusion: a conv or pooling after a
/// conv or pooling, a matmul or row op after a matmul); or elementwise ops
/// only (transposes of the group's inputs included). One result leaves the
/// group; a tiled op's tensors are fp32. Otherwise false, with the reason
/// in `why` if given.
bool canGenerate(llvm::ArrayRef<mlir::Operation *> ops,
                 std::string *why = nullptr);

/// The kernel `name` computing `ops` with the anchor's tile parameters p
/// and, for a shared-memory-level group, the predecessor's (the perfmodel's
/// GroupEstimate::rankedPredecessor).
std::optional<GroupKernel> lowerGroup(llvm::ArrayRef<mlir::Operation *> ops,
                                      const TileParams &p,
                                      const std::string &name,
                                      std::string &error,
                                      const TileParams *predecessor = nullptr);

/// "cuts.conv (node conv1)": an op as errors name it, with its ONNX node
/// name where the importer kept one.
std::string opName(mlir::Operation *op);

/// An emitted kernel's code without its header comment (which names the
/// group's ops and PUL): what identical kernels share, and what tuning keys
/// them by.
std::string kernelCode(const std::string &source);

/// A lowered kernel (named "cuts_kernel") as a candidate to time: its
/// source, launch and argument sizes, keyed by its code (without the header
/// comment, which names ops and PUL) on `arch` with NVRTC `toolkit`.
tune::Candidate tuneCandidate(const codegen::Kernel &k, const std::string &arch,
                              const std::string &toolkit);

/// The group as cuDNN's fused convolution, y = act(conv(x, w) + bias + z):
/// a 2-D conv followed only by at most one per-channel add (its bias), at
/// most one full-size add (z) and a relu last, its tensors all fp32, fp16
/// or bf16 (the spec's math). `args` gets the graph values x, w, [bias],
/// [z], y in that order. Nullopt if the group is not one.
std::optional<rt::ConvSpec> cudnnConv(llvm::ArrayRef<mlir::Operation *> ops,
                                      std::vector<mlir::Value> &args);

/// The group as one cuBLASLt product, y = act(alpha * A B + bias + Z): a
/// matmul, matmul_add or Gemm (both operands batched alike, or B one
/// matrix), then at most a multiplication by a constant scalar (alpha), a
/// per-column add (bias), an add of Y's shape or of one matrix shared by
/// the batch (Z), and a relu last, its tensors all fp32, fp16 or bf16. `args`
/// gets the graph values A, B, [bias], [Z], y. Nullopt if the group is not
/// one.
std::optional<rt::GemmSpec> cublasGemm(llvm::ArrayRef<mlir::Operation *> ops,
                                       std::vector<mlir::Value> &args);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_LOWER_H
