//===- SimplifyDataMovement.cpp - data movement that moves nothing --------===//
//
// Exporters spell plain reshapes and broadcasts in roundabout ways. The
// PyTorch dynamo exporter builds BERT's attention mask as
// and(gather_nd(cast(mask), C), T), where the constant indices C take every
// element of the mask in order and T is all true: a reshape and a broadcast
// that would otherwise need a GatherND kernel and a logical kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <array>
#include <deque>
#include <map>
#include <numeric>

namespace cuts {
#define GEN_PASS_DEF_SIMPLIFYDATAMOVEMENT
#include "compiler/passes/Passes.h.inc"

namespace {

int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

// The value of a boolean constant whose elements are all equal; nullopt if v
// is no such constant (or has no elements).
std::optional<bool> uniformBool(mlir::Value v) {
  mlir::Attribute attr;
  if (!mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  auto elems = llvm::dyn_cast<mlir::ElementsAttr>(attr);
  if (!elems || !elems.getElementType().isInteger(1))
    return std::nullopt;
  int64_t n = elems.getNumElements();
  if (n == 0)
    return std::nullopt;
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(attr);
      dense && dense.isSplat())
    return dense.getSplatValue<bool>();
  if (n > kMaxFoldElements)
    return std::nullopt;
  auto t = toHost(attr);
  if (!t)
    return std::nullopt;
  bool first = t->i[0] != 0;
  for (int64_t k = 1; k < n; ++k)
    if ((t->i[k] != 0) != first)
      return std::nullopt;
  return first;
}

// x broadcast to type t (x itself when it already has t). An expand of an
// expand takes the inner input: broadcasting twice is broadcasting once to
// the final shape.
mlir::Value broadcastTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                        mlir::RankedTensorType t) {
  if (x.getType() == t)
    return x;
  if (auto inner = x.getDefiningOp<ExpandOp>())
    x = inner.getInput();
  return b.create<ExpandOp>(loc, t, x, b.getDenseI64ArrayAttr(t.getShape()));
}

// and(x, T) and or(x, F), in either operand order, are x broadcast to the
// result; and(x, F) and or(x, T) are a constant. `neutral` is the value that
// leaves the other operand as it is (true for and, false for or).
bool simplifyLogic(mlir::Operation *op, bool neutral) {
  auto rt = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  for (unsigned k = 0; k < 2; ++k) {
    std::optional<bool> c = uniformBool(op->getOperand(1 - k));
    if (!c)
      continue;
    mlir::OpBuilder b(op);
    mlir::Value repl;
    if (*c == neutral) {
      repl = broadcastTo(b, op->getLoc(), op->getOperand(k), rt);
    } else {
      auto value = mlir::DenseElementsAttr::get(rt, llvm::ArrayRef<bool>(*c));
      repl = b.create<ConstantOp>(op->getLoc(), rt, value);
    }
    op->getResult(0).replaceAllUsesWith(repl);
    op->erase();
    return true;
  }
  return false;
}

// The constant c such that output element k of gather_nd is data element
// k + c (in row-major order) for every k; nullopt if there is none, the
// indices are not constant, or one is out of range.
std::optional<int64_t> gatherNDRunStart(GatherNDOp op) {
  mlir::Attribute attr;
  if (!mlir::matchPattern(op.getIndices(), mlir::m_Constant(&attr)))
    return std::nullopt;
  llvm::ArrayRef<int64_t> dataShape = op.getData().getType().getShape();
  llvm::ArrayRef<int64_t> idxShape = op.getIndices().getType().getShape();
  int64_t b = op.getBatchDims(), last = idxShape.back();
  int64_t n = op.getType().getNumElements();
  // Elements of one gathered slice, index tuples per batch entry, and data
  // elements per batch entry.
  int64_t inner = product(dataShape.drop_front(b + last));
  int64_t perBatch = product(idxShape.drop_front(b).drop_back());
  int64_t batchSize = product(dataShape.drop_front(b));
  if (n == 0 || inner == 0 || perBatch == 0)
    return std::nullopt;
  int64_t tuples = n / inner;
  if (tuples > kMaxFoldElements)
    return std::nullopt;
  auto idx = toHost(attr);
  if (!idx || idx->numel() != tuples * last)
    return std::nullopt;
  auto strides = stridesOf(dataShape);
  std::optional<int64_t> start;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / perBatch) * batchSize;
    for (int64_t j = 0; j < last; ++j) {
      int64_t v = idx->i[t * last + j], dim = dataShape[b + j];
      if (v < 0)
        v += dim; // ONNX: negative indices count from the end
      if (v < 0 || v >= dim)
        return std::nullopt;
      off += v * strides[b + j];
    }
    int64_t c = off - t * inner;
    if (start && c != *start)
      return std::nullopt;
    start = c;
  }
  return start;
}

