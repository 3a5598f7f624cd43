//===- CutsOps.cpp - type inference and verifiers of the cuts ops ---------===//
//
// inferReturnTypes is the shape inference of the dialect and, through
// InferTypeOpInterface, its verifier: an op whose declared result type is not
// the inferred one, or whose operands are inconsistent, fails verification
// with a message naming what disagrees.
//
//===----------------------------------------------------------------------===//
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "cuts/Dialect/Cuts/ConstEval.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;

namespace cuts {
namespace {

using Shape = SmallVector<int64_t>;

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

LogicalResult fail(std::optional<Location> loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

std::string shapeStr(ArrayRef<int64_t> s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k)
    out += (k ? "x" : "") + std::to_string(s[k]);
  return out + "]";
}

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

LogicalResult push(SmallVectorImpl<Type> &out, ArrayRef<int64_t> shape,
                   Type et) {
  out.push_back(RankedTensorType::get(shape, et));
  return success();
}

LogicalResult sameElementType(std::optional<Location> loc, Value a, Value b,
                              StringRef what) {
  if (typeOf(a).getElementType() != typeOf(b).getElementType())
    return fail(loc, what + " have different element types: " +
                         typeStr(typeOf(a).getElementType()) + " and " +
                         typeStr(typeOf(b).getElementType()));
  return success();
}

FailureOr<Shape> broadcast(std::optional<Location> loc, ArrayRef<int64_t> a,
                           ArrayRef<int64_t> b) {
  auto s = broadcastShapes(a, b);
  if (!s) {
    (void)fail(loc, "shapes " + shapeStr(a) + " and " + shapeStr(b) +
                        " do not broadcast");
    return failure();
  }
  return *s;
}

LogicalResult inferBinary(std::optional<Location> loc, Value a, Value b,
                          Type resultElement, SmallVectorImpl<Type> &out) {
  if (failed(sameElementType(loc, a, b, "operands")))
    return failure();
  auto s = broadcast(loc, typeOf(a).getShape(), typeOf(b).getShape());
  if (failed(s))
    return failure();
  return push(out, *s,
              resultElement ? resultElement : typeOf(a).getElementType());
}

// Checks that a per-spatial-axis attribute has one entry per axis.
LogicalResult checkSpatial(std::optional<Location> loc, StringRef name,
                           ArrayRef<int64_t> v, size_t n, int64_t minValue) {
  if (v.size() != n)
    return fail(loc, "'" + name + "' has " + Twine(v.size()) +
                         " entries, expected " + Twine(n));
  for (int64_t x : v)
    if (x < minValue)
      return fail(loc, "'" + name + "' entries must be >= " + Twine(minValue));
  return success();
}

// Output extent of a sliding window (conv and pooling), ONNX formula; with
// ceil_mode the last window must start inside the input or its begin padding.
int64_t windowOut(int64_t in, int64_t k, int64_t stride, int64_t dil,
                  int64_t padBegin, int64_t padEnd, bool ceilMode) {
  int64_t eff = dil * (k - 1) + 1;
  int64_t span = in + padBegin + padEnd - eff;
  if (span < 0)
    return 0;
  int64_t out = ceilMode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult inferPool(std::optional<Location> loc, Value x,
                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        bool ceilMode, bool channelsLast,
                        SmallVectorImpl<Type> &out) {
  auto t = typeOf(x);
  if (t.getRank() < 3)
    return fail(loc, "pooling input must have rank >= 3, got " +
                         shapeStr(t.getShape()));
  size_t s = t.getRank() - 2, sp = channelsLast ? 1 : 2;
  if (failed(checkSpatial(loc, "kernel_shape", kernel, s, 1)) ||
      failed(checkSpatial(loc, "strides", strides, s, 1)) ||
      failed(checkSpatial(loc, "pads", pads, 2 * s, 0)) ||
      failed(checkSpatial(loc, "dilations", dilations, s, 1)))
    return failure();
  Shape shape(t.getShape());
  for (size_t d = 0; d < s; ++d) {
    shape[d + sp] = windowOut(t.getDimSize(d + sp), kernel[d], strides[d],
                              dilations[d], pads[d], pads[d + s], ceilMode);
    if (shape[d + sp] < 1)
      return fail(loc, "pooling window larger than padded input on axis " +
                           Twine(d + sp));
  }
  return push(out, shape, t.getElementType());
}

LogicalResult checkAxes(std::optional<Location> loc, ArrayRef<int64_t> axes,
                        int64_t rank, bool allowEmpty) {
  if (axes.empty() && !allowEmpty)
    return fail(loc, "'axes' must not be empty");
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= rank)
      return fail(loc, "axis " + Twine(axes[k]) + " out of range for rank " +
                           Twine(rank));
    if (k && axes[k] <= axes[k - 1])
      return fail(loc, "'axes' must be sorted and unique");
  }
  return success();
}

LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                        int64_t limit) {
  if (axis < 0 || axis >= limit)
    return fail(loc, "axis " + Twine(axis) + " out of range [0, " +
                         Twine(limit) + ")");
  return success();
}

