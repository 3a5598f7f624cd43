//===- SplitReductions.cpp - long rows reduced in two steps ---------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"

namespace cuts {
#define GEN_PASS_DEF_SPLITREDUCTIONS
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// The inner factor of a row of `length` that divides it: the largest
// divisor in [maxRow / 4, maxRow], a multiple of a warp's 32 lanes where
// one is; 0 where none is (the row is padded instead).
int64_t innerFactor(int64_t length, int64_t maxRow) {
  int64_t best = 0, lanes = 0;
  for (int64_t b = std::max<int64_t>(2, maxRow / 4); b <= maxRow && b < length;
       ++b)
    if (length % b == 0) {
      best = b;
      if (b % 32 == 0)
        lanes = b;
    }
  return lanes ? lanes : best;
}

// Whether split pads a row of `length`: longer than maxRow with no divisor
// near it.
bool padded(int64_t length, int64_t maxRow) {
  return length > maxRow && !innerFactor(length, maxRow);
}

mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element,
                   double value) {
  auto t = mlir::RankedTensorType::get({}, element);
  return b.create<ConstantOp>(
      loc, t,
      mlir::DenseElementsAttr::get(t, mlir::FloatAttr::get(element, value)));
}

// v with `pad` elements of `value` after the end of its last axis.
mlir::Value padLast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    int64_t pad, double value) {
  auto t = rankedType(v);
  llvm::SmallVector<int64_t> pads(2 * t.getRank(), 0), shape(t.getShape());
  pads.back() = pad;
  shape.back() += pad;
  return b.create<PadOp>(loc,
                         mlir::RankedTensorType::get(shape, t.getElementType()),
                         v, b.getDenseI64ArrayAttr(pads),
                         b.getStringAttr("constant"), b.getF64FloatAttr(value));
}

// A reduction of kind `like` (a global average pool: a mean) over v's last
// axis, that axis dropped.
mlir::Value reduceLast(mlir::OpBuilder &b, mlir::Operation *like, mlir::Value v,
                       bool sum = false) {
  auto t = rankedType(v);
  auto shape = llvm::to_vector(t.getShape().drop_back());
  auto type = mlir::RankedTensorType::get(shape, t.getElementType());
  auto axes = b.getDenseI64ArrayAttr({t.getRank() - 1});
  auto keep = b.getBoolAttr(false);
  mlir::Location loc = like->getLoc();
  if (sum || llvm::isa<ReduceSumOp>(like))
    return b.create<ReduceSumOp>(loc, type, v, axes, keep);
  if (llvm::isa<ReduceMaxOp>(like))
    return b.create<ReduceMaxOp>(loc, type, v, axes, keep);
  return b.create<ReduceMeanOp>(loc, type, v, axes, keep);
}

mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    llvm::ArrayRef<int64_t> shape) {
  if (rankedType(v).getShape() == shape)
    return v;
  auto t = mlir::RankedTensorType::get(shape, rankedType(v).getElementType());
  return b.create<ReshapeOp>(loc, t, v, b.getDenseI64ArrayAttr(shape));
}

