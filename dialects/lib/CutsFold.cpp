//===- CutsFold.cpp - folders of the cuts ops -----------------------------===//
//
// Every op that can be computed from constant operands folds: this is what
// removes the shape subgraphs of exported models (Shape -> Gather -> Concat
// -> Reshape) and precomputes weight-only arithmetic. Ops that are the
// identity for their operand types (Identity, Dropout, a Reshape to the same
// shape) fold to the operand.
//
//===----------------------------------------------------------------------===//
#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace cuts {
namespace {

RankedTensorType resultType(Operation *op, unsigned k = 0) {
  return llvm::cast<RankedTensorType>(op->getResult(k).getType());
}

bool tooBig(RankedTensorType t) {
  return t.getNumElements() > kMaxFoldElements;
}

// Folds a one-result op whose result is computed elementwise, with
// broadcasting, from constant operands.
template <typename Fn>
OpFoldResult foldBroadcast(Operation *op, ArrayRef<Attribute> operands,
                           Fn &&fn) {
  auto rt = resultType(op);
  if (tooBig(rt))
    return {};
  // Only where every operand is constant: converting a weight costs 8
  // bytes an element, and the rewriter folds each op again and again.
  if (llvm::is_contained(operands, Attribute()))
    return {};
  SmallVector<HostTensor> in;
  for (Attribute a : operands) {
    auto t = toHost(a);
    if (!t)
      return {};
    in.push_back(std::move(*t));
  }
  HostTensor out(rt);
  SmallVector<int64_t> offs(in.size());
  for (int64_t k = 0; k < out.numel(); ++k) {
    for (size_t j = 0; j < in.size(); ++j)
      offs[j] = broadcastOffset(k, rt.getShape(), in[j].shape());
    if (!fn(out, k, in, offs))
      return {};
  }
  return toAttr(out);
}

template <typename FloatFn, typename IntFn>
OpFoldResult foldArith(Operation *op, ArrayRef<Attribute> operands,
                       FloatFn &&ff, IntFn &&fi) {
  return foldBroadcast(op, operands,
                       [&](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                           ArrayRef<int64_t> off) {
                         if (o.isFloat()) {
                           o.set(k, ff(in[0].getF(off[0]), in[1].getF(off[1])));
                           return true;
                         }
                         std::optional<int64_t> v =
                             fi(in[0].getI(off[0]), in[1].getI(off[1]));
                         if (!v)
                           return false;
                         o.setI(k, *v);
                         return true;
                       });
}

template <typename Fn>
OpFoldResult foldUnaryFloat(Operation *op, Attribute x, Fn &&fn) {
  return foldBroadcast(op, {x},
                       [&](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                           ArrayRef<int64_t> off) {
                         o.set(k, fn(in[0].getF(off[0])));
                         return true;
                       });
}

// Result element k of a data-movement op is element src(k) of the single
// constant input; src returns -1 for "not from the input" (pad value).
template <typename Fn>
OpFoldResult foldGather(Operation *op, Attribute input, double fill, Fn &&src) {
  auto rt = resultType(op);
  if (tooBig(rt))
    return {};
  auto in = toHost(input);
  if (!in)
    return {};
  HostTensor out(rt);
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t j = src(k);
    if (j < -1)
      return {};
    if (j < 0)
      out.set(k, fill);
    else if (out.isFloat())
      out.f[k] = in->f[j];
    else
      out.i[k] = in->i[j];
  }
  return toAttr(out);
}

// Re-types a constant (reshape-like ops keep the element order).
OpFoldResult foldRetype(Operation *op, Attribute input) {
  auto rt = resultType(op);
  if (Value v = op->getOperand(0); v.getType() == rt)
    return v;
  if (tooBig(rt))
    return {};
  auto in = toHost(input);
  if (!in)
    return {};
  in->type = rt;
  return toAttr(*in);
}

SmallVector<int64_t> unflatten(int64_t k, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> idx(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
  return idx;
}

int64_t flatten(ArrayRef<int64_t> idx, ArrayRef<int64_t> strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d)
    off += idx[d] * strides[d];
  return off;
}

} // namespace