// numpy.matmul result shape (1-D operands are promoted and the added axis
// dropped again).
FailureOr<Shape> matmulShape(std::optional<Location> loc, ArrayRef<int64_t> a,
                             ArrayRef<int64_t> b) {
  if (a.empty() || b.empty()) {
    (void)fail(loc, "matmul operands must have rank >= 1");
    return failure();
  }
  Shape sa(a), sb(b);
  bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va)
    sa.insert(sa.begin(), 1);
  if (vb)
    sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back();
  int64_t k2 = sb[sb.size() - 2], n = sb.back();
  if (k != k2) {
    (void)fail(loc, "matmul inner dimensions differ: " + shapeStr(a) + " x " +
                        shapeStr(b));
    return failure();
  }
  auto batch = broadcast(loc, ArrayRef<int64_t>(sa).drop_back(2),
                         ArrayRef<int64_t>(sb).drop_back(2));
  if (failed(batch))
    return failure();
  Shape r = *batch;
  if (!va)
    r.push_back(m);
  if (!vb)
    r.push_back(n);
  return r;
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  if (getValue().getShapedType() != getType())
    return emitOpError("value type ")
           << getValue().getShapedType() << " differs from result type "
           << getType();
  return success();
}

LogicalResult ConstantOfShapeOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> loc,
                                                  Adaptor a,
                                                  SmallVectorImpl<Type> &out) {
  if (a.getValue().getNumElements() != 1)
    return fail(loc, "'value' must hold exactly one element");
  for (int64_t d : a.getShape())
    if (d < 0)
      return fail(loc, "'shape' entries must be >= 0");
  return push(out, a.getShape(), a.getValue().getElementType());
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  int64_t rank = typeOf(a.getData()).getRank();
  int64_t s = a.getStart(), e = a.getEnd();
  if (s < 0 || s > e || e > rank)
    return fail(loc, "start/end must satisfy 0 <= start <= end <= rank");
  return push(out, {e - s}, IntegerType::get(ctx, 64));
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  double start = a.getStart().convertToDouble();
  double limit = a.getLimit().convertToDouble();
  double delta = a.getDelta().convertToDouble();
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) ||
      !std::isfinite(delta))
    return fail(loc, "range needs finite start, limit and a non-zero delta");
  double n = std::ceil((limit - start) / delta);
  if (n > double(kMaxFoldElements))
    return fail(loc, "range of " + Twine(int64_t(n)) + " elements is too big");
  return push(out, {std::max<int64_t>(int64_t(n), 0)}, a.getElementType());
}

LogicalResult IdentityOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>, Adaptor a,
                                           SmallVectorImpl<Type> &out) {
  out.push_back(a.getInput().getType());
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>, Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  out.push_back(a.getX().getType());
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>, Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  out.push_back(a.getData().getType());
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &out) {
  if (!llvm::isa<FloatType, IntegerType>(a.getTo()))
    return fail(loc, "cannot cast to " + typeStr(a.getTo()));
  return push(out, typeOf(a.getInput()).getShape(), a.getTo());
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define CUTS_BINARY_INFER(OP, RESULT_ELEMENT)                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc, Adaptor a,   \
                                     SmallVectorImpl<Type> &out) {             \
    (void)ctx;                                                                 \
    return inferBinary(loc, a.getA(), a.getB(), RESULT_ELEMENT, out);          \
  }
