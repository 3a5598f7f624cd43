//===- TensorParallel.cpp - Megatron-style splits by sharding propagation -===//
//
// A product with a constant weight is split by columns across the ranks;
// the split is followed forward, op by op, through what keeps each rank's
// part independent (elementwise ops, reshapes that split or merge the
// split axis as the major part, transposes, products batched over it,
// softmax along another axis) until a product contracts over it: that one
// takes the weight's matching rows, and its rank partial sums are added
// across the ranks. Products that share their input (Q, K, V) start
// together. Where anything else reads a split value, nothing is split:
// the rewrite never changes what the graph computes.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace cuts {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// How a value lies across the ranks: whole on each (R), split along
/// `axis` (S), or a rank's partial sum (P). A split axis is `segments`
/// equal segments (a fused Q|K|V product's three), each split in equal
/// blocks: rank r holds block r of every segment.
struct State {
  enum Kind { R, S, P } kind = R;
  int64_t axis = -1;
  int64_t segments = 1;
};

/// How a constant operand of a region op is cut for a rank: block r of
/// each of `segments` along `axis`; or, for the bias or residual of a row
/// product, kept by rank 0 only (the others multiply without it).
struct Cut {
  int64_t axis = -1;
  int64_t segments = 1;
  bool rankZeroOnly = false;
};

/// A split: the ops that compute per rank (in program order), the state of
/// each of their results, their constant operands' cuts, and the row
/// products whose partial sums are added across ranks.
struct Region {
  llvm::SetVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Value, State> state;
  llvm::DenseMap<std::pair<mlir::Operation *, unsigned>, Cut> cuts;
  llvm::SmallVector<mlir::Operation *> reduces;

  State of(mlir::Value v) const {
    auto it = state.find(v);
    return it == state.end() ? State{} : it->second;
  }
};

bool isProduct(mlir::Operation *op) {
  return llvm::isa<MatMulOp, MatMulAddOp>(op);
}

bool transB(mlir::Operation *op) {
  if (auto mm = llvm::dyn_cast<MatMulOp>(op))
    return mm.getTransB();
  return llvm::cast<MatMulAddOp>(op).getTransB();
}

/// A product's 2-D constant weight, or null.
mlir::Value constantWeight(mlir::Operation *op) {
  if (!isProduct(op))
    return nullptr;
  mlir::Value b = op->getOperand(1);
  mlir::Attribute a;
  if (rankedType(b).getRank() != 2 ||
      !mlir::matchPattern(b, mlir::m_Constant(&a)))
    return nullptr;
  return b;
}

/// Where a split along `axis` of `from` lands in `to` (a reshape): the
/// major part of an axis that splits from[axis] or merges it with the axes
/// after it (majorAxis); nullopt if none.
std::optional<int64_t> reshapedAxis(llvm::ArrayRef<int64_t> from,
                                    llvm::ArrayRef<int64_t> to, int64_t axis,
                                    int64_t ranks) {
  std::optional<int64_t> b = majorAxis(from, to, axis, ranks);
  if (!b || to[*b] <= 1 ||
      (from[axis] % to[*b] != 0 && to[*b] % from[axis] != 0))
    return std::nullopt;
  return b;
}

/// The dimension of `v` (right-aligned to `rank` axes) along `axis`.
int64_t alignedDim(mlir::Value v, int64_t rank, int64_t axis) {
  auto t = rankedType(v);
  const int64_t k = axis - (rank - t.getRank());
  return k < 0 ? 1 : t.getDimSize(k);
}

bool isConstant(mlir::Value v) {
  mlir::Attribute a;
  return mlir::matchPattern(v, mlir::m_Constant(&a));
}

class Analysis {
public:
  Analysis(int64_t ranks) : ranks(ranks) {}

  /// The region of the products `seeds` (one input, constant weights),
  /// or nullopt where the split cannot be closed.
  std::optional<Region> grow(llvm::ArrayRef<mlir::Operation *> seeds);

private:
  int64_t ranks;
  bool seed(Region &r, mlir::Operation *op);
  bool visit(Region &r, mlir::Operation *op);
  bool product(Region &r, mlir::Operation *op);
  bool elementwise(Region &r, mlir::Operation *op);
};

