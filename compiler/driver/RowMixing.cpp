//===- RowMixing.cpp - does any op combine rows of the batch? -------------===//
//
// A batch profile runs a smaller batch padded, and a device list splits a
// batch into slices: both assume that each row's results depend on that
// row alone. The batch axis is followed from the inputs the importer
// batched (cuts.batched) through the cleaned graph; the first op that
// reads across it is named. Where an op moves the axis somewhere it can
// no longer be followed, nothing is claimed after it.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Profiles.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace cuts::driver {
namespace {

int64_t rankOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

/// The batch axis of op's result from its batched operands (`in`: operand
/// index -> batch axis), or why the op mixes rows; neither where the axis
/// cannot be followed.
struct Step {
  std::optional<int64_t> axis;
  std::string mixes;
};

Step elementwise(mlir::Operation *op,
                 llvm::ArrayRef<std::pair<unsigned, int64_t>> in) {
  const int64_t rank = rankOf(op->getResult(0));
  std::optional<int64_t> out;
  for (auto [i, a] : in) {
    const int64_t aligned = a + rank - rankOf(op->getOperand(i));
    if (out && *out != aligned)
      return {std::nullopt, "combines two batched operands along different "
                            "axes"};
    out = aligned;
  }
  return {out, ""};
}

/// A product (numpy's matmul: a 1-D operand is a vector whose axis goes).
Step product(mlir::Operation *op,
             llvm::ArrayRef<std::pair<unsigned, int64_t>> in, bool transB) {
  const int64_t rank = rankOf(op->getResult(0));
  const int64_t ra = rankOf(op->getOperand(0)), rb = rankOf(op->getOperand(1));
  const Step contracts{std::nullopt, "contracts over the batch axis"};
  std::optional<int64_t> out;
  for (auto [i, a] : in) {
    int64_t o;
    if (i == 0) {
      if (ra == 1 || a == ra - 1)
        return contracts;
      o = rb == 1 ? a : a + rank - ra;
    } else {
      if (rb == 1 || a == rb - (transB ? 1 : 2))
        return contracts;
      o = a == rb - (transB ? 2 : 1) ? rank - 1 : ra == 1 ? a : a + rank - rb;
    }
    if (out && *out != o)
      return {std::nullopt, "combines two batched operands"};
    out = o;
  }
  return {out, ""};
}

/// Gemm: Y = op(A) op(B) + C, all 2-D but C, which broadcasts.
Step gemm(GemmOp g, llvm::ArrayRef<std::pair<unsigned, int64_t>> in) {
  std::optional<int64_t> out;
  for (auto [i, a] : in) {
    int64_t o;
    if (i == 0) {
      if ((a == 1) != g.getTransA())
        return {std::nullopt, "contracts over the batch axis"};
      o = 0;
    } else if (i == 1) {
      if ((a == 0) != g.getTransB())
        return {std::nullopt, "contracts over the batch axis"};
      o = 1;
    } else {
      o = a + 2 - rankOf(g.getC());
    }
    if (out && *out != o)
      return {std::nullopt, "combines two batched operands"};
    out = o;
  }
  return {out, ""};
}

Step reduce(mlir::Operation *op, int64_t a, llvm::ArrayRef<int64_t> axes,
            bool keep) {
  const int64_t r = rankOf(op->getOperand(0));
  int64_t before = 0;
  for (int64_t x : axes) {
    const int64_t k = x < 0 ? x + r : x;
    if (k == a)
      return {std::nullopt, "reduces over the batch axis"};
    before += k < a;
  }
  if (axes.empty())
    return {std::nullopt, "reduces over every axis, the batch's too"};
  return {keep ? a : a - before, ""};
}

Step follow(mlir::Operation *op,
            llvm::ArrayRef<std::pair<unsigned, int64_t>> in, int64_t rows) {
  const int64_t a = in.front().second;
  const bool first = in.front().first == 0;
  auto norm = [&](int64_t axis) {
    return axis < 0 ? axis + rankOf(op->getOperand(0)) : axis;
  };
  if (op->hasTrait<OpTrait::Elementwise>())
    return elementwise(op, in);
  if (auto m = llvm::dyn_cast<MatMulOp>(op))
    return product(op, in, m.getTransB());
  if (auto g = llvm::dyn_cast<GemmOp>(op))
    return gemm(g, in);
  if (auto m = llvm::dyn_cast<MatMulAddOp>(op)) {
    llvm::SmallVector<std::pair<unsigned, int64_t>> ab;
    for (auto p : in)
      if (p.first < 2)
        ab.push_back(p);
    Step s = ab.empty() ? Step{} : product(op, ab, m.getTransB());
    for (auto [i, x] : in)
      if (i == 2 && s.mixes.empty()) {
        const int64_t c =
            x + rankOf(op->getResult(0)) - rankOf(op->getOperand(2));
        if (s.axis && *s.axis != c)
          return {std::nullopt, "adds a batched operand along another axis"};
        s.axis = c;
      }
    return s;
  }
  if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
    for (int64_t k = 0; k < int64_t(t.getPerm().size()); ++k)
      if (t.getPerm()[k] == a)
        return {k, ""};
    return {};
  }
  if (llvm::isa<ReshapeOp, FlattenOp, UnsqueezeOp, SqueezeOp>(op))
    return {majorAxis(shapeOf(op->getOperand(0)), shapeOf(op->getResult(0)), a,
                      rows),
            ""};
  if (llvm::isa<ExpandOp>(op)) // broadcast, right-aligned
    return {a + rankOf(op->getResult(0)) - rankOf(op->getOperand(0)), ""};
  if (auto s = llvm::dyn_cast<SoftmaxOp>(op))
    return norm(int64_t(s.getAxis())) == a
               ? Step{std::nullopt, "takes a softmax over the batch axis"}
               : Step{a, ""};
  if (auto n = llvm::dyn_cast<LayerNormalizationOp>(op))
    return first && a >= norm(int64_t(n.getAxis()))
               ? Step{std::nullopt, "normalises over the batch axis"}
               : Step{first ? std::optional<int64_t>(a) : std::nullopt, ""};
  if (auto r = llvm::dyn_cast<ReduceMeanOp>(op))
    return reduce(op, a, r.getAxes(), r.getKeepdims());
  if (auto r = llvm::dyn_cast<ReduceSumOp>(op))
    return reduce(op, a, r.getAxes(), r.getKeepdims());
  if (auto r = llvm::dyn_cast<ReduceMaxOp>(op))
    return reduce(op, a, r.getAxes(), r.getKeepdims());
  if (auto c = llvm::dyn_cast<ConcatOp>(op))
    return norm(int64_t(c.getAxis())) == a
               ? Step{std::nullopt, "concatenates along the batch axis"}
               : Step{a, ""};
  if (auto s = llvm::dyn_cast<SliceOp>(op)) {
    const bool whole = s.getStarts()[a] == 0 && s.getSteps()[a] == 1 &&
                       s.getEnds()[a] >= shapeOf(op->getOperand(0))[a];
    return whole ? Step{a, ""}
                 : Step{std::nullopt, "slices rows of the batch axis"};
  }
  if (auto g = llvm::dyn_cast<GatherElementsOp>(op))
    return norm(int64_t(g.getAxis())) == a
               ? Step{std::nullopt, "gathers along the batch axis"}
               : Step{a, ""};
  if (auto g = llvm::dyn_cast<GatherOp>(op)) {
    const int64_t axis = norm(int64_t(g.getAxis()));
    if ((first && axis == a) || in.size() > 1)
      return {std::nullopt, "gathers along the batch axis"};
    if (!first) // indices batched: the rows they pick follow them
      return {axis + a, ""};
    return {axis > a ? a : a - 1 + rankOf(op->getOperand(1)), ""};
  }
  if (llvm::isa<ConvOp, ConvTransposeOp, MaxPoolOp, AveragePoolOp,
                GlobalAveragePoolOp, BatchNormalizationOp>(op))
    return first && a == 0 ? Step{int64_t(0), ""} : Step{};
  return {};
}