CUTS_BINARY_INFER(AddOp, Type())
CUTS_BINARY_INFER(SubOp, Type())
CUTS_BINARY_INFER(MulOp, Type())
CUTS_BINARY_INFER(DivOp, Type())
CUTS_BINARY_INFER(ModOp, Type())
CUTS_BINARY_INFER(FModOp, Type())
CUTS_BINARY_INFER(MaxOp, Type())
CUTS_BINARY_INFER(MinOp, Type())
CUTS_BINARY_INFER(EqualOp, IntegerType::get(ctx, 1))
CUTS_BINARY_INFER(LessOp, IntegerType::get(ctx, 1))
CUTS_BINARY_INFER(AndOp, Type())
CUTS_BINARY_INFER(OrOp, Type())
CUTS_BINARY_INFER(XorOp, Type())
#undef CUTS_BINARY_INFER

LogicalResult PowOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc, Adaptor a,
                                      SmallVectorImpl<Type> &out) {
  auto s =
      broadcast(loc, typeOf(a.getX()).getShape(), typeOf(a.getY()).getShape());
  if (failed(s))
    return failure();
  return push(out, *s, typeOf(a.getX()).getElementType());
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  if (failed(sameElementType(loc, a.getX(), a.getY(), "X and Y")))
    return failure();
  auto s = broadcast(loc, typeOf(a.getCondition()).getShape(),
                     typeOf(a.getX()).getShape());
  if (failed(s))
    return failure();
  auto s2 = broadcast(loc, *s, typeOf(a.getY()).getShape());
  if (failed(s2))
    return failure();
  return push(out, *s2, typeOf(a.getX()).getElementType());
}

#define CUTS_UNARY_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     Adaptor a, SmallVectorImpl<Type> &out) {  \
    out.push_back(a.getX().getType());                                         \
    return success();                                                          \
  }
CUTS_UNARY_INFER(SqrtOp)
CUTS_UNARY_INFER(ExpOp)
CUTS_UNARY_INFER(LogOp)
CUTS_UNARY_INFER(ErfOp)
CUTS_UNARY_INFER(TanhOp)
CUTS_UNARY_INFER(SigmoidOp)
CUTS_UNARY_INFER(ReluOp)
CUTS_UNARY_INFER(NegOp)
CUTS_UNARY_INFER(AbsOp)
CUTS_UNARY_INFER(ReciprocalOp)
CUTS_UNARY_INFER(HardSwishOp)
CUTS_UNARY_INFER(SinOp)
CUTS_UNARY_INFER(CosOp)
CUTS_UNARY_INFER(TanOp)
CUTS_UNARY_INFER(AsinOp)
CUTS_UNARY_INFER(AcosOp)
CUTS_UNARY_INFER(AtanOp)
CUTS_UNARY_INFER(SinhOp)
CUTS_UNARY_INFER(CoshOp)
CUTS_UNARY_INFER(AsinhOp)
CUTS_UNARY_INFER(AcoshOp)
CUTS_UNARY_INFER(AtanhOp)
CUTS_UNARY_INFER(FloorOp)
CUTS_UNARY_INFER(CeilOp)
CUTS_UNARY_INFER(RoundOp)
CUTS_UNARY_INFER(LeakyReluOp)
CUTS_UNARY_INFER(HardSigmoidOp)
CUTS_UNARY_INFER(GeluOp)
CUTS_UNARY_INFER(ClipOp)
CUTS_UNARY_INFER(NotOp)
#undef CUTS_UNARY_INFER

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

// B's shape as a product reads it: its last two axes swapped when stored
// transposed (transB).
static SmallVector<int64_t> storedB(ArrayRef<int64_t> b, bool transB) {
  SmallVector<int64_t> s(b);
  if (transB && s.size() >= 2)
    std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  if (failed(sameElementType(loc, a.getA(), a.getB(), "A and B")))
    return failure();
  auto s = matmulShape(loc, typeOf(a.getA()).getShape(),
                       storedB(typeOf(a.getB()).getShape(), a.getTransB()));
  if (failed(s))
    return failure();
  return push(out, *s, typeOf(a.getA()).getElementType());
}

bool MatMulOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  if (inferred == actual)
    return true;
  // A 16-bit product's fp32 accumulators, stored as they are.
  auto i = llvm::dyn_cast<RankedTensorType>(inferred.front());
  auto a = llvm::dyn_cast<RankedTensorType>(actual.front());
  return inferred.size() == 1 && actual.size() == 1 && i && a &&
         i.getShape() == a.getShape() && a.getElementType().isF32() &&
         (i.getElementType().isF16() || i.getElementType().isBF16());
}