// A global average pool or a reduction over v's last k axes, whose rows
// are longer than maxRow: rows of B elements reduced first, then the A
// partial results of each row. B divides the length where a divisor
// close to maxRow does; otherwise the rows are padded to A x B (B a
// multiple of 32) with zeros: the identity of sums and means (a mean is
// then a sum over the length), and of a max whose caller knows it is at
// least 0 (`maxAtLeastZero`); other maxima are left whole (the generator
// pads with zeros only). Means of equal parts average to the mean; sums
// and maxima compose as they are. Integer means are left alone (their
// parts would truncate).
void split(mlir::Operation *op, int64_t maxRow, bool maxAtLeastZero = false) {
  mlir::Value x = op->getOperand(0);
  auto xt = rankedType(x);
  auto xs = xt.getShape();
  size_t k = xs.size() - 2;
  if (!llvm::isa<GlobalAveragePoolOp>(op)) {
    auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes").asArrayRef();
    k = axes.size();
    for (size_t i = 0; i < k; ++i)
      if (axes[i] != int64_t(xs.size() - k + i))
        return; // not the trailing axes: no row kernel either way
  }
  auto element = llvm::dyn_cast<mlir::FloatType>(xt.getElementType());
  bool mean = !llvm::isa<ReduceSumOp, ReduceMaxOp>(op);
  if (mean && !element)
    return;
  int64_t length = 1;
  for (int64_t e : xs.take_back(k))
    length *= e;
  if (length <= maxRow)
    return;
  int64_t inner = innerFactor(length, maxRow), outer = 0, pad = 0;
  if (!padded(length, maxRow)) {
    outer = length / inner;
  } else {
    outer = (length + maxRow - 1) / maxRow;
    inner = ((length + outer - 1) / outer + 31) / 32 * 32;
    pad = outer * inner - length;
  }
  if (pad && llvm::isa<ReduceMaxOp>(op) && !maxAtLeastZero)
    return;
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  auto lead = llvm::to_vector(xs.drop_back(k));
  mlir::Value v = x;
  if (pad) {
    auto row = lead;
    row.push_back(length);
    v = padLast(b, loc, reshape(b, loc, v, row), pad, 0.0);
  }
  auto parts = lead;
  parts.append({outer, inner});
  v = reshape(b, loc, v, parts);
  bool sum = mean && pad;
  v = reduceLast(b, op, reduceLast(b, op, v, sum), sum);
  if (sum)
    v = b.create<MulOp>(loc, v.getType(), v,
                        scalar(b, loc, element, 1.0 / double(length)));
  mlir::Value last = v;
  auto out = rankedType(op->getResult(0)).getShape();
  if (out != llvm::ArrayRef<int64_t>(lead))
    v = reshape(b, loc, v, out);
  op->getResult(0).replaceAllUsesWith(v);
  op->erase();
  // The outer step may itself be long: it is split again in turn.
  if (auto *outerOp = last.getDefiningOp(); llvm::isa<MulOp>(outerOp))
    last = outerOp->getOperand(0);
  split(last.getDefiningOp(), maxRow, maxAtLeastZero);
}

// Whether a row kernel (a warp's lanes sharing a row, each holding its
// share in registers) cannot hold a row of `length`: longer than 8192
// (perfmodel's kMaxRowElements: 32 lanes x 64; more is over 64 KB of
// source).
bool longRow(int64_t length) { return length > 2048; }

// softmax(x) over a last axis no row kernel holds (longRow: GPT-2's
// 50257-word vocabulary) as
// exp(x - m) / sum(exp(x - m)), its two reductions split. m is the row's
// max, taken as x0 + max(x - x0) with x0 the row's first element where the
// row is padded: that max is at least 0, so zeros pad it. Softmax does
// not change with m; m only keeps exp from overflowing.
void decompose(SoftmaxOp sm, int64_t maxRow) {
  auto t = rankedType(sm.getInput());
  int64_t length = t.getShape().back();
  if (int64_t(sm.getAxis()) != t.getRank() - 1 || !longRow(length))
    return;
  mlir::OpBuilder b(sm);
  mlir::Location loc = sm.getLoc();
  auto keptShape = llvm::to_vector(t.getShape());
  keptShape.back() = 1;
  auto kept = mlir::RankedTensorType::get(keptShape, t.getElementType());
  auto axes = b.getDenseI64ArrayAttr({t.getRank() - 1});
  mlir::Value x = sm.getInput(), first;
  if (padded(length, maxRow)) { // split will pad the max with zeros
    llvm::SmallVector<int64_t> starts(t.getRank(), 0), ends(t.getShape()),
        steps(t.getRank(), 1);
    ends.back() = 1;
    first = b.create<SliceOp>(loc, kept, x, b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(ends),
                              b.getDenseI64ArrayAttr(steps));
    x = b.create<SubOp>(loc, t, x, first);
  }
  auto max = b.create<ReduceMaxOp>(loc, kept, x, axes, b.getBoolAttr(true));
  mlir::Value m = max.getResult();
  if (first)
    m = b.create<AddOp>(loc, kept, m, first);
  mlir::Value e =
      b.create<ExpOp>(loc, t, b.create<SubOp>(loc, t, sm.getInput(), m));
  auto sum = b.create<ReduceSumOp>(loc, kept, e, axes, b.getBoolAttr(true));
  mlir::Value y = b.create<DivOp>(loc, t, e, sum.getResult());
  sm.getOutput().replaceAllUsesWith(y);
  sm.erase();
  split(max, maxRow, /*maxAtLeastZero=*/bool(first));
  split(sum, maxRow);
}