// gather_nd(data, C) that reads data[c, c + n) in order becomes a slice of
// data (when that run is one; none when it is all of data) and a reshape to
// the result shape.
bool simplifyGatherND(GatherNDOp op) {
  std::optional<int64_t> c = gatherNDRunStart(op);
  if (!c)
    return false;
  auto dataType = op.getData().getType();
  llvm::ArrayRef<int64_t> shape = dataType.getShape();
  int64_t r = dataType.getRank(), n = op.getType().getNumElements();
  // A run of whole sub-tensors along the outermost axis a where it is one:
  // c and n are multiples of the elements below a, and the run does not wrap
  // around axis a.
  llvm::SmallVector<int64_t> starts, ends;
  for (int64_t a = 0; a < r && starts.empty(); ++a) {
    int64_t below = product(shape.drop_front(a + 1));
    if (*c % below || n % below)
      continue;
    int64_t s = (*c / below) % shape[a], len = n / below;
    if (s + len > shape[a])
      continue;
    int64_t above = *c / below / shape[a];
    for (int64_t d = a - 1; d >= 0; --d) {
      starts.insert(starts.begin(), above % shape[d]);
      above /= shape[d];
    }
    starts.push_back(s);
    starts.append(r - a - 1, 0);
    ends = starts;
    for (int64_t d = 0; d < r; ++d)
      ends[d] = d < a ? starts[d] + 1 : d == a ? s + len : shape[d];
  }
  if (starts.empty())
    return false;
  mlir::OpBuilder b(op);
  mlir::Value v = op.getData();
  llvm::SmallVector<int64_t> sliceShape;
  for (int64_t d = 0; d < r; ++d)
    sliceShape.push_back(ends[d] - starts[d]);
  if (llvm::ArrayRef<int64_t>(sliceShape) != shape) {
    auto t = mlir::RankedTensorType::get(sliceShape, dataType.getElementType());
    v = b.create<SliceOp>(
        op.getLoc(), t, v, b.getDenseI64ArrayAttr(starts),
        b.getDenseI64ArrayAttr(ends),
        b.getDenseI64ArrayAttr(llvm::SmallVector<int64_t>(r, 1)));
  }
  if (v.getType() != op.getType())
    v = b.create<ReshapeOp>(op.getLoc(), op.getType(), v,
                            b.getDenseI64ArrayAttr(op.getType().getShape()));
  op.getOutput().replaceAllUsesWith(v);
  op->erase();
  return true;
}

/// split(x) with N results: N slices of x along the axis, one per result
/// (kernels take one result each; a slice of a kernel's input is read in
/// place by the elementwise kernel that uses it).
bool splitToSlices(SplitOp op) {
  auto type = llvm::cast<mlir::RankedTensorType>(op.getInput().getType());
  int64_t r = type.getRank(), axis = op.getAxis();
  mlir::OpBuilder b(op);
  int64_t begin = 0;
  for (auto [i, extent] : llvm::enumerate(op.getSplit())) {
    llvm::SmallVector<int64_t> starts(r, 0), ends(type.getShape());
    starts[axis] = begin, ends[axis] = begin + extent;
    begin += extent;
    mlir::Value result = op.getResult(i);
    auto slice = b.create<SliceOp>(
        op.getLoc(), result.getType(), op.getInput(),
        b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
        b.getDenseI64ArrayAttr(llvm::SmallVector<int64_t>(r, 1)));
    result.replaceAllUsesWith(slice.getResult());
  }
  op->erase();
  return true;
}

mlir::Value mergeTransposeAxes(TransposeOp op);