// Relu, Neg and Clip also take integers: keep them exact in int64.
template <typename Fn>
static OpFoldResult foldUnaryNum(Operation *op, Attribute x, Fn &&fn) {
  return foldBroadcast(op, {x},
                       [&](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                           ArrayRef<int64_t> off) {
                         if (o.isFloat())
                           o.set(k, fn(in[0].f[off[0]]));
                         else
                           o.setI(k, fn(in[0].i[off[0]]));
                         return true;
                       });
}

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor a) {
  auto v = toHost(getValue());
  if (!v || tooBig(getType()))
    return {};
  HostTensor out(getType());
  for (int64_t k = 0; k < out.numel(); ++k)
    out.isFloat() ? out.set(k, v->f[0]) : out.setI(k, v->i[0]);
  return toAttr(out);
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  HostTensor out(getType());
  auto dims = getData().getType().getShape();
  for (int64_t k = 0; k < out.numel(); ++k)
    out.i[k] = dims[getStart() + k];
  return toAttr(out);
}

OpFoldResult RangeOp::fold(FoldAdaptor) {
  HostTensor out(getType());
  double start = getStart().convertToDouble();
  double delta = getDelta().convertToDouble();
  for (int64_t k = 0; k < out.numel(); ++k)
    out.set(k, start + double(k) * delta);
  return toAttr(out);
}

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }
OpFoldResult DropoutOp::fold(FoldAdaptor) { return getData(); }

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  return foldBroadcast(*this, {a.getInput()},
                       [](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                          ArrayRef<int64_t> off) {
                         if (in[0].isFloat())
                           o.set(k, in[0].f[off[0]]);
                         else
                           o.setI(k, in[0].i[off[0]]);
                         return true;
                       });
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()}, [](double x, double y) { return x + y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return int64_t(uint64_t(x) + uint64_t(y));
      });
}

OpFoldResult ModOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()},
      [](double x, double y) {
        double r = std::fmod(x, y);
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
      },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min()))
          return 0;
        int64_t r = x % y;
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()},
      [](double x, double y) { return std::fmax(x, y); },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return std::max(x, y);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()},
      [](double x, double y) { return std::fmin(x, y); },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return std::min(x, y);
      });
}

OpFoldResult FModOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()},
      [](double x, double y) { return std::fmod(x, y); },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min()))
          return 0;
        return x % y;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()}, [](double x, double y) { return x - y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return int64_t(uint64_t(x) - uint64_t(y));
      });
}

OpFoldResult MulOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()}, [](double x, double y) { return x * y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return int64_t(uint64_t(x) * uint64_t(y));
      });
}

OpFoldResult DivOp::fold(FoldAdaptor a) {
  return foldArith(
      *this, {a.getA(), a.getB()}, [](double x, double y) { return x / y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        // Integer division truncates (as ONNX Runtime does); leave x/0 and
        // INT64_MIN/-1 to run time rather than fold undefined behaviour.
        if (y == 0 || (y == -1 && x == INT64_MIN))
          return std::nullopt;
        return x / y;
      });
}

static std::optional<int64_t> boolAnd(int64_t x, int64_t y) { return x && y; }
static std::optional<int64_t> boolOr(int64_t x, int64_t y) { return x || y; }
static std::optional<int64_t> boolXor(int64_t x, int64_t y) {
  return (x != 0) != (y != 0);
}
static double noFloat(double, double) { return 0; } // bool tensors only

OpFoldResult AndOp::fold(FoldAdaptor a) {
  return foldArith(*this, {a.getA(), a.getB()}, noFloat, boolAnd);
}
OpFoldResult OrOp::fold(FoldAdaptor a) {
  return foldArith(*this, {a.getA(), a.getB()}, noFloat, boolOr);
}
OpFoldResult XorOp::fold(FoldAdaptor a) {
  return foldArith(*this, {a.getA(), a.getB()}, noFloat, boolXor);
}
OpFoldResult NotOp::fold(FoldAdaptor a) {
  return foldUnaryNum(*this, a.getX(), [](int64_t x) { return int64_t(!x); });
}

OpFoldResult PowOp::fold(FoldAdaptor a) {
  return foldBroadcast(
      *this, {a.getX(), a.getY()},
      [](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
         ArrayRef<int64_t> off) {
        o.set(k, std::pow(in[0].getF(off[0]), in[1].getF(off[1])));
        return true;
      });
}

template <typename Cmp>
static OpFoldResult foldCompare(Operation *op, ArrayRef<Attribute> operands,
                                Cmp &&cmp) {
  return foldBroadcast(op, operands,
                       [&](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                           ArrayRef<int64_t> off) {
                         bool r = in[0].isFloat()
                                      ? cmp(in[0].f[off[0]], in[1].f[off[1]])
                                      : cmp(in[0].i[off[0]], in[1].i[off[1]]);
                         o.i[k] = r;
                         return true;
                       });
}