// A layer normalisation over rows no row kernel holds, whose mean and
// inverse deviation nothing reads, as its formula: d = x - mean(x),
// d / sqrt(mean(d d) + epsilon) x scale (+ B), the two means split.
void decompose(LayerNormalizationOp ln, int64_t maxRow) {
  auto t = rankedType(ln.getX());
  const int64_t axis = int64_t(ln.getAxis()), rank = t.getRank();
  int64_t length = 1;
  for (int64_t e : t.getShape().drop_front(axis))
    length *= e;
  if (!ln.getMean().use_empty() || !ln.getInvStdDev().use_empty() ||
      !longRow(length))
    return;
  mlir::OpBuilder b(ln);
  mlir::Location loc = ln.getLoc();
  auto keptShape = llvm::to_vector(t.getShape());
  for (int64_t d = axis; d < rank; ++d)
    keptShape[d] = 1;
  auto kept = mlir::RankedTensorType::get(keptShape, t.getElementType());
  llvm::SmallVector<int64_t> axesList;
  for (int64_t d = axis; d < rank; ++d)
    axesList.push_back(d);
  auto axes = b.getDenseI64ArrayAttr(axesList);
  mlir::Value x = ln.getX();
  auto mean = b.create<ReduceMeanOp>(loc, kept, x, axes, b.getBoolAttr(true));
  mlir::Value d = b.create<SubOp>(loc, t, x, mean.getResult());
  auto var = b.create<ReduceMeanOp>(loc, kept, b.create<MulOp>(loc, t, d, d),
                                    axes, b.getBoolAttr(true));
  mlir::Value eps = scalar(b, loc, t.getElementType(),
                           double(ln.getEpsilon().convertToFloat()));
  mlir::Value dev = b.create<SqrtOp>(
      loc, kept, b.create<AddOp>(loc, kept, var.getResult(), eps));
  mlir::Value y =
      b.create<MulOp>(loc, t, b.create<DivOp>(loc, t, d, dev), ln.getScale());
  if (ln.getB())
    y = b.create<AddOp>(loc, t, y, ln.getB());
  ln.getY().replaceAllUsesWith(y);
  ln.erase();
  split(mean, maxRow);
  split(var, maxRow);
}

