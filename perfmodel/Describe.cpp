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

// Any shape as N x K x H x W: the last three axes are K, H, W and the
// leading ones fold into N (elementwise ops do not care which is which).
void asNKHW(llvm::ArrayRef<int64_t> s, OpDesc &d) {
  int64_t v[4] = {1, 1, 1, 1};
  int r = int(s.size());
  for (int i = 0; i < r; ++i) {
    int slot = std::max(0, 4 - r + i);
    v[slot] *= s[i];
  }
  d.N = v[0], d.K = v[1], d.H = v[2], d.W = v[3];
}

int elementBytes(mlir::Type t) {
  unsigned w = llvm::cast<mlir::ShapedType>(t).getElementTypeBitWidth();
  return std::max(1u, w / 8);
}

// N, H, W and the window of a conv or pooling from its NC<spatial> result
// and per-axis attributes; spatial axes beyond two fold into W.
void setWindow(OpDesc &d, llvm::ArrayRef<int64_t> out,
               llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
               llvm::ArrayRef<int64_t> pads,
               llvm::ArrayRef<int64_t> dilations) {
  auto at = [](llvm::ArrayRef<int64_t> v, size_t i, int64_t dflt) {
    return i < v.size() ? v[i] : dflt;
  };
  d.N = out[0];
  d.H = at(out, 2, 1);
  d.W = out.size() > 3 ? product(out.drop_front(3)) : 1;
  d.FH = at(kernel, 0, 1);
  d.FW = kernel.size() > 1 ? product(kernel.drop_front(1)) : 1;
  d.SH = at(strides, 0, 1), d.SW = at(strides, 1, 1);
  d.PH = at(pads, 0, 0), d.PW = at(pads, 1, 0);
  d.DH = at(dilations, 0, 1), d.DW = at(dilations, 1, 1);
}

OpDesc reduction(int64_t rows, int64_t len, double comp) {
  OpDesc d;
  d.kind = OpKind::Reduction;
  d.N = rows;
  d.C = len;
  d.compPerElement = comp;
  return d;
}

} // namespace

bool isViewOp(mlir::Operation *op) {
  return llvm::isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp,
                   DropoutOp>(op);
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

std::optional<OpDesc> describeOp(mlir::Operation *op) {
  if (op->getNumResults() == 0 || llvm::isa<ConstantOp>(op) || isViewOp(op))
    return std::nullopt;
  auto out = tensorType(op->getResult(0));
  if (!out)
    return std::nullopt;
  OpDesc d;
  d.elementBytes = elementBytes(out);

  if (auto conv = llvm::dyn_cast<ConvOp>(op)) {
    auto x = tensorType(conv.getX()), w = tensorType(conv.getW());
    int64_t g = conv.getGroup(), cin = x.getDimSize(1), m = w.getDimSize(0);
    setWindow(d, out.getShape(), w.getShape().drop_front(2), conv.getStrides(),
              conv.getPads(), conv.getDilations());
    if (g == cin && w.getDimSize(1) == 1) {
      d.kind = OpKind::DepthwiseConv;
      d.K = m;
      d.C = 1;
    } else {
      d.kind = OpKind::Conv;
      d.K = m / g;
      d.C = cin / g;
      d.batch = g;
    }
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
  auto matmul = [&](mlir::Value a, mlir::Value b, bool ta, bool tb) -> OpDesc {
    auto sa = tensorType(a).getShape(), sb = tensorType(b).getShape();
    int64_t m = sa.size() >= 2 ? sa[sa.size() - (ta ? 1 : 2)] : 1;
    int64_t k = sa.empty() ? 1 : sa[sa.size() - (ta ? 2 : 1)];
    int64_t n = sb.size() >= 2 ? sb[sb.size() - (tb ? 2 : 1)] : 1;
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < out.getShape().size(); ++i)
      batch *= out.getDimSize(i);
    OpDesc m2;
    m2.kind = OpKind::MatMul;
    m2.elementBytes = d.elementBytes;
    m2.C = k;
    m2.K = n;
    // Shared weights (B without batch axes): the batch is more rows of one
    // product; per-batch B (attention): independent products.
    if (sb.size() <= 2) {
      m2.N = m * batch;
    } else {
      m2.N = m;
      m2.batch = batch;
    }
    return m2;
  };
  if (auto mm = llvm::dyn_cast<MatMulOp>(op))
    return matmul(mm.getA(), mm.getB(), false, false);
  if (auto mm = llvm::dyn_cast<MatMulAddOp>(op))
    return matmul(mm.getA(), mm.getB(), false, false);
  if (auto gemm = llvm::dyn_cast<GemmOp>(op))
    return matmul(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());

  if (llvm::isa<BatchNormalizationOp>(op)) {
    asNKHW(out.getShape(), d);
    if (out.getRank() == 4) {
      auto o = out.getShape();
      d.N = o[0], d.K = o[1], d.H = o[2], d.W = o[3];
    }
    d.kind = OpKind::BatchNorm;
    return d;
  }
  if (auto mp = llvm::dyn_cast<MaxPoolOp>(op)) {
    d.kind = OpKind::Pool;
    d.K = out.getDimSize(1);
    setWindow(d, out.getShape(), mp.getKernelShape(), mp.getStrides(),
              mp.getPads(), mp.getDilations());
    return d;
  }
  if (auto ap = llvm::dyn_cast<AveragePoolOp>(op)) {
    d.kind = OpKind::Pool;
    d.K = out.getDimSize(1);
    setWindow(d, out.getShape(), ap.getKernelShape(), ap.getStrides(),
              ap.getPads(), ap.getDilations());
    return d;
  }

  // Reductions: rows of a reduced extent. Operations per element are
  // derived from the computation: softmax max, subtract, exp, sum, divide
  // (5); layer normalisation mean, centre, square, sum, scale, shift (6).
  if (auto gp = llvm::dyn_cast<GlobalAveragePoolOp>(op)) {
    auto x = tensorType(gp.getX());
    OpDesc r = reduction(x.getDimSize(0) * x.getDimSize(1),
                         product(x.getShape().drop_front(2)), 1);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (auto sm = llvm::dyn_cast<SoftmaxOp>(op)) {
    int64_t len = out.getDimSize(sm.getAxis());
    OpDesc r =
        reduction(out.getNumElements() / std::max<int64_t>(len, 1), len, 5);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (auto ln = llvm::dyn_cast<LayerNormalizationOp>(op)) {
    auto x = tensorType(ln.getX());
    int64_t len = product(x.getShape().drop_front(ln.getAxis()));
    OpDesc r =
        reduction(x.getNumElements() / std::max<int64_t>(len, 1), len, 6);
    r.elementBytes = d.elementBytes;
    return r;
  }
  if (llvm::isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op)) {
    auto x = tensorType(op->getOperand(0));
    int64_t rows = std::max<int64_t>(out.getNumElements(), 1);
    OpDesc r = reduction(rows, x.getNumElements() / rows, 1);
    r.elementBytes = d.elementBytes;
    return r;
  }

  // Everything else is elementwise or data movement over the result: one
  // operation per element (Table 3.5), reading each full-size operand.
  d.kind = OpKind::Elementwise;
  asNKHW(out.getShape(), d);
  llvm::SmallPtrSet<mlir::Operation *, 1> none;
  d.inputs = std::max(1, externalInputs(op, none));
  return d;
}

} // namespace cuts