LogicalResult MatMulAddOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  if (failed(sameElementType(loc, a.getA(), a.getB(), "A and B")) ||
      failed(sameElementType(loc, a.getA(), a.getC(), "A and C")))
    return failure();
  auto s = matmulShape(loc, typeOf(a.getA()).getShape(),
                       storedB(typeOf(a.getB()).getShape(), a.getTransB()));
  if (failed(s))
    return failure();
  auto b = broadcastShapes(*s, typeOf(a.getC()).getShape());
  if (!b || ArrayRef<int64_t>(*b) != ArrayRef<int64_t>(*s))
    return fail(loc, "C of shape " + shapeStr(typeOf(a.getC()).getShape()) +
                         " does not broadcast to the product's shape " +
                         shapeStr(*s));
  return push(out, *s, typeOf(a.getA()).getElementType());
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &out) {
  auto ta = typeOf(a.getA()), tb = typeOf(a.getB());
  if (ta.getRank() != 2 || tb.getRank() != 2)
    return fail(loc, "Gemm operands must be 2-D, got " +
                         shapeStr(ta.getShape()) + " and " +
                         shapeStr(tb.getShape()));
  if (failed(sameElementType(loc, a.getA(), a.getB(), "A and B")))
    return failure();
  int64_t m = ta.getDimSize(a.getTransA() ? 1 : 0);
  int64_t k = ta.getDimSize(a.getTransA() ? 0 : 1);
  int64_t k2 = tb.getDimSize(a.getTransB() ? 1 : 0);
  int64_t n = tb.getDimSize(a.getTransB() ? 0 : 1);
  if (k != k2)
    return fail(loc, "Gemm inner dimensions differ: " + Twine(k) + " and " +
                         Twine(k2));
  if (Value c = a.getC()) {
    if (failed(sameElementType(loc, a.getA(), c, "A and C")))
      return failure();
    auto b = broadcastShapes({m, n}, typeOf(c).getShape());
    if (!b || b->size() != 2 || (*b)[0] != m || (*b)[1] != n)
      return fail(loc, "C of shape " + shapeStr(typeOf(c).getShape()) +
                           " does not broadcast to " + shapeStr({m, n}));
  }
  return push(out, {m, n}, ta.getElementType());
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &out) {
  auto tx = typeOf(a.getX()), tw = typeOf(a.getW());
  if (tx.getRank() < 3 || tw.getRank() != tx.getRank())
    return fail(loc, "Conv needs X and W of equal rank >= 3, got " +
                         shapeStr(tx.getShape()) + " and " +
                         shapeStr(tw.getShape()));
  if (failed(sameElementType(loc, a.getX(), a.getW(), "X and W")))
    return failure();
  size_t s = tx.getRank() - 2;
  if (failed(checkSpatial(loc, "strides", a.getStrides(), s, 1)) ||
      failed(checkSpatial(loc, "pads", a.getPads(), 2 * s, 0)) ||
      failed(checkSpatial(loc, "dilations", a.getDilations(), s, 1)))
    return failure();
  // Channels on axis 1 (NCHW), or innermost with channels_last.
  const bool last = bool(a.getChannelsLast());
  const size_t ch = last ? tx.getRank() - 1 : 1, sp = last ? 1 : 2;
  int64_t g = a.getGroup(), c = tx.getDimSize(ch), m = tw.getDimSize(0);
  if (g < 1 || c % g != 0 || m % g != 0)
    return fail(loc, "group " + Twine(g) + " must divide the " + Twine(c) +
                         " input and " + Twine(m) + " output channels");
  if (tw.getDimSize(ch) * g != c)
    return fail(loc, "W " + shapeStr(tw.getShape()) + " expects " +
                         Twine(tw.getDimSize(ch) * g) +
                         " input channels, X has " + Twine(c));
  if (Value b = a.getB()) {
    if (typeOf(b).getShape() != ArrayRef<int64_t>{m})
      return fail(loc, "B must have shape [" + Twine(m) + "], got " +
                           shapeStr(typeOf(b).getShape()));
    if (failed(sameElementType(loc, a.getX(), b, "X and B")))
      return failure();
  }
  Shape shape{tx.getDimSize(0)};
  if (!last)
    shape.push_back(m);
  for (size_t d = 0; d < s; ++d) {
    int64_t o = windowOut(tx.getDimSize(d + sp), tw.getDimSize(d + sp),
                          a.getStrides()[d], a.getDilations()[d],
                          a.getPads()[d], a.getPads()[d + s], false);
    if (o < 1)
      return fail(loc,
                  "kernel larger than padded input on axis " + Twine(d + sp));
    shape.push_back(o);
  }
  if (last)
    shape.push_back(m);
  return push(out, shape, tx.getElementType());
}