OpFoldResult EqualOp::fold(FoldAdaptor a) {
  return foldCompare(*this, {a.getA(), a.getB()},
                     [](auto x, auto y) { return x == y; });
}

OpFoldResult LessOp::fold(FoldAdaptor a) {
  return foldCompare(*this, {a.getA(), a.getB()},
                     [](auto x, auto y) { return x < y; });
}

OpFoldResult WhereOp::fold(FoldAdaptor a) {
  // A uniform condition picks one operand whole, where it needs no
  // broadcast (a fully masked attention row that never happens, say).
  if (auto c = llvm::dyn_cast_or_null<DenseElementsAttr>(a.getCondition());
      c && c.isSplat()) {
    Value pick = c.getSplatValue<bool>() ? getX() : getY();
    if (pick.getType() == getType())
      return pick;
  }
  return foldBroadcast(*this, {a.getCondition(), a.getX(), a.getY()},
                       [](HostTensor &o, int64_t k, ArrayRef<HostTensor> in,
                          ArrayRef<int64_t> off) {
                         const HostTensor &s = in[0].i[off[0]] ? in[1] : in[2];
                         int64_t j = in[0].i[off[0]] ? off[1] : off[2];
                         if (o.isFloat())
                           o.f[k] = s.f[j];
                         else
                           o.i[k] = s.i[j];
                         return true;
                       });
}