// A mean, sum or max over an empty set (an axis of extent 0) with a
// result: the reduction's identity everywhere (0, NaN = 0 / 0, the lowest
// value), a constant. True where op was replaced.
bool emptySet(mlir::Operation *op) {
  auto xt = rankedType(op->getOperand(0));
  auto yt = rankedType(op->getResult(0));
  if (xt.getNumElements() != 0 || yt.getNumElements() == 0)
    return false;
  mlir::Type e = yt.getElementType();
  mlir::Attribute value;
  if (auto f = llvm::dyn_cast<mlir::FloatType>(e)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    llvm::APFloat v = llvm::isa<ReduceMeanOp>(op) ? llvm::APFloat::getNaN(sem)
                      : llvm::isa<ReduceMaxOp>(op)
                          ? llvm::APFloat::getInf(sem, /*Negative=*/true)
                          : llvm::APFloat::getZero(sem);
    value = mlir::DenseElementsAttr::get(yt, mlir::FloatAttr::get(e, v));
  } else if (auto i = llvm::dyn_cast<mlir::IntegerType>(e)) {
    // A bool's max over nothing is false; an integer's the lowest value.
    llvm::APInt v = llvm::isa<ReduceMaxOp>(op) && i.getWidth() > 1
                        ? llvm::APInt::getSignedMinValue(i.getWidth())
                        : llvm::APInt(i.getWidth(), 0);
    value = mlir::DenseElementsAttr::get(yt, mlir::IntegerAttr::get(e, v));
  } else {
    return false;
  }
  mlir::OpBuilder b(op);
  auto c = b.create<ConstantOp>(op->getLoc(), yt,
                                llvm::cast<mlir::ElementsAttr>(value));
  op->getResult(0).replaceAllUsesWith(c.getResult());
  op->erase();
  return true;
}

// A mean, sum or max over axes that are not the trailing ones (an Einsum's
// summed letter, ReduceSum over axis 0): the input transposed so that they
// are, the reduction over those, and (keepdims) a reshape to the result's
// shape. The generator's row kernels reduce trailing axes only; the
// transpose usually fuses into the reduction's kernel as its index map.
// Returns the reduction that stands in for op (op itself where it already
// reduces trailing axes).
mlir::Operation *trailing(mlir::Operation *op) {
  mlir::Value x = op->getOperand(0);
  auto xt = rankedType(x);
  const int64_t rank = xt.getRank();
  auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes").asArrayRef();
  const int64_t k = int64_t(axes.size());
  bool last = true;
  for (int64_t i = 0; i < k; ++i)
    last = last && axes[size_t(i)] == rank - k + i;
  if (last)
    return op;
  llvm::SmallVector<int64_t> perm, shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      perm.push_back(d);
  perm.append(axes.begin(), axes.end());
  for (int64_t d : perm)
    shape.push_back(xt.getDimSize(d));
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  mlir::Value moved = b.create<TransposeOp>(
      loc, mlir::RankedTensorType::get(shape, xt.getElementType()), x,
      b.getDenseI64ArrayAttr(perm));
  llvm::SmallVector<int64_t> rest, kept(shape.begin(), shape.end() - k);
  for (int64_t i = 0; i < k; ++i)
    rest.push_back(rank - k + i);
  auto yt = rankedType(op->getResult(0));
  mlir::OperationState state(loc, op->getName());
  state.addOperands(moved);
  state.addAttribute("axes", b.getDenseI64ArrayAttr(rest));
  state.addAttribute("keepdims", b.getBoolAttr(false));
  state.addTypes(mlir::RankedTensorType::get(kept, yt.getElementType()));
  mlir::Operation *reduced = b.create(state);
  mlir::Value y = reduced->getResult(0);
  if (y.getType() != yt)
    y = b.create<ReshapeOp>(loc, yt, y, b.getDenseI64ArrayAttr(yt.getShape()));
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return reduced;
}

struct SplitReductionsPass : impl::SplitReductionsBase<SplitReductionsPass> {
  using SplitReductionsBase::SplitReductionsBase;

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> ops;
    getOperation().walk([&](mlir::Operation *op) {
      if (llvm::isa<GlobalAveragePoolOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp,
                    SoftmaxOp, LayerNormalizationOp>(op))
        ops.push_back(op);
    });
    for (mlir::Operation *op : ops)
      if (auto sm = llvm::dyn_cast<SoftmaxOp>(op))
        decompose(sm, maxRow);
      else if (auto ln = llvm::dyn_cast<LayerNormalizationOp>(op))
        decompose(ln, maxRow);
      else if (llvm::isa<GlobalAveragePoolOp>(op))
        split(op, maxRow);
      else if (!emptySet(op))
        split(trailing(op), maxRow);
  }
};

} // namespace
} // namespace cuts