LogicalResult ConvSumOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto tx = typeOf(a.getX()), tx2 = typeOf(a.getX2()), tw = typeOf(a.getW());
  if (tx.getRank() != 4 || tx2.getRank() != 4 || tw.getRank() != 4 ||
      tw.getDimSize(1) != 1 || tw.getDimSize(2) != 1)
    return fail(loc, "ConvSum needs channels-last X and X2 of rank 4 and W "
                     "of M x 1 x 1 x (C + C2)");
  if (failed(sameElementType(loc, a.getX(), a.getW(), "X and W")) ||
      failed(sameElementType(loc, a.getX2(), a.getW(), "X2 and W")) ||
      failed(checkSpatial(loc, "strides", a.getStrides(), 2, 1)) ||
      failed(checkSpatial(loc, "strides2", a.getStrides2(), 2, 1)))
    return failure();
  const int64_t m = tw.getDimSize(0);
  if (tx.getDimSize(3) + tx2.getDimSize(3) != tw.getDimSize(3))
    return fail(loc, "W " + shapeStr(tw.getShape()) + " expects " +
                         Twine(tw.getDimSize(3)) + " channels, X and X2 have " +
                         Twine(tx.getDimSize(3) + tx2.getDimSize(3)));
  if (Value b = a.getB())
    if (typeOf(b).getShape() != ArrayRef<int64_t>{m} ||
        failed(sameElementType(loc, a.getX(), b, "X and B")))
      return fail(loc, "B must have shape [" + Twine(m) + "] and X's type");
  Shape shape{tx.getDimSize(0)};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t o =
        windowOut(tx.getDimSize(d + 1), 1, a.getStrides()[d], 1, 0, 0, false);
    const int64_t o2 =
        windowOut(tx2.getDimSize(d + 1), 1, a.getStrides2()[d], 1, 0, 0, false);
    if (o != o2 || tx.getDimSize(0) != tx2.getDimSize(0))
      return fail(
          loc, "X and X2 give different outputs: " + shapeStr(tx.getShape()) +
                   " and " + shapeStr(tx2.getShape()));
    shape.push_back(o);
  }
  shape.push_back(m);
  return push(out, shape, tx.getElementType());
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &out) {
  auto tx = typeOf(a.getX()), tw = typeOf(a.getW());
  if (tx.getRank() < 3 || tw.getRank() != tx.getRank())
    return fail(loc, "ConvTranspose needs X and W of equal rank >= 3");
  if (failed(sameElementType(loc, a.getX(), a.getW(), "X and W")) ||
      (a.getB() && failed(sameElementType(loc, a.getX(), a.getB(), "X and B"))))
    return failure();
  size_t s = tx.getRank() - 2;
  if (failed(checkSpatial(loc, "strides", a.getStrides(), s, 1)) ||
      failed(checkSpatial(loc, "pads", a.getPads(), 2 * s, 0)) ||
      failed(checkSpatial(loc, "dilations", a.getDilations(), s, 1)) ||
      failed(checkSpatial(loc, "output_padding", a.getOutputPadding(), s, 0)))
    return failure();
  int64_t g = a.getGroup(), c = tx.getDimSize(1);
  if (g < 1 || tw.getDimSize(0) != c || c % g != 0)
    return fail(loc, "W " + shapeStr(tw.getShape()) + " does not match " +
                         Twine(c) + " input channels in " + Twine(g) +
                         " groups");
  int64_t m = tw.getDimSize(1) * g;
  if (Value b = a.getB())
    if (typeOf(b).getShape() != ArrayRef<int64_t>{m})
      return fail(loc, "B must have shape [" + Twine(m) + "]");
  Shape shape{tx.getDimSize(0), m};
  for (size_t d = 0; d < s; ++d) {
    int64_t o = a.getStrides()[d] * (tx.getDimSize(d + 2) - 1) +
                a.getOutputPadding()[d] +
                (tw.getDimSize(d + 2) - 1) * a.getDilations()[d] + 1 -
                a.getPads()[d] - a.getPads()[d + s];
    if (o < 1)
      return fail(loc, "empty output on axis " + Twine(d + 2));
    shape.push_back(o);
  }
  return push(out, shape, tx.getElementType());
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, pooling, reductions
//===----------------------------------------------------------------------===//

LogicalResult
BatchNormalizationOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &out) {
  auto tx = typeOf(a.getX());
  if (tx.getRank() < 2)
    return fail(loc, "BatchNormalization input must have rank >= 2");
  int64_t c = tx.getDimSize(1);
  for (Value v : {a.getScale(), a.getB(), a.getMean(), a.getVar()})
    if (typeOf(v).getShape() != ArrayRef<int64_t>{c})
      return fail(loc, "scale, B, mean and var must have shape [" + Twine(c) +
                           "], got " + shapeStr(typeOf(v).getShape()));
  out.push_back(tx);
  return success();
}