std::string where(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().getStringRef() << " (" << op->getLoc() << ")";
  return s;
}

} // namespace

RowMixing rowMixing(mlir::func::FuncOp fn) {
  RowMixing result;
  llvm::DenseMap<mlir::Value, int64_t> axis;
  int64_t rows = 0;
  for (unsigned k = 0; k < fn.getNumArguments(); ++k)
    if (fn.getArgAttr(k, "cuts.batched")) {
      axis[fn.getArgument(k)] = 0;
      rows = shapeOf(fn.getArgument(k))[0];
    }
  for (mlir::Operation &op : fn.getBody().front()) {
    llvm::SmallVector<std::pair<unsigned, int64_t>> in;
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      auto it = axis.find(op.getOperand(i));
      if (it != axis.end())
        in.push_back({i, it->second});
    }
    if (in.empty() || op.getNumResults() == 0 ||
        llvm::isa<mlir::func::ReturnOp>(op))
      continue;
    Step s = follow(&op, in, rows);
    if (!s.mixes.empty()) {
      result.mixes = where(&op) + " " + s.mixes;
      return result;
    }
    if (!s.axis) {
      if (result.lost.empty())
        result.lost = where(&op);
      continue;
    }
    for (mlir::Value r : op.getResults()) // a layer norm's statistics too
      if (rankOf(r) > *s.axis)
        axis[r] = *s.axis;
  }
  return result;
}

} // namespace cuts::driver