/// The segments of a product's columns its users read apart: where every
/// user slices the last axis into equal whole segments (a fused Q|K|V),
/// their count; else 1.
int64_t segmentsOf(mlir::Operation *op) {
  auto y = rankedType(op->getResult(0));
  const int64_t last = y.getRank() - 1, m = y.getDimSize(last);
  int64_t length = 0;
  for (mlir::Operation *user : op->getUsers()) {
    auto s = llvm::dyn_cast<SliceOp>(user);
    if (!s)
      return 1;
    for (int64_t a = 0; a < last; ++a)
      if (s.getStarts()[a] != 0 || s.getEnds()[a] != y.getDimSize(a))
        return 1;
    const int64_t len = s.getEnds()[last] - s.getStarts()[last];
    if (s.getSteps()[last] != 1 || len <= 0 || (length && len != length) ||
        s.getStarts()[last] % len != 0)
      return 1;
    length = len;
  }
  return length && m % length == 0 ? m / length : 1;
}

bool Analysis::seed(Region &r, mlir::Operation *op) {
  auto w = rankedType(op->getOperand(1));
  const int64_t col = transB(op) ? 0 : 1;
  const int64_t m = w.getDimSize(col);
  auto y = rankedType(op->getResult(0));
  const int64_t segments = segmentsOf(op);
  if ((m / segments) % ranks != 0)
    return false;
  r.cuts[{op, 1}] = Cut{col, segments};
  if (llvm::isa<MatMulAddOp>(op)) {
    mlir::Value c = op->getOperand(2);
    const int64_t last = y.getRank() - 1;
    if (alignedDim(c, y.getRank(), last) == m) {
      if (!isConstant(c) || rankedType(c).getRank() == 0)
        return false;
      r.cuts[{op, 2}] = Cut{rankedType(c).getRank() - 1, segments};
    } else if (alignedDim(c, y.getRank(), last) != 1) {
      return false;
    }
    for (int64_t a = 0; a < last; ++a) // C must not carry rows of its own
      if (alignedDim(c, y.getRank(), a) != 1 && !isConstant(c))
        return false;
  }
  r.ops.insert(op);
  r.state[op->getResult(0)] = State{State::S, y.getRank() - 1, segments};
  return true;
}

/// A product reading a split value: contracting over it (a row split of
/// the weight, then the ranks' sum), or batched along it.
bool Analysis::product(Region &r, mlir::Operation *op) {
  State a = r.of(op->getOperand(0)), b = r.of(op->getOperand(1));
  const int64_t rank = rankedType(op->getResult(0)).getRank();
  const int64_t ar = rankedType(op->getOperand(0)).getRank();
  if (constantWeight(op) && a.kind == State::S && a.axis == ar - 1) {
    r.cuts[{op, 1}] = Cut{transB(op) ? 1 : 0, a.segments};
    if (llvm::isa<MatMulAddOp>(op)) {
      mlir::Operation *c = op->getOperand(2).getDefiningOp();
      if (r.of(op->getOperand(2)).kind != State::R ||
          (c && llvm::is_contained(r.reduces, c)))
        return false;
      r.cuts[{op, 2}] = Cut{-1, 1, true};
    }
    // Its readers see the ranks' sum: whole.
    r.ops.insert(op);
    r.reduces.push_back(op);
    return true;
  }
  if (!llvm::isa<MatMulOp>(op) || transB(op))
    return false;
  // Batched over a leading axis both operands split alike, or over the
  // rows of A with B whole.
  const int64_t br = rankedType(op->getOperand(1)).getRank();
  if (a.kind == State::S && b.kind == State::S && a.axis < ar - 2 &&
      a.axis - ar == b.axis - br && a.segments == 1 && b.segments == 1) {
    r.ops.insert(op);
    r.state[op->getResult(0)] = State{State::S, a.axis - ar + rank};
    return true;
  }
  if (a.kind == State::S && a.axis == ar - 2 && b.kind == State::R &&
      a.segments == 1) {
    r.ops.insert(op);
    r.state[op->getResult(0)] = State{State::S, rank - 2};
    return true;
  }
  return false;
}