LogicalResult
LayerNormalizationOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &out) {
  auto tx = typeOf(a.getX());
  if (failed(checkAxis(loc, a.getAxis(), tx.getRank())))
    return failure();
  ArrayRef<int64_t> norm = tx.getShape().drop_front(a.getAxis());
  for (Value v : {a.getScale(), a.getB()}) {
    if (!v)
      continue;
    if (failed(sameElementType(loc, a.getX(), v, "X and scale/B")))
      return failure();
    auto b = broadcastShapes(norm, typeOf(v).getShape());
    if (!b || ArrayRef<int64_t>(*b) != norm)
      return fail(loc, "scale/B of shape " + shapeStr(typeOf(v).getShape()) +
                           " does not broadcast to the normalised shape " +
                           shapeStr(norm));
  }
  out.push_back(tx);
  Shape stat(tx.getShape());
  std::fill(stat.begin() + a.getAxis(), stat.end(), 1);
  auto f32 = Float32Type::get(tx.getContext());
  (void)push(out, stat, f32);
  return push(out, stat, f32);
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getInput());
  if (failed(checkAxis(loc, a.getAxis(), std::max<int64_t>(t.getRank(), 1))))
    return failure();
  out.push_back(t);
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  return inferPool(loc, a.getX(), a.getKernelShape(), a.getStrides(),
                   a.getPads(), a.getDilations(), a.getCeilMode(),
                   bool(a.getChannelsLast()), out);
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor a,
                                              SmallVectorImpl<Type> &out) {
  return inferPool(loc, a.getX(), a.getKernelShape(), a.getStrides(),
                   a.getPads(), a.getDilations(), a.getCeilMode(),
                   bool(a.getChannelsLast()), out);
}

LogicalResult
GlobalAveragePoolOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc, Adaptor a,
                                      SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getX());
  if (t.getRank() < 3)
    return fail(loc, "GlobalAveragePool input must have rank >= 3");
  Shape s(t.getShape());
  std::fill(s.begin() + 2, s.end(), 1);
  return push(out, s, t.getElementType());
}

static LogicalResult inferReduce(std::optional<Location> loc, Value data,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &out) {
  auto t = typeOf(data);
  if (failed(checkAxes(loc, axes, t.getRank(), /*allowEmpty=*/false)))
    return failure();
  Shape s;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      s.push_back(t.getDimSize(d));
    else if (keepdims)
      s.push_back(1);
  }
  return push(out, s, t.getElementType());
}

#define CUTS_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc, Adaptor a,   \
                                     SmallVectorImpl<Type> &out) {             \
    return inferReduce(loc, a.getData(), a.getAxes(), a.getKeepdims(), out);   \
  }
