//===- Describe.cpp - cuts ops as performance-model ops -------------------===//
#include "perfmodel/Describe.h"

#include "cuts/Dialect/Cuts/CutsOps.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace cuts {
namespace {

mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
}

int64_t product(llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

int elementBytes(mlir::Type t) {
  unsigned w = llvm::cast<mlir::ShapedType>(t).getElementTypeBitWidth();
  return std::max(1u, w / 8);
}

std::vector<int64_t> vec(llvm::ArrayRef<int64_t> a) {
  return {a.begin(), a.end()};
}

// A 4-D shape as its NCHW equivalent: a channels-last op is described by
// the op it computes, whatever its layout.
std::vector<int64_t> nchw(mlir::Value v, bool channelsLast) {
  std::vector<int64_t> s = vec(tensorType(v).getShape());
  if (channelsLast && s.size() == 4)
    s = {s[0], s[3], s[1], s[2]};
  return s;
}

} // namespace

bool isViewOp(mlir::Operation *op) { return op->hasTrait<OpTrait::View>(); }

std::optional<PlanarInput> planarInput(mlir::Operation *op) {
  auto conv = llvm::dyn_cast_or_null<ConvOp>(op);
  if (!conv || !conv.getChannelsLast() || conv.getGroup() != 1)
    return std::nullopt;
  std::optional<OpDesc> d = describeOp(conv);
  auto x = tensorType(conv.getX());
  if (!d || !d->planarWindow() || !x || x.getElementTypeBitWidth() != 16)
    return std::nullopt;
  PlanarInput p;
  bool padded = false, cast = false;
  mlir::Value v = conv.getX();
  for (;;) {
    mlir::Operation *def = v.getDefiningOp();
    if (!def || !def->hasOneUse())
      return std::nullopt;
    p.ops.insert(p.ops.begin(), def);
    if (auto t = llvm::dyn_cast<TransposeOp>(def)) {
      p.nchw = t.getData();
      break;
    }
    if (auto pad = llvm::dyn_cast<PadOp>(def)) {
      auto pads = pad.getPads();
      const bool channelsAtEnd =
          pads.size() == 8 &&
          llvm::all_of(pads.drop_back(), [](int64_t q) { return q == 0; });
      if (padded || !channelsAtEnd || pad.getMode() != "constant" ||
          pad.getValue().convertToDouble() != 0)
        return std::nullopt;
      padded = true;
      v = pad.getData();
    } else if (auto c = llvm::dyn_cast<CastOp>(def)) {
      if (cast || !tensorType(c.getInput()).getElementType().isF32())
        return std::nullopt;
      cast = true;
      v = c.getInput();
    } else {
      return std::nullopt;
    }
  }
  auto t = llvm::cast<TransposeOp>(p.ops.front());
  auto in = tensorType(p.nchw);
  const int64_t toLast[] = {0, 2, 3, 1};
  if (!in || in.getRank() != 4 || t.getPerm() != llvm::ArrayRef(toLast) ||
      (!cast && in.getElementType() != x.getElementType()) ||
      in.getDimSize(1) > x.getDimSize(3))
    return std::nullopt;
  return p;
}

bool readInPlace(mlir::Operation *op, mlir::Operation *user) {
  if (auto p = planarInput(user))
    return llvm::is_contained(p->ops, op);
  if (!user || !llvm::isa<MatMulOp, MatMulAddOp, GemmOp>(user))
    return false;
  for (;;) {
    if (!op->hasOneUse())
      return false;
    if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
      auto perm = t.getPerm();
      if (perm.size() < 2 || perm.back() != int64_t(perm.size() - 1))
        return false;
    } else if (auto s = llvm::dyn_cast<SliceOp>(op)) {
      const size_t last = s.getSteps().size() - 1;
      if (llvm::any_of(s.getSteps(), [](int64_t x) { return x != 1; }) ||
          s.getStarts()[last] != 0 ||
          s.getEnds()[last] != tensorType(s.getData()).getShape()[last])
        return false;
    } else {
      return false;
    }
    mlir::Operation *next = *op->getUsers().begin();
    if (next == user)
      return user->getOperand(0) == op->getResult(0) ||
             user->getOperand(1) == op->getResult(0);
    op = next;
  }
}