// The fewest swaps of two adjacent blocks of axes ([A B C D] -> [A C B D]:
// four blocks, a transpose of rank 4 at most once merged) that order the
// axes as `perm`, by breadth-first search over the orders (rank <= 8), or
// one axis moved into place a step (above). Each step is {i, j, k}: the
// blocks [i, j) and [j, k) swap.
std::vector<std::array<size_t, 3>> blockSwaps(llvm::ArrayRef<int64_t> perm) {
  const size_t r = perm.size();
  std::vector<int64_t> start(r), goal(perm.begin(), perm.end());
  std::iota(start.begin(), start.end(), 0);
  auto swapped = [](const std::vector<int64_t> &v, size_t i, size_t j,
                    size_t k) {
    std::vector<int64_t> w(v.begin(), v.begin() + long(i));
    w.insert(w.end(), v.begin() + long(j), v.begin() + long(k));
    w.insert(w.end(), v.begin() + long(i), v.begin() + long(j));
    w.insert(w.end(), v.begin() + long(k), v.end());
    return w;
  };
  std::vector<std::array<size_t, 3>> plan;
  if (r > 8) { // one axis into place a step
    std::vector<int64_t> cur = start;
    for (size_t i = 0; i < r; ++i) {
      size_t j = size_t(std::find(cur.begin(), cur.end(), goal[i]) - cur.begin());
      if (j != i) {
        plan.push_back({i, j, j + 1});
        cur = swapped(cur, i, j, j + 1);
      }
    }
    return plan;
  }
  std::map<std::vector<int64_t>,
           std::pair<std::vector<int64_t>, std::array<size_t, 3>>>
      from;
  std::deque<std::vector<int64_t>> queue{start};
  from[start] = {};
  while (!queue.empty() && !from.count(goal)) {
    std::vector<int64_t> v = queue.front();
    queue.pop_front();
    for (size_t i = 0; i < r; ++i)
      for (size_t j = i + 1; j < r; ++j)
        for (size_t k = j + 1; k <= r; ++k) {
          std::vector<int64_t> w = swapped(v, i, j, k);
          if (from.emplace(w, std::make_pair(v, std::array<size_t, 3>{i, j, k}))
                  .second)
            queue.push_back(w);
        }
  }
  for (std::vector<int64_t> v = goal; v != start; v = from[v].first)
    plan.insert(plan.begin(), from[v].second);
  return plan;
}

// x permuted by `perm` as a chain of block swaps (blockSwaps), where its
// axes do not merge into 4: a pass over memory per step, each a transpose a
// 4-D kernel can do.
mlir::Value swapBlocks(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       llvm::ArrayRef<int64_t> perm) {
  for (const std::array<size_t, 3> &s : blockSwaps(perm)) {
    const size_t r = perm.size();
    llvm::SmallVector<int64_t> step;
    for (size_t a = 0; a < s[0]; ++a)
      step.push_back(int64_t(a));
    for (size_t a = s[1]; a < s[2]; ++a)
      step.push_back(int64_t(a));
    for (size_t a = s[0]; a < s[1]; ++a)
      step.push_back(int64_t(a));
    for (size_t a = s[2]; a < r; ++a)
      step.push_back(int64_t(a));
    auto type = llvm::cast<mlir::RankedTensorType>(x.getType());
    llvm::SmallVector<int64_t> shape;
    for (int64_t a : step)
      shape.push_back(type.getDimSize(a));
    auto t = b.create<TransposeOp>(
        loc, mlir::RankedTensorType::get(shape, type.getElementType()), x,
        b.getDenseI64ArrayAttr(step));
    mlir::Value merged = mergeTransposeAxes(t); // rank 4 at most now
    x = merged ? merged : t.getResult();
  }
  return x;
}