CUTS_REDUCE_INFER(ReduceMeanOp)
CUTS_REDUCE_INFER(ReduceSumOp)
CUTS_REDUCE_INFER(ReduceMaxOp)
#undef CUTS_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getInput());
  int64_t axis = a.getAxis();
  if (axis < 0 || axis > t.getRank())
    return fail(loc, "axis " + Twine(axis) + " out of range [0, " +
                         Twine(t.getRank()) + "]");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < t.getRank(); ++d)
    (d < axis ? outer : inner) *= t.getDimSize(d);
  return push(out, {outer, inner}, t.getElementType());
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  int64_t n = 1;
  for (int64_t d : a.getShape()) {
    if (d < 0)
      return fail(loc, "'shape' must be fully resolved (no -1)");
    n *= d;
  }
  if (n != t.getNumElements())
    return fail(loc, "cannot reshape " + shapeStr(t.getShape()) + " (" +
                         Twine(t.getNumElements()) + " elements) to " +
                         shapeStr(a.getShape()));
  return push(out, a.getShape(), t.getElementType());
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  ArrayRef<int64_t> perm = a.getPerm();
  if (int64_t(perm.size()) != t.getRank())
    return fail(loc, "'perm' has " + Twine(perm.size()) + " entries for rank " +
                         Twine(t.getRank()));
  Shape s;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t p : perm) {
    if (p < 0 || p >= t.getRank() || !seen.insert(p).second)
      return fail(loc, "'perm' is not a permutation of [0, rank)");
    s.push_back(t.getDimSize(p));
  }
  return push(out, s, t.getElementType());
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  if (a.getInputs().empty())
    return fail(loc, "Concat needs at least one input");
  auto t0 = typeOf(a.getInputs()[0]);
  int64_t axis = a.getAxis();
  if (failed(checkAxis(loc, axis, std::max<int64_t>(t0.getRank(), 1))))
    return failure();
  Shape s(t0.getShape());
  if (s.empty())
    return fail(loc, "Concat inputs must have rank >= 1");
  s[axis] = 0;
  for (Value v : a.getInputs()) {
    auto t = typeOf(v);
    if (t.getElementType() != t0.getElementType() ||
        t.getRank() != t0.getRank())
      return fail(loc, "Concat inputs differ in rank or element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != t0.getDimSize(d))
        return fail(loc, "Concat inputs " + shapeStr(t0.getShape()) + " and " +
                             shapeStr(t.getShape()) + " differ off axis " +
                             Twine(axis));
    s[axis] += t.getDimSize(axis);
  }
  return push(out, s, t0.getElementType());
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getInput());
  int64_t axis = a.getAxis();
  if (failed(checkAxis(loc, axis, t.getRank())))
    return failure();
  int64_t sum = 0;
  for (int64_t p : a.getSplit()) {
    if (p < 0)
      return fail(loc, "'split' entries must be >= 0");
    sum += p;
  }
  if (sum != t.getDimSize(axis))
    return fail(loc, "'split' sums to " + Twine(sum) + ", axis " + Twine(axis) +
                         " has " + Twine(t.getDimSize(axis)));
  for (int64_t p : a.getSplit()) {
    Shape s(t.getShape());
    s[axis] = p;
    out.push_back(RankedTensorType::get(s, t.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  size_t r = t.getRank();
  if (a.getStarts().size() != r || a.getEnds().size() != r ||
      a.getSteps().size() != r)
    return fail(loc,
                "starts/ends/steps need one entry per axis (" + Twine(r) + ")");
  Shape s;
  for (size_t d = 0; d < r; ++d) {
    int64_t st = a.getStarts()[d], en = a.getEnds()[d], sp = a.getSteps()[d];
    int64_t dim = t.getDimSize(d);
    if (sp == 0)
      return fail(loc, "slice step must not be 0");
    bool ok = sp > 0 ? (st >= 0 && st <= dim && en >= 0 && en <= dim)
                     : (st >= -1 && st < dim && en >= -1 && en < dim);
    if (!ok)
      return fail(loc,
                  "slice bounds on axis " + Twine(d) + " are not normalised");
    // Overflow-safe ceil((end - start) / step); start and end are within
    // [-1, dim], so their difference cannot overflow, the step can.
    int64_t n = 0;
    if (sp > 0 && en > st)
      n = (en - st - 1) / sp + 1;
    else if (sp < 0 && st > en)
      n = sp == INT64_MIN ? 1 : (st - en - 1) / -sp + 1;
    s.push_back(n);
  }
  return push(out, s, t.getElementType());
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  int64_t axis = a.getAxis();
  if (failed(checkAxis(loc, axis, t.getRank())))
    return failure();
  Shape s(t.getShape().take_front(axis));
  llvm::append_range(s, typeOf(a.getIndices()).getShape());
  llvm::append_range(s, t.getShape().drop_front(axis + 1));
  return push(out, s, t.getElementType());
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor a,
                                                 SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData()), ti = typeOf(a.getIndices());
  if (failed(checkAxis(loc, a.getAxis(), t.getRank())))
    return failure();
  if (t.getRank() != ti.getRank())
    return fail(loc, "data and indices must have the same rank");
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (d != int64_t(a.getAxis()) && ti.getDimSize(d) > t.getDimSize(d))
      return fail(loc, "indices are larger than data on axis " + Twine(d));
  return push(out, ti.getShape(), t.getElementType());
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor a,
                                           SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData()), ti = typeOf(a.getIndices());
  int64_t b = a.getBatchDims(), q = ti.getRank(), r = t.getRank();
  if (q < 1 || b < 0 || b >= std::min(q, r + 1))
    return fail(loc, "batch_dims must be below the ranks of data and indices");
  int64_t last = ti.getDimSize(q - 1);
  if (last < 1 || b + last > r)
    return fail(loc, "indices' last axis (" + Twine(last) +
                         ") indexes more axes than data has after batch_dims");
  for (int64_t d = 0; d < b; ++d)
    if (t.getDimSize(d) != ti.getDimSize(d))
      return fail(loc, "data and indices differ on batch axis " + Twine(d));
  Shape s(ti.getShape().drop_back());
  llvm::append_range(s, t.getShape().drop_front(b + last));
  return push(out, s, t.getElementType());
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  int64_t r = t.getRank() + int64_t(a.getAxes().size());
  if (failed(checkAxes(loc, a.getAxes(), r, /*allowEmpty=*/false)))
    return failure();
  Shape s;
  int64_t k = 0;
  for (int64_t d = 0; d < r; ++d)
    s.push_back(llvm::is_contained(a.getAxes(), d) ? 1 : t.getDimSize(k++));
  return push(out, s, t.getElementType());
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  if (failed(checkAxes(loc, a.getAxes(), t.getRank(), /*allowEmpty=*/false)))
    return failure();
  Shape s;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!llvm::is_contained(a.getAxes(), d))
      s.push_back(t.getDimSize(d));
    else if (t.getDimSize(d) != 1)
      return fail(loc, "cannot squeeze axis " + Twine(d) + " of size " +
                           Twine(t.getDimSize(d)));
  }
  return push(out, s, t.getElementType());
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getInput());
  for (int64_t d : a.getShape())
    if (d < 0)
      return fail(loc, "'shape' entries must be >= 0");
  auto s = broadcast(loc, t.getShape(), a.getShape());
  if (failed(s))
    return failure();
  return push(out, *s, t.getElementType());
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc, Adaptor a,
                                      SmallVectorImpl<Type> &out) {
  auto t = typeOf(a.getData());
  int64_t r = t.getRank();
  if (int64_t(a.getPads().size()) != 2 * r)
    return fail(loc, "'pads' needs " + Twine(2 * r) + " entries, has " +
                         Twine(a.getPads().size()));
  Shape s;
  for (int64_t d = 0; d < r; ++d) {
    int64_t o = t.getDimSize(d) + a.getPads()[d] + a.getPads()[d + r];
    if (o < 0)
      return fail(loc,
                  "negative pads remove more than axis " + Twine(d) + " holds");
    s.push_back(o);
  }
  return push(out, s, t.getElementType());
}

LogicalResult PadOp::verify() {
  StringRef m = getMode();
  if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap")
    return emitOpError("mode must be constant, reflect, edge or wrap, got \"")
           << m << "\"";
  int64_t r = getData().getType().getRank();
  if (int64_t(getPads().size()) != 2 * r)
    return emitOpError("'pads' needs ")
           << 2 * r << " entries, has " << getPads().size();
  if (m == "reflect")
    for (int64_t d = 0; d < r; ++d) {
      int64_t dim = getData().getType().getDimSize(d);
      if (std::max(getPads()[d], getPads()[d + r]) > dim - 1)
        return emitOpError("reflect pads on axis ")
               << d << " must be smaller than its size " << dim;
    }
  return success();
}

LogicalResult GroupOp::verify() {
  auto yield = llvm::cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values whose types are not the group's results";
  return success();
}

} // namespace cuts

#define GET_OP_CLASSES
#include "cuts/Dialect/Cuts/CutsOps.cpp.inc"