int externalInputs(mlir::Operation *op,
                   const llvm::SmallPtrSetImpl<mlir::Operation *> &inside) {
  int n = 0;
  auto out = tensorType(op->getResult(0));
  for (mlir::Value v : op->getOperands()) {
    mlir::Operation *def = v.getDefiningOp();
    if (def && inside.contains(def))
      continue;
    // A concat reads each output element from one operand: its operands
    // together are one full-size read, however many there are.
    if (llvm::isa<ConcatOp>(op))
      return 1;
    auto t = tensorType(v);
    // Operands much smaller than the result are reused across the block.
    if (t && out && t.getNumElements() * 8 >= out.getNumElements())
      ++n;
  }
  return n;
}

namespace {

std::optional<OpDesc> describeShapes(mlir::Operation *op) {
  // An all-reduce is a collective between kernels, never part of one.
  if (op->getNumResults() == 0 || llvm::isa<ConstantOp, AllReduceOp>(op) ||
      isViewOp(op))
    return std::nullopt;
  auto out = tensorType(op->getResult(0));
  if (!out)
    return std::nullopt;
  OpDesc d;
  d.elementBytes = elementBytes(out);

  if (auto conv = llvm::dyn_cast<ConvOp>(op)) {
    Window win{vec(conv.getStrides()), vec(conv.getPads()),
               vec(conv.getDilations())};
    if (conv.getChannelsLast() && conv.getGroup() > 1) {
      // A depthwise conv: described on its NCHW shapes, read NHWC.
      d = describeConv(nchw(conv.getX(), true), nchw(conv.getW(), true),
                       nchw(conv.getY(), true), conv.getGroup(), win);
      d.channelsLast = true;
      d.elementBytes = elementBytes(out);
      return d;
    }
    if (conv.getChannelsLast()) {
      d = describeImplicitGemm(vec(tensorType(conv.getX()).getShape()),
                               vec(tensorType(conv.getW()).getShape()),
                               vec(out.getShape()), win);
      d.elementBytes = elementBytes(out);
      return d;
    }
    d = describeConv(vec(tensorType(conv.getX()).getShape()),
                     vec(tensorType(conv.getW()).getShape()),
                     vec(out.getShape()), conv.getGroup(), win);
    d.elementBytes = elementBytes(out);
    return d;
  }
  if (auto cs = llvm::dyn_cast<ConvSumOp>(op)) {
    d = describeConvSum(vec(tensorType(cs.getX()).getShape()),
                        vec(tensorType(cs.getX2()).getShape()),
                        vec(tensorType(cs.getW()).getShape()),
                        vec(out.getShape()), vec(cs.getStrides()),
                        vec(cs.getStrides2()));
    d.elementBytes = elementBytes(out);
    return d;
  }
  if (auto ct = llvm::dyn_cast<ConvTransposeOp>(op)) {
    // A transposed convolution is a convolution over the output with each
    // output reading about ceil(F / S) inputs per axis (an approximation: the
    // exact count varies with the output's phase).
    auto x = tensorType(ct.getX()), w = tensorType(ct.getW());
    auto o = out.getShape();
    int64_t g = ct.getGroup();
    d.kind = OpKind::Conv;
    d.N = o[0];
    d.K = o[1] / g;
    d.C = x.getDimSize(1) / g;
    d.batch = g;
    d.H = o.size() > 2 ? o[2] : 1;
    d.W = o.size() > 3 ? product(o.drop_front(3)) : 1;
    auto st = ct.getStrides();
    int64_t sh = st.size() > 0 ? st[0] : 1, sw = st.size() > 1 ? st[1] : 1;
    d.FH = w.getRank() > 2 ? (w.getDimSize(2) + sh - 1) / sh : 1;
    d.FW = w.getRank() > 3 ? (w.getDimSize(3) + sw - 1) / sw : 1;
    return d;
  }
  auto matmul = [&](mlir::Value a, mlir::Value b, bool ta, bool tb) {
    OpDesc m = describeMatMul(vec(tensorType(a).getShape()),
                              vec(tensorType(b).getShape()),
                              vec(out.getShape()), ta, tb);
    // The operands' size: a 16-bit product may store fp32 accumulators
    // (cuts-split-k's parts), and its operands decide the tensor cores.
    m.elementBytes = elementBytes(tensorType(a));
    return m;
  };
  if (auto mm = llvm::dyn_cast<MatMulOp>(op))
    return matmul(mm.getA(), mm.getB(), false, mm.getTransB());
  if (auto mm = llvm::dyn_cast<MatMulAddOp>(op))
    return matmul(mm.getA(), mm.getB(), false, mm.getTransB());
  if (auto gemm = llvm::dyn_cast<GemmOp>(op))
    return matmul(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());

  if (llvm::isa<BatchNormalizationOp>(op)) {
    OpDesc b = describeElementwise(vec(out.getShape()), 1);
    if (out.getRank() == 4) {
      auto o = out.getShape();
      b.N = o[0], b.K = o[1], b.H = o[2], b.W = o[3];
    }
    b.kind = OpKind::BatchNorm;
    b.elementBytes = d.elementBytes;
    return b;
  }
  // A pooling, channels-last ones described on their NCHW shapes.
  auto pool = [&](auto p) {
    const bool last = bool(p.getChannelsLast());
    OpDesc pd = describePool(
        nchw(p.getX(), last), nchw(p.getY(), last), vec(p.getKernelShape()),
        {vec(p.getStrides()), vec(p.getPads()), vec(p.getDilations())});
    pd.channelsLast = last;
    pd.elementBytes = elementBytes(out);
    return pd;
  };
  if (auto mp = llvm::dyn_cast<MaxPoolOp>(op))
    return pool(mp);
  if (auto ap = llvm::dyn_cast<AveragePoolOp>(op))
    return pool(ap);

  // Reductions: rows of a reduced extent. Operations per element are
  // derived from the computation: softmax max, subtract, exp, sum, divide
  // (5); layer normalisation mean, centre, square, sum, scale, shift (6).
  if (auto gp = llvm::dyn_cast<GlobalAveragePoolOp>(op)) {
    auto x = tensorType(gp.getX());
    OpDesc r = describeRows(x.getDimSize(0) * x.getDimSize(1),
                            product(x.getShape().drop_front(2)), 1);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (auto sm = llvm::dyn_cast<SoftmaxOp>(op)) {
    int64_t len = out.getDimSize(sm.getAxis());
    OpDesc r =
        describeRows(out.getNumElements() / std::max<int64_t>(len, 1), len, 5);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (auto ln = llvm::dyn_cast<LayerNormalizationOp>(op)) {
    auto x = tensorType(ln.getX());
    int64_t len = product(x.getShape().drop_front(ln.getAxis()));
    OpDesc r =
        describeRows(x.getNumElements() / std::max<int64_t>(len, 1), len, 6);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (llvm::isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op)) {
    auto x = tensorType(op->getOperand(0));
    int64_t rows = std::max<int64_t>(out.getNumElements(), 1);
    OpDesc r = describeRows(rows, x.getNumElements() / rows, 1);
    r.elementBytes = d.elementBytes;
    return r;
  }

  // Everything else is elementwise or data movement over the result: one
  // operation per element (Table 3.5), reading each full-size operand.
  llvm::SmallPtrSet<mlir::Operation *, 1> none;
  OpDesc e = describeElementwise(vec(out.getShape()),
                                 std::max(1, externalInputs(op, none)));
  e.elementBytes = d.elementBytes;
  return e;
}

} // namespace

std::optional<OpDesc> describeOp(mlir::Operation *op) {
  std::optional<OpDesc> d = describeShapes(op);
  if (d && d->kind == OpKind::MatMul && d->elementBytes == 4)
    d->tf32 = allowsTf32(op);
  return d;
}

} // namespace cuts