/// An elementwise op: every split operand split alike; whole operands
/// broadcast along the split axis, or constants cut with it.
bool Analysis::elementwise(Region &r, mlir::Operation *op) {
  const int64_t rank = rankedType(op->getResult(0)).getRank();
  std::optional<int64_t> axis;
  int64_t segments = 1;
  for (mlir::Value v : op->getOperands()) {
    State s = r.of(v);
    if (s.kind == State::P)
      return false;
    if (s.kind != State::S)
      continue;
    const int64_t a = s.axis + rank - rankedType(v).getRank();
    if ((axis && (*axis != a || segments != s.segments)))
      return false;
    axis = a, segments = s.segments;
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    mlir::Value v = op->getOperand(i);
    if (r.of(v).kind == State::S)
      continue;
    const int64_t d = alignedDim(v, rank, *axis);
    if (d == 1)
      continue;
    if (!isConstant(v))
      return false;
    r.cuts[{op, i}] = Cut{*axis - (rank - rankedType(v).getRank()), segments};
  }
  r.ops.insert(op);
  r.state[op->getResult(0)] = State{State::S, *axis, segments};
  return true;
}

bool Analysis::visit(Region &r, mlir::Operation *op) {
  if (isProduct(op))
    return product(r, op);
  if (llvm::isa<mlir::func::ReturnOp>(op) || op->getNumResults() != 1)
    return false;
  State in = r.of(op->getOperand(0));
  if (op->hasTrait<OpTrait::Elementwise>())
    return elementwise(r, op);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    if (r.of(op->getOperand(i)).kind != State::R)
      return false;
  if (in.kind != State::S)
    return false;
  auto from = rankedType(op->getOperand(0)), to = rankedType(op->getResult(0));
  std::optional<int64_t> axis;
  int64_t segments = in.segments;
  if (auto s = llvm::dyn_cast<SliceOp>(op)) {
    // Whole segments of the split axis; every other axis whole.
    const int64_t length = from.getDimSize(in.axis) / in.segments;
    bool whole = true;
    for (int64_t a = 0; a < from.getRank(); ++a)
      if (a != in.axis)
        whole &= s.getStarts()[a] == 0 && s.getEnds()[a] == from.getDimSize(a);
    const int64_t start = s.getStarts()[in.axis], end = s.getEnds()[in.axis];
    if (whole && s.getSteps()[in.axis] == 1 && start % length == 0 &&
        end % length == 0 && end > start) {
      axis = in.axis;
      segments = (end - start) / length;
    }
  } else if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
    for (int64_t k = 0; k < int64_t(t.getPerm().size()); ++k)
      if (t.getPerm()[k] == in.axis)
        axis = k;
  } else if (llvm::isa<ReshapeOp>(op) && in.segments == 1) {
    axis = reshapedAxis(from.getShape(), to.getShape(), in.axis, ranks);
  } else if (auto s = llvm::dyn_cast<SoftmaxOp>(op)) {
    const int64_t given = int64_t(s.getAxis());
    const int64_t along = given < 0 ? given + from.getRank() : given;
    if (along != in.axis)
      axis = in.axis;
  }
  if (!axis)
    return false;
  r.ops.insert(op);
  r.state[op->getResult(0)] = State{State::S, *axis, segments};
  return true;
}

std::optional<Region> Analysis::grow(llvm::ArrayRef<mlir::Operation *> seeds) {
  Region r;
  for (mlir::Operation *op : seeds)
    if (!seed(r, op))
      return std::nullopt;
  // In program order, so that an op's operands are settled before it.
  mlir::Block *block = seeds.front()->getBlock();
  for (mlir::Operation &op : *block) {
    if (r.ops.contains(&op))
      continue;
    bool reads = false;
    for (mlir::Value v : op.getOperands())
      reads |= r.of(v).kind != State::R;
    if (!reads)
      continue;
    // A rank's copy would read its own partial sum, not the total.
    for (mlir::Value v : op.getOperands())
      if (mlir::Operation *def = v.getDefiningOp())
        if (llvm::is_contained(r.reduces, def))
          return std::nullopt;
    if (!visit(r, &op))
      return std::nullopt;
  }
  if (r.reduces.empty())
    return std::nullopt;
  return r;
}