OpFoldResult SqrtOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::sqrt(x); });
}
OpFoldResult ExpOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::log(x); });
}
OpFoldResult ErfOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::erf(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::tanh(x); });
}
OpFoldResult SigmoidOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
OpFoldResult SinOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::sin(x); });
}
OpFoldResult CosOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::cos(x); });
}
OpFoldResult TanOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::tan(x); });
}
OpFoldResult AsinOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::asin(x); });
}
OpFoldResult AcosOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::acos(x); });
}
OpFoldResult AtanOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::atan(x); });
}
OpFoldResult SinhOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::sinh(x); });
}
OpFoldResult CoshOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::cosh(x); });
}
OpFoldResult AsinhOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return std::asinh(x); });
}
OpFoldResult AcoshOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return std::acosh(x); });
}
OpFoldResult AtanhOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return std::atanh(x); });
}
OpFoldResult FloorOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return std::floor(x); });
}
OpFoldResult CeilOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return std::ceil(x); });
}
OpFoldResult RoundOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(),
                        [](double x) { return std::nearbyint(x); });
}
OpFoldResult ReciprocalOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) { return 1.0 / x; });
}
OpFoldResult HardSwishOp::fold(FoldAdaptor a) {
  return foldUnaryFloat(*this, a.getX(), [](double x) {
    return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  });
}
OpFoldResult LeakyReluOp::fold(FoldAdaptor a) {
  double alpha = getAlpha().convertToDouble();
  return foldUnaryFloat(*this, a.getX(),
                        [=](double x) { return x < 0 ? alpha * x : x; });
}
OpFoldResult HardSigmoidOp::fold(FoldAdaptor a) {
  double alpha = getAlpha().convertToDouble();
  double beta = getBeta().convertToDouble();
  return foldUnaryFloat(*this, a.getX(), [=](double x) {
    return std::max(0.0, std::min(1.0, alpha * x + beta));
  });
}
OpFoldResult GeluOp::fold(FoldAdaptor a) {
  bool tanhForm = getApproximate() == "tanh";
  return foldUnaryFloat(*this, a.getX(), [=](double x) {
    if (tanhForm)
      return 0.5 * x *
             (1.0 +
              std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  });
}

OpFoldResult ReluOp::fold(FoldAdaptor a) {
  return foldUnaryNum(*this, a.getX(),
                      [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}
OpFoldResult NegOp::fold(FoldAdaptor a) {
  return foldUnaryNum(*this, a.getX(), [](auto x) { return -x; });
}
OpFoldResult AbsOp::fold(FoldAdaptor a) {
  // std::abs keeps fabs's +0 for -0.
  return foldUnaryNum(*this, a.getX(), [](auto x) { return std::abs(x); });
}
OpFoldResult ClipOp::fold(FoldAdaptor a) {
  std::optional<double> lo, hi;
  if (auto m = getMinAttr())
    lo = m.getValueAsDouble();
  if (auto m = getMaxAttr())
    hi = m.getValueAsDouble();
  return foldUnaryNum(*this, a.getX(), [=](auto x) {
    using T = decltype(x);
    if (lo && x < T(*lo))
      x = T(*lo);
    if (hi && x > T(*hi))
      x = T(*hi);
    return x;
  });
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// Products of constant operands are rare (weight-only arithmetic); bound the
// work so that folding stays cheap.
constexpr int64_t kMaxFoldFlops = int64_t(1) << 28;

OpFoldResult MatMulOp::fold(FoldAdaptor a) {
  // Weights are stored transposed only after folding; x is not constant.
  if (getTransB() || !a.getA() || !a.getB())
    return {};
  auto ha = toHost(a.getA()), hb = toHost(a.getB());
  if (!ha || !hb)
    return {};
  SmallVector<int64_t> sa(ha->shape()), sb(hb->shape());
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  int64_t m = sa[sa.size() - 2], kk = sa.back(), n = sb.back();
  ArrayRef<int64_t> ba = ArrayRef<int64_t>(sa).drop_back(2);
  ArrayRef<int64_t> bb = ArrayRef<int64_t>(sb).drop_back(2);
  auto batch = broadcastShapes(ba, bb);
  int64_t nb = 1;
  for (int64_t d : *batch)
    nb *= d;
  if (nb * m * n * kk > kMaxFoldFlops)
    return {};
  HostTensor out(getType());
  for (int64_t b = 0; b < nb; ++b) {
    int64_t oa = broadcastOffset(b, *batch, ba) * m * kk;
    int64_t ob = broadcastOffset(b, *batch, bb) * kk * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < kk; ++p)
          acc += ha->getF(oa + i * kk + p) * hb->getF(ob + p * n + j);
        out.set((b * m + i) * n + j, acc);
      }
  }
  return toAttr(out);
}

OpFoldResult GemmOp::fold(FoldAdaptor a) {
  if (!a.getA() || !a.getB() || (getC() && !a.getC()))
    return {};
  auto ha = toHost(a.getA()), hb = toHost(a.getB());
  std::optional<HostTensor> hc;
  if (getC() && !(hc = toHost(a.getC())))
    return {};
  if (!ha || !hb)
    return {};
  int64_t m = getType().getDimSize(0), n = getType().getDimSize(1);
  int64_t kk = ha->shape()[getTransA() ? 0 : 1];
  if (m * n * kk > kMaxFoldFlops)
    return {};
  double alpha = getAlpha().convertToDouble();
  double beta = getBeta().convertToDouble();
  HostTensor out(getType());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < kk; ++p)
        acc += ha->getF(getTransA() ? p * m + i : i * kk + p) *
               hb->getF(getTransB() ? j * kk + p : p * n + j);
      acc *= alpha;
      if (hc)
        acc += beta * hc->getF(broadcastOffset(i * n + j, {m, n}, hc->shape()));
      out.set(i * n + j, acc);
    }
  return toAttr(out);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class ReduceKind { Mean, Sum, Max };

static OpFoldResult foldReduce(Operation *op, Attribute data,
                               ArrayRef<int64_t> axes, ReduceKind kind) {
  auto in = toHost(data);
  if (!in)
    return {};
  ArrayRef<int64_t> shape = in->shape();
  // Shape of the result with kept (size-1) reduced axes, for indexing.
  SmallVector<int64_t> kept(shape);
  int64_t count = 1;
  for (int64_t ax : axes) {
    kept[ax] = 1;
    count *= shape[ax];
  }
  HostTensor out(resultType(op));
  int64_t n = out.numel();
  std::vector<double> acc(n, kind == ReduceKind::Max ? -INFINITY : 0.0);
  std::vector<int64_t> accI(n, kind == ReduceKind::Max ? INT64_MIN : 0);
  SmallVector<int64_t> keptStrides = stridesOf(kept);
  for (int64_t k = 0; k < in->numel(); ++k) {
    SmallVector<int64_t> idx = unflatten(k, shape);
    for (int64_t ax : axes)
      idx[ax] = 0;
    int64_t o = flatten(idx, keptStrides);
    if (in->isFloat()) {
      double v = in->f[k];
      acc[o] = kind == ReduceKind::Max
                   ? (std::isnan(v) || v > acc[o] ? v : acc[o])
                   : acc[o] + v;
    } else {
      int64_t v = in->i[k];
      accI[o] = kind == ReduceKind::Max ? std::max(accI[o], v)
                                        : int64_t(uint64_t(accI[o]) + v);
    }
  }
  for (int64_t o = 0; o < n; ++o) {
    if (in->isFloat())
      out.set(o, kind == ReduceKind::Mean ? acc[o] / double(count) : acc[o]);
    else
      out.setI(o,
               kind == ReduceKind::Mean && count ? accI[o] / count : accI[o]);
  }
  return toAttr(out);
}

OpFoldResult ReduceMeanOp::fold(FoldAdaptor a) {
  return foldReduce(*this, a.getData(), getAxes(), ReduceKind::Mean);
}
OpFoldResult ReduceSumOp::fold(FoldAdaptor a) {
  return foldReduce(*this, a.getData(), getAxes(), ReduceKind::Sum);
}
OpFoldResult ReduceMaxOp::fold(FoldAdaptor a) {
  return foldReduce(*this, a.getData(), getAxes(), ReduceKind::Max);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult FlattenOp::fold(FoldAdaptor a) {
  return foldRetype(*this, a.getInput());
}
OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  return foldRetype(*this, a.getData());
}
OpFoldResult UnsqueezeOp::fold(FoldAdaptor a) {
  return foldRetype(*this, a.getData());
}
OpFoldResult SqueezeOp::fold(FoldAdaptor a) {
  return foldRetype(*this, a.getData());
}

OpFoldResult TransposeOp::fold(FoldAdaptor a) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d)
    identity &= perm[d] == int64_t(d);
  if (identity)
    return getData();
  ArrayRef<int64_t> outShape = getType().getShape();
  auto inStrides = stridesOf(getData().getType().getShape());
  return foldGather(*this, a.getData(), 0, [&](int64_t k) {
    SmallVector<int64_t> idx = unflatten(k, outShape);
    int64_t off = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      off += idx[d] * inStrides[perm[d]];
    return off;
  });
}