// transpose(x) of rank above 4 with its axes merged: axes of extent 1
// dropped, and runs of input axes that stay adjacent and in order in the
// output each one axis (more than 4 left: moveAxes) (ShuffleNet's channel shuffle [N, 2, C/2, H,
// W] -> [N, C/2, 2, H, W] is [2, C/2, HW] -> [C/2, 2, HW]). The reshapes
// around the transpose are views; kernels are generated up to rank 4.
mlir::Value mergeTransposeAxes(TransposeOp op) {
  auto type = llvm::cast<mlir::RankedTensorType>(op.getData().getType());
  llvm::ArrayRef<int64_t> shape = type.getShape(), perm = op.getPerm();
  if (shape.size() <= 4)
    return nullptr;
  // Kept input axes (extent > 1) and each one's place among them.
  llvm::SmallVector<int64_t> place(shape.size(), -1);
  int64_t kept = 0;
  for (size_t a = 0; a < shape.size(); ++a)
    if (shape[a] != 1)
      place[a] = kept++;
  // Groups in output order: runs whose places rise by one.
  llvm::SmallVector<llvm::SmallVector<int64_t>> groups;
  for (int64_t a : perm) {
    if (place[size_t(a)] < 0)
      continue;
    if (groups.empty() ||
        place[size_t(groups.back().back())] + 1 != place[size_t(a)])
      groups.emplace_back();
    groups.back().push_back(a);
  }
  if (groups.empty())
    return nullptr;
  // The merged input, its axes in input order; the merged permutation.
  llvm::SmallVector<size_t> byInput(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    byInput[g] = g;
  llvm::sort(byInput, [&](size_t x, size_t y) {
    return groups[x].front() < groups[y].front();
  });
  llvm::SmallVector<int64_t> inShape, mergedPerm(groups.size());
  for (size_t i = 0; i < byInput.size(); ++i) {
    int64_t n = 1;
    for (int64_t a : groups[byInput[i]])
      n *= shape[size_t(a)];
    inShape.push_back(n);
    mergedPerm[byInput[i]] = int64_t(i);
  }
  mlir::OpBuilder b(op);
  mlir::Location loc = op.getLoc();
  mlir::Type element = type.getElementType();
  mlir::Value x = op.getData();
  if (llvm::ArrayRef<int64_t>(inShape) != shape) // merged: a view
    x = b.create<ReshapeOp>(loc, mlir::RankedTensorType::get(inShape, element),
                            x, b.getDenseI64ArrayAttr(inShape));
  llvm::SmallVector<int64_t> outShape;
  for (int64_t p : mergedPerm)
    outShape.push_back(inShape[size_t(p)]);
  if (groups.size() <= 4) {
    bool identity = true;
    for (size_t i = 0; i < mergedPerm.size(); ++i)
      identity = identity && mergedPerm[i] == int64_t(i);
    if (!identity)
      x = b.create<TransposeOp>(loc,
                                mlir::RankedTensorType::get(outShape, element),
                                x, b.getDenseI64ArrayAttr(mergedPerm));
  } else {
    x = swapBlocks(b, loc, x, mergedPerm);
  }
  auto result = llvm::cast<mlir::RankedTensorType>(op.getType());
  mlir::Value y = x.getType() == result
                      ? x
                      : b.create<ReshapeOp>(
                            loc, result, x,
                            b.getDenseI64ArrayAttr(result.getShape()));
  op.getResult().replaceAllUsesWith(y);
  op->erase();
  return y;
}

// An elementwise op of rank above 4 on operands merged into at most 4 axes:
// axes of extent 1 dropped, and neighbours merged where every operand
// (right-aligned) has both whole or both broadcast. Reshapes around it are
// views, so the kernel is a rank-4 one.
mlir::Value mergeElementwiseAxes(mlir::Operation *op) {
  auto result = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  llvm::ArrayRef<int64_t> out = result.getShape();
  const size_t r = out.size();
  if (r <= 4 || op->getNumResults() != 1)
    return nullptr;
  // full[k][d]: operand k spans result axis d (else it broadcasts there).
  std::vector<std::vector<bool>> full;
  for (mlir::Value v : op->getOperands()) {
    auto shape = llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
    std::vector<bool> f(r, false);
    for (size_t i = 0; i < shape.size(); ++i)
      f[r - shape.size() + i] = shape[i] != 1;
    full.push_back(f);
  }
  // Groups of result axes (extent-1 axes dropped).
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == 1)
      continue;
    bool joins = !groups.empty();
    for (const auto &f : full)
      joins = joins && f[d] == f[groups.back().back()];
    if (!joins)
      groups.emplace_back();
    groups.back().push_back(d);
  }
  if (groups.size() > 4)
    return nullptr;
  mlir::OpBuilder b(op);
  llvm::SmallVector<int64_t> mergedOut;
  for (const auto &g : groups) {
    int64_t n = 1;
    for (size_t d : g)
      n *= out[d];
    mergedOut.push_back(n);
  }
  mlir::OperationState state(op->getLoc(), op->getName());
  state.addAttributes(op->getAttrs());
  for (size_t k = 0; k < op->getNumOperands(); ++k) {
    mlir::Value v = op->getOperand(k);
    auto type = llvm::cast<mlir::RankedTensorType>(v.getType());
    llvm::SmallVector<int64_t> shape;
    for (size_t g = 0; g < groups.size(); ++g)
      shape.push_back(full[k][groups[g].front()] ? mergedOut[g] : 1);
    if (type.getRank() == 0) // scalars broadcast as they are
      state.addOperands(v);
    else
      state.addOperands(mlir::Value(b.create<ReshapeOp>(
          op->getLoc(),
          mlir::RankedTensorType::get(shape, type.getElementType()), v,
          b.getDenseI64ArrayAttr(shape))));
  }
  state.addTypes(mlir::RankedTensorType::get(mergedOut, result.getElementType()));
  mlir::Operation *merged = b.create(state);
  mlir::Value y = b.create<ReshapeOp>(op->getLoc(), result,
                                      merged->getResult(0),
                                      b.getDenseI64ArrayAttr(out));
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return y;
}