/// Rank `rank`'s block of each segment of constant `v` along cut.axis.
mlir::Value cutConstant(mlir::OpBuilder &b, mlir::Value v, Cut cut,
                        int64_t ranks, int64_t rank) {
  mlir::Attribute attr;
  if (!mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return nullptr;
  auto from = rankedType(v);
  auto host = toHost(attr);
  if (!host)
    return nullptr;
  llvm::SmallVector<int64_t> shape(from.getShape());
  shape[size_t(cut.axis)] /= ranks;
  HostTensor out(mlir::RankedTensorType::get(shape, from.getElementType()));
  {
    auto inStrides = stridesOf(from.getShape());
    auto outStrides = stridesOf(shape);
    // Rank r's block of each segment: element j of segment s's block
    // comes from s * segment + r * block + j.
    const int64_t block = shape[size_t(cut.axis)] / cut.segments;
    const int64_t segment = from.getDimSize(cut.axis) / cut.segments;
    for (int64_t k = 0; k < out.numel(); ++k) {
      int64_t src = 0, rest = k;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t i = rest / outStrides[d];
        rest %= outStrides[d];
        if (int64_t(d) == cut.axis)
          i = i / block * segment + rank * block + i % block;
        src += i * inStrides[d];
      }
      if (host->isFloat())
        out.set(k, host->getF(src));
      else
        out.setI(k, host->getI(src));
    }
  }
  return b.create<ConstantOp>(v.getLoc(), out.type,
                              toAttr(out, "tensor_parallel_weight"));
}

/// Rank `rank`'s copy of the region's ops, before `at`: cut constants,
/// split shapes. `partial` gets each reduce's partial sum.
bool cloneForRank(const Region &r, int64_t ranks, int64_t rank,
                  mlir::OpBuilder &b, mlir::IRMapping &map,
                  llvm::DenseMap<mlir::Operation *, mlir::Value> &partial) {
  for (mlir::Operation *op : r.ops) {
    // Before the original, where every operand from outside is defined;
    // the cut constants first, so that they dominate the copy.
    b.setInsertionPoint(op);
    llvm::SmallVector<std::pair<unsigned, mlir::Value>> cut;
    bool dropAddend = false;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto it = r.cuts.find({op, i});
      if (it == r.cuts.end())
        continue;
      if (it->second.rankZeroOnly) {
        dropAddend = rank != 0;
        continue;
      }
      cut.push_back(
          {i, cutConstant(b, op->getOperand(i), it->second, ranks, rank)});
      if (!cut.back().second)
        return false;
    }
    mlir::Operation *copy = b.clone(*op, map);
    for (auto &[i, v] : cut)
      copy->setOperand(i, v);
    if (dropAddend) { // a row product's bias or residual: rank 0 adds it
      auto mm = b.create<MatMulOp>(op->getLoc(), copy->getOperand(0),
                                   copy->getOperand(1));
      if (transB(op))
        mm.setTransB(true);
      map.map(op->getResult(0), mm.getResult());
      copy->erase();
      copy = mm;
    }
    if (auto slice = llvm::dyn_cast<SliceOp>(copy)) {
      // Its bounds along the split axis scale with the axis.
      const int64_t a = r.of(op->getOperand(0)).axis;
      llvm::SmallVector<int64_t> starts(slice.getStarts()),
          ends(slice.getEnds());
      starts[size_t(a)] /= ranks, ends[size_t(a)] /= ranks;
      slice.setStarts(starts), slice.setEnds(ends);
    }
    State s = r.of(op->getResult(0));
    if (llvm::is_contained(r.reduces, op))
      s.kind = State::P;
    auto t = rankedType(op->getResult(0));
    if (s.kind == State::S) {
      llvm::SmallVector<int64_t> shape(t.getShape());
      shape[size_t(s.axis)] /= ranks;
      copy->getResult(0).setType(
          mlir::RankedTensorType::get(shape, t.getElementType()));
      if (auto reshape = llvm::dyn_cast<ReshapeOp>(copy))
        reshape.setShape(shape);
    }
    if (s.kind == State::P)
      partial[op] = copy->getResult(0);
  }
  return true;
}