OpFoldResult ExpandOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  ArrayRef<int64_t> to = getType().getShape();
  ArrayRef<int64_t> from = getInput().getType().getShape();
  return foldGather(*this, a.getInput(), 0,
                    [&](int64_t k) { return broadcastOffset(k, to, from); });
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  if (getData().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getData();
  ArrayRef<int64_t> outShape = getType().getShape();
  auto inStrides = stridesOf(getData().getType().getShape());
  return foldGather(*this, a.getData(), 0, [&](int64_t k) {
    SmallVector<int64_t> idx = unflatten(k, outShape);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      off += (getStarts()[d] + idx[d] * getSteps()[d]) * inStrides[d];
    return off;
  });
}

OpFoldResult PadOp::fold(FoldAdaptor a) {
  if (llvm::all_of(getPads(), [](int64_t p) { return p == 0; }))
    return getData();
  ArrayRef<int64_t> outShape = getType().getShape();
  ArrayRef<int64_t> inShape = getData().getType().getShape();
  auto inStrides = stridesOf(inShape);
  int64_t r = inShape.size();
  StringRef mode = getMode();
  return foldGather(
      *this, a.getData(), getValue().convertToDouble(), [&](int64_t k) {
        SmallVector<int64_t> idx = unflatten(k, outShape);
        int64_t off = 0;
        for (int64_t d = 0; d < r; ++d) {
          int64_t i = idx[d] - getPads()[d], n = inShape[d];
          if (i < 0 || i >= n) {
            if (mode == "constant" || n == 0)
              return int64_t(-1);
            if (mode == "edge")
              i = i < 0 ? 0 : n - 1;
            else if (mode == "wrap")
              i = ((i % n) + n) % n;
            else { // reflect (the verifier bounds the pads by n - 1)
              i = i < 0 ? -i : 2 * (n - 1) - i;
            }
          }
          off += i * inStrides[d];
        }
        return off;
      });
}

OpFoldResult GatherOp::fold(FoldAdaptor a) {
  auto idx = toHost(a.getIndices());
  if (!idx)
    return {};
  ArrayRef<int64_t> dataShape = getData().getType().getShape();
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1, n = dataShape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= dataShape[d];
  for (size_t d = axis + 1; d < dataShape.size(); ++d)
    inner *= dataShape[d];
  int64_t ni = idx->numel();
  return foldGather(*this, a.getData(), 0, [&](int64_t k) -> int64_t {
    int64_t in = k % inner, rest = k / inner;
    int64_t j = idx->i[rest % ni], o = rest / ni;
    if (j < 0)
      j += n;
    if (j < 0 || j >= n)
      return -2; // out of range: leave it to run time
    return (o * n + j) * inner + in;
  });
}