// A gather of rank above 4 with extent-1 axes: the indices' and the data's
// (but the gathered axis) dropped by reshapes, the result reshaped back
// (DistilBERT's and T5's mask [16, 1] gathered by [1, 1, 1, 16]).
mlir::Value squeezeGather(GatherOp op) {
  auto result = llvm::cast<mlir::RankedTensorType>(op.getType());
  if (result.getRank() <= 4)
    return nullptr;
  auto data = llvm::cast<mlir::RankedTensorType>(op.getData().getType());
  auto idx = llvm::cast<mlir::RankedTensorType>(op.getIndices().getType());
  llvm::SmallVector<int64_t> dataShape, idxShape;
  int64_t axis = op.getAxis(), newAxis = 0;
  for (int64_t d = 0; d < data.getRank(); ++d) {
    if (d == axis)
      newAxis = int64_t(dataShape.size());
    if (d == axis || data.getDimSize(d) != 1)
      dataShape.push_back(data.getDimSize(d));
  }
  for (int64_t e : idx.getShape())
    if (e != 1)
      idxShape.push_back(e);
  if (int64_t(dataShape.size() + idxShape.size()) - 1 > 4 ||
      (dataShape.size() == size_t(data.getRank()) &&
       idxShape.size() == size_t(idx.getRank())))
    return nullptr;
  mlir::OpBuilder b(op);
  mlir::Location loc = op.getLoc();
  auto reshape = [&](mlir::Value v, llvm::ArrayRef<int64_t> shape) {
    auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
    return b.create<ReshapeOp>(loc,
                               mlir::RankedTensorType::get(shape,
                                                           t.getElementType()),
                               v, b.getDenseI64ArrayAttr(shape))
        .getResult();
  };
  llvm::SmallVector<int64_t> gathered(dataShape.begin(),
                                      dataShape.begin() + newAxis);
  gathered.append(idxShape.begin(), idxShape.end());
  gathered.append(dataShape.begin() + newAxis + 1, dataShape.end());
  auto g = b.create<GatherOp>(
      loc, mlir::RankedTensorType::get(gathered, result.getElementType()),
      reshape(op.getData(), dataShape), reshape(op.getIndices(), idxShape),
      b.getI64IntegerAttr(newAxis));
  mlir::Value y = reshape(g.getResult(), result.getShape());
  op.getResult().replaceAllUsesWith(y);
  op->erase();
  return y;
}

struct SimplifyDataMovementPass
    : impl::SimplifyDataMovementBase<SimplifyDataMovementPass> {
  void runOnOperation() override {
    // In program order, so that a rewritten op's users see its replacement.
    llvm::SmallVector<mlir::Operation *> ops;
    getOperation().walk([&](mlir::Operation *op) {
      if (llvm::isa<GatherNDOp, AndOp, OrOp, SplitOp, TransposeOp, GatherOp>(
              op) ||
          op->hasTrait<OpTrait::Elementwise>())
        ops.push_back(op);
    });
    for (mlir::Operation *op : ops) {
      if (auto g = llvm::dyn_cast<GatherNDOp>(op))
        (void)simplifyGatherND(g);
      else if (auto sp = llvm::dyn_cast<SplitOp>(op))
        (void)splitToSlices(sp);
      else if (auto t = llvm::dyn_cast<TransposeOp>(op))
        (void)mergeTransposeAxes(t);
      else if (auto g = llvm::dyn_cast<GatherOp>(op))
        (void)squeezeGather(g);
      else if (mergeElementwiseAxes(op)) // rank above 4: op replaced
        continue;
      else if (llvm::isa<AndOp, OrOp>(op))
        (void)simplifyLogic(op, /*neutral=*/llvm::isa<AndOp>(op));
    }
  }
};
} // namespace
} // namespace cuts