struct TensorParallelPass
    : public impl::TensorParallelBase<TensorParallelPass> {
  using TensorParallelBase::TensorParallelBase;

  /// Products with a constant weight that read the same input, in order.
  std::vector<std::vector<mlir::Operation *>> seedGroups(mlir::Block &block) {
    std::vector<std::vector<mlir::Operation *>> groups;
    llvm::DenseMap<mlir::Value, size_t> byInput;
    for (mlir::Operation &op : block) {
      if (!constantWeight(&op))
        continue;
      auto [it, fresh] = byInput.try_emplace(op.getOperand(0), groups.size());
      if (fresh)
        groups.emplace_back();
      groups[it->second].push_back(&op);
    }
    return groups;
  }

  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    if (ranks < 2)
      return;
    if (!simulate && (rank < 0 || rank >= ranks)) {
      fn.emitError() << "cuts-tensor-parallel: rank " << int64_t(rank)
                     << " is not one of 0.." << int64_t(ranks) - 1;
      return signalPassFailure();
    }
    mlir::Block &block = fn.getBody().front();
    llvm::DenseSet<mlir::Operation *> done;
    for (auto &group : seedGroups(block)) {
      if (llvm::any_of(group,
                       [&](mlir::Operation *op) { return done.contains(op); }))
        continue;
      std::optional<Region> r = Analysis(ranks).grow(group);
      // A group whose products do not close together may close alone.
      std::vector<std::vector<mlir::Operation *>> tries = {group};
      if (!r && group.size() > 1)
        for (mlir::Operation *op : group)
          tries.push_back({op});
      for (auto &t : tries) {
        if (!r)
          r = Analysis(ranks).grow(t);
        if (!r)
          continue;
        if (llvm::any_of(
                r->ops,
                [&](mlir::Operation *op) { return done.contains(op); }) ||
            !rewrite(*r)) {
          r.reset();
          continue;
        }
        for (mlir::Operation *op : r->ops)
          done.insert(op);
        r.reset();
      }
    }
  }

  /// The region per rank: with `rank` given, that rank's ops and a
  /// cuts.all_reduce of each partial sum; in `simulate`, every rank's ops
  /// and the partial sums added (one graph that computes what the ranks
  /// do together).
  bool rewrite(const Region &r) {
    mlir::OpBuilder b(r.ops.front());
    llvm::SetVector<mlir::Operation *> whole; // the weights cut
    for (auto &[at, cut] : r.cuts)
      if (mlir::Operation *def =
              at.first->getOperand(at.second).getDefiningOp())
        whole.insert(def);

    llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>> sums;
    for (int64_t k = 0; k < ranks; ++k) {
      if (!simulate && k != rank)
        continue;
      mlir::IRMapping map;
      llvm::DenseMap<mlir::Operation *, mlir::Value> partial;
      if (!cloneForRank(r, ranks, k, b, map, partial))
        return false;
      for (auto &[op, v] : partial)
        sums[op].push_back(v);
    }
    for (mlir::Operation *op : r.reduces) {
      llvm::SmallVector<mlir::Value> &v = sums[op];
      mlir::Value total = v.front();
      b.setInsertionPointAfterValue(v.back());
      if (simulate)
        for (size_t k = 1; k < v.size(); ++k)
          total = b.create<AddOp>(op->getLoc(), total, v[k]);
      else
        total = b.create<AllReduceOp>(op->getLoc(), total, ranks);
      op->getResult(0).replaceAllUsesWith(total);
    }
    for (mlir::Operation *op : llvm::reverse(r.ops))
      if (op->use_empty())
        op->erase();
    for (mlir::Operation *op : whole)
      if (op->use_empty())
        op->erase();
    return true;
  }
};

} // namespace
} // namespace cuts