OpFoldResult GatherElementsOp::fold(FoldAdaptor a) {
  auto idx = toHost(a.getIndices());
  if (!idx)
    return {};
  ArrayRef<int64_t> dataShape = getData().getType().getShape();
  ArrayRef<int64_t> outShape = getType().getShape();
  auto strides = stridesOf(dataShape);
  int64_t axis = getAxis();
  return foldGather(*this, a.getData(), 0, [&](int64_t k) -> int64_t {
    SmallVector<int64_t> pos = unflatten(k, outShape);
    int64_t j = idx->i[k];
    if (j < 0)
      j += dataShape[axis];
    if (j < 0 || j >= dataShape[axis])
      return -2;
    pos[axis] = j;
    return flatten(pos, strides);
  });
}

OpFoldResult GatherNDOp::fold(FoldAdaptor a) {
  auto idx = toHost(a.getIndices());
  if (!idx)
    return {};
  ArrayRef<int64_t> dataShape = getData().getType().getShape();
  ArrayRef<int64_t> idxShape = getIndices().getType().getShape();
  int64_t b = getBatchDims(), last = idxShape.back();
  auto strides = stridesOf(dataShape);
  int64_t inner = 1; // elements of one gathered slice
  for (size_t d = b + last; d < dataShape.size(); ++d)
    inner *= dataShape[d];
  int64_t perBatch = 1; // index tuples per batch entry
  for (size_t d = b; d + 1 < idxShape.size(); ++d)
    perBatch *= idxShape[d];
  return foldGather(*this, a.getData(), 0, [&](int64_t k) -> int64_t {
    int64_t tuple = k / inner, in = k % inner;
    int64_t batch = tuple / perBatch;
    SmallVector<int64_t> batchIdx = unflatten(batch, dataShape.take_front(b));
    int64_t off = in;
    for (int64_t d = 0; d < b; ++d)
      off += batchIdx[d] * strides[d];
    for (int64_t j = 0; j < last; ++j) {
      int64_t v = idx->i[tuple * last + j], n = dataShape[b + j];
      if (v < 0)
        v += n;
      if (v < 0 || v >= n)
        return -2;
      off += v * strides[b + j];
    }
    return off;
  });
}

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  if (getInputs().size() == 1)
    return getInputs()[0];
  auto rt = getType();
  if (tooBig(rt))
    return {};
  SmallVector<HostTensor> in;
  for (Attribute x : a.getInputs()) {
    auto t = toHost(x);
    if (!t)
      return {};
    in.push_back(std::move(*t));
  }
  int64_t axis = getAxis();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= rt.getDimSize(d);
  HostTensor out(rt);
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor &t : in) {
      int64_t chunk = outer ? t.numel() / outer : 0;
      for (int64_t j = 0; j < chunk; ++j, ++k) {
        if (out.isFloat())
          out.f[k] = t.f[o * chunk + j];
        else
          out.i[k] = t.i[o * chunk + j];
      }
    }
  return toAttr(out);
}

LogicalResult SplitOp::fold(FoldAdaptor a, SmallVectorImpl<OpFoldResult> &res) {
  if (getNumResults() == 1 && getResult(0).getType() == getInput().getType()) {
    res.push_back(getInput());
    return success();
  }
  auto in = toHost(a.getInput());
  if (!in)
    return failure();
  ArrayRef<int64_t> shape = in->shape();
  int64_t axis = getAxis(), outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t begin = 0;
  for (unsigned r = 0; r < getNumResults(); ++r) {
    HostTensor out(resultType(*this, r));
    int64_t len = getSplit()[r];
    for (int64_t k = 0; k < out.numel(); ++k) {
      int64_t in_ = k % inner, rest = k / inner;
      int64_t j = rest % len, o = rest / len;
      int64_t src = (o * shape[axis] + begin + j) * inner + in_;
      if (out.isFloat())
        out.f[k] = in->f[src];
      else
        out.i[k] = in->i[src];
    }
    begin += len;
    res.push_back(toAttr(out));
  }
  (void)outer;
  return success();
}

} // namespace cuts
