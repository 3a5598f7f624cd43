//===- SplitProducts.cpp - one product per column range sliced ------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace cuts {
#define GEN_PASS_DEF_SPLITPRODUCTS
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// The column range [first, second) that slice s takes of its input, every
// other axis whole, steps 1; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> columnRange(SliceOp s) {
  auto shape = rankedType(s.getData()).getShape();
  const size_t r = shape.size();
  auto starts = s.getStarts(), ends = s.getEnds(), steps = s.getSteps();
  if (r == 0 || starts.size() != r || ends.size() != r || steps.size() != r)
    return std::nullopt;
  for (size_t i = 0; i < r; ++i)
    if (steps[i] != 1 ||
        (i + 1 < r && (starts[i] != 0 || ends[i] != shape[i])))
      return std::nullopt;
  if (starts[r - 1] < 0 || ends[r - 1] > shape[r - 1] ||
      starts[r - 1] >= ends[r - 1])
    return std::nullopt;
  return std::make_pair(starts[r - 1], ends[r - 1]);
}

// v's range [first, last) along `axis`, the other axes whole.
mlir::Value sliceAxis(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      size_t axis, int64_t first, int64_t last) {
  auto t = rankedType(v);
  llvm::SmallVector<int64_t> starts(t.getRank(), 0), ends(t.getShape());
  llvm::SmallVector<int64_t> steps(t.getRank(), 1), shape(t.getShape());
  starts[axis] = first, ends[axis] = last, shape[axis] = last - first;
  return b.create<SliceOp>(
      loc, mlir::RankedTensorType::get(shape, t.getElementType()), v,
      b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
      b.getDenseI64ArrayAttr(steps));
}

// product(A, B[, C]) with B a 2-D constant and C (if any) a constant bias,
// every user a slice of a range of its columns of at least minElements
// results: one product per slice, of B's columns (C's entries) in that
// range; the slices fold into constants.
bool split(mlir::Operation *mm, bool transB, int64_t minElements) {
  mlir::Value b = mm->getOperand(1);
  mlir::Value c = mm->getNumOperands() > 2 ? mm->getOperand(2) : nullptr;
  if (rankedType(b).getRank() != 2 || !mlir::matchPattern(b, mlir::m_Constant()) ||
      (c && !mlir::matchPattern(c, mlir::m_Constant())) || mm->use_empty())
    return false;
  if (c) { // a bias: [N], or [1, ..., N]
    auto cs = rankedType(c).getShape();
    for (size_t i = 0; i + 1 < cs.size(); ++i)
      if (cs[i] != 1)
        return false;
  }
  llvm::SmallVector<std::pair<SliceOp, std::pair<int64_t, int64_t>>> slices;
  for (mlir::Operation *user : mm->getUsers()) {
    auto s = llvm::dyn_cast<SliceOp>(user);
    auto range = s ? columnRange(s) : std::nullopt;
    if (!range || rankedType(s).getNumElements() < minElements)
      return false;
    slices.push_back({s, *range});
  }
  for (auto &[s, range] : slices) {
    mlir::OpBuilder bld(s);
    mlir::Location loc = mm->getLoc();
    llvm::SmallVector<mlir::Value> operands{
        mm->getOperand(0),
        sliceAxis(bld, loc, b, transB ? 0 : 1, range.first, range.second)};
    if (c)
      operands.push_back(sliceAxis(bld, loc, c, rankedType(c).getRank() - 1,
                                   range.first, range.second));
    mlir::OperationState state(loc, mm->getName(), operands,
                               mlir::TypeRange{s.getType()}, mm->getAttrs());
    mlir::Operation *part = bld.create(state);
    s.getOutput().replaceAllUsesWith(part->getResult(0));
    s->erase();
  }
  mm->erase();
  return true;
}

struct SplitProductsPass : impl::SplitProductsBase<SplitProductsPass> {
  using SplitProductsBase::SplitProductsBase;

  void runOnOperation() override {
    llvm::SmallVector<std::pair<mlir::Operation *, bool>> products;
    getOperation().walk([&](mlir::Operation *op) {
      if (auto mm = llvm::dyn_cast<MatMulOp>(op))
        products.push_back({op, mm.getTransB()});
      else if (auto ma = llvm::dyn_cast<MatMulAddOp>(op))
        products.push_back({op, ma.getTransB()});
    });
    for (auto [op, transB] : products)
      (void)split(op, transB, minElements);
  }
};

} // namespace
} // namespace cuts
