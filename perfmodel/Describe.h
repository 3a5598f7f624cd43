//===- Describe.h - cuts ops as performance-model ops -----------*- C++ -*-===//
//
// Maps each op of the cleaned graph to the model's Table 3.2 parameters
// (OpDesc). Views (reshape and friends) are free: they become no kernel.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_DESCRIBE_H
#define CUTS_PERFMODEL_DESCRIBE_H

#include "perfmodel/Roofline.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace cuts {

/// Ops that only re-describe their operand's memory (reshape, flatten,
/// squeeze, unsqueeze, identity, dropout): no kernel, no cost.
bool isViewOp(mlir::Operation *op);

/// The model's view of op, or nullopt for views and constants (the shape
/// describers of Params.h, from the op's shapes and attributes).
std::optional<OpDesc> describeOp(mlir::Operation *op);

/// Whether a tensor-core product `user` reads `op`'s result in place
/// (codegen's MmaView): op is a transpose that keeps the innermost axis
/// innermost or a slice that keeps it whole (unit steps), and it feeds only
/// user's A or B, directly or through more such ops; or `op` is of a stem conv's
/// planar input chain (planarInput). No kernel runs it: a group of such
/// ops and their product is priced as the product alone, on tensor cores
/// only.
bool readInPlace(mlir::Operation *op, mlir::Operation *user);

/// A stem conv's input read planar (OpDesc::planarC, codegen's planar
/// patch): a channels-last conv whose input is an NCHW tensor transposed to
/// NHWC, its channels padded with zeros at the end, and cast (an fp32 model
/// input) to the conv's 16-bit type (ChannelsLast's lastInput), each op
/// feeding only the next; the conv's pixels 8-byte pairs
/// (OpDesc::pairedPixels) and its window 8 or 16 wide. `ops` holds
/// the chain in graph order.
struct PlanarInput {
  mlir::Value nchw;
  llvm::SmallVector<mlir::Operation *, 3> ops;
};
std::optional<PlanarInput> planarInput(mlir::Operation *conv);

/// Full-size tensor operands of op that come from outside `inside` (what a
/// register-level fused op reads from global memory besides its
/// predecessor's output). Scalars and per-channel vectors are not counted:
/// they are loaded once per block. A concat's operands count as one: each
/// output element is read from one of them.
int externalInputs(mlir::Operation *op,
                   const llvm::SmallPtrSetImpl<mlir::Operation *> &inside);

} // namespace cuts

#endif // CUTS_PERFMODEL_DESCRIBE_H
