//===- Normalize.cpp - the normalizations without a dialect op ------------===//
//
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
// LpNormalization, LRN and GlobalMaxPool, written with the dialect's
// reductions and elementwise ops. Statistics are taken in fp32 whatever the
// input's type (the precision policy's rule for normalization statistics).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

#include <cmath>
#include <numeric>

namespace cuts::import {

namespace {
// Axes 2 .. rank-1: the spatial axes after N and C.
std::vector<int64_t> spatialAxes(int64_t rank) {
  std::vector<int64_t> axes(size_t(rank - 2));
  std::iota(axes.begin(), axes.end(), 2);
  return axes;
}
} // namespace

// (x - mean) / sqrt(var + epsilon) over `axes`, in fp32.
Value Importer::standardize(Value x, ArrayRef<int64_t> axes, double epsilon) {
  if (!x)
    return nullptr;
  Type f32 = builder.getF32Type();
  Value v = castTo(x, f32);
  Value centred = make<SubOp>({v, reduce("mean", v, axes, true)});
  Value var = reduce("mean", make<MulOp>({centred, centred}), axes, true);
  return make<DivOp>(
      {centred,
       make<SqrtOp>({make<AddOp>({var, scalarConstant(f32, epsilon)})})});
}

// A per-channel [C] tensor shaped to broadcast along axis 1 of rank `rank`.
Value Importer::perChannel(Value v, int64_t rank) {
  if (!v)
    return nullptr;
  SmallVector<int64_t> shape(size_t(rank), 1);
  shape[1] = typeOf(v).getNumElements();
  return make<ReshapeOp>({v}, {named("shape", ints(shape))});
}

LogicalResult Importer::convInstanceNorm(const onnx::NodeProto &) {
  auto x = required(0), scale = required(1), bias = required(2);
  auto eps = attrFloat("epsilon", 1e-5f);
  if (failed(x) || failed(scale) || failed(bias) || failed(eps))
    return failure();
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  if (rank < 3)
    return nodeFail("the input has rank " + Twine(rank) + ", not 3 or more");
  std::vector<int64_t> spatial = spatialAxes(rank);
  Type f32 = builder.getF32Type();
  Value y = make<AddOp>({make<MulOp>({standardize(*x, spatial, *eps),
                                      castTo(perChannel(*scale, rank), f32)}),
                         castTo(perChannel(*bias, rank), f32)});
  y = castTo(y, type.getElementType());
  return y ? define(0, y) : failure();
}

// GroupNormalization: the channels in num_groups groups, each standardized
// over its channels and the spatial axes; scale and bias are per channel
// (opset 21) or per group (opset 18).
LogicalResult Importer::convGroupNorm(const onnx::NodeProto &) {
  auto x = required(0), scale = required(1), bias = required(2);
  auto eps = attrFloat("epsilon", 1e-5f);
  auto groups = attrInt("num_groups", 0);
  auto stash = attrInt("stash_type", 1);
  if (failed(x) || failed(scale) || failed(bias) || failed(eps) ||
      failed(groups) || failed(stash))
    return failure();
  if (*stash != 1)
    return nodeFail("stash_type " + Twine(*stash) + " is not supported (1)");
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  if (rank < 3)
    return nodeFail("the input has rank " + Twine(rank) + ", not 3 or more");
  const int64_t c = type.getDimSize(1), g = *groups;
  if (g <= 0 || c % g != 0)
    return nodeFail("num_groups " + Twine(g) + " does not divide the " +
                    Twine(c) + " channels");
  const int64_t perGroupScale = opset < 21 ? g : c;
  for (Value v : {*scale, *bias})
    if (typeOf(v).getRank() != 1 || typeOf(v).getDimSize(0) != perGroupScale)
      return nodeFail("scale and bias must have " + Twine(perGroupScale) +
                      " elements (one per " +
                      (opset < 21 ? "group" : "channel") + ")");
  SmallVector<int64_t> grouped = {
      type.getDimSize(0), g,
      type.getNumElements() / std::max<int64_t>(1, type.getDimSize(0) * g)};
  Value y = standardize(make<ReshapeOp>({*x}, {named("shape", ints(grouped))}),
                        {2}, *eps);
  y = make<ReshapeOp>({y}, {named("shape", ints(type.getShape()))});
  auto channelwise = [&](Value v) -> Value {
    if (opset < 21) { // one value per group: repeat it over its channels
      v = make<ReshapeOp>({v}, {named("shape", ints({g, 1}))});
      v = make<ExpandOp>({v}, {named("shape", ints({g, c / g}))});
    }
    return castTo(perChannel(v, rank), builder.getF32Type());
  };
  y = make<AddOp>({make<MulOp>({y, channelwise(*scale)}), channelwise(*bias)});
  y = castTo(y, type.getElementType());
  return y ? define(0, y) : failure();
}

// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`,
// the epsilon of ONNX's function body.
LogicalResult Importer::convMeanVarianceNorm(const onnx::NodeProto &) {
  auto x = required(0);
  auto given = attrInts("axes");
  if (failed(x) || failed(given))
    return failure();
  auto type = typeOf(*x);
  std::vector<int64_t> axes = *given ? **given : std::vector<int64_t>{0, 2, 3};
  if (failed(normaliseAxes(axes, type.getRank())))
    return failure();
  Type f32 = builder.getF32Type();
  Value v = castTo(*x, f32);
  Value centred = make<SubOp>({v, reduce("mean", v, axes, true)});
  Value var = reduce("mean", make<MulOp>({centred, centred}), axes, true);
  Value y = make<DivOp>(
      {centred, make<AddOp>({make<SqrtOp>({var}), scalarConstant(f32, 1e-9)})});
  y = castTo(y, type.getElementType());
  return y ? define(0, y) : failure();
}

// LpNormalization: x / ||x||_p along axis (p 1 or 2); 0 where the norm is 0.
LogicalResult Importer::convLpNorm(const onnx::NodeProto &) {
  auto x = required(0);
  auto axis = attrInt("axis", -1), p = attrInt("p", 2);
  if (failed(x) || failed(axis) || failed(p))
    return failure();
  if (*p != 1 && *p != 2)
    return nodeFail("p " + Twine(*p) + " is not 1 or 2");
  std::vector<int64_t> axes = {*axis};
  if (failed(normaliseAxes(axes, typeOf(*x).getRank())))
    return failure();
  Type e = typeOf(*x).getElementType();
  Value norm =
      *p == 1
          ? reduce("sum", make<AbsOp>({*x}), axes, true)
          : make<SqrtOp>({reduce("sum", make<MulOp>({*x, *x}), axes, true)});
  Value zero = scalarConstant(e, 0);
  Value y = make<WhereOp>(
      {make<EqualOp>({norm, zero}), zero, make<DivOp>({*x, norm})});
  return y ? define(0, y) : failure();
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta.
// The window sum is a convolution with ones over the channel axis of
// [N, 1, C, H * W]: the conv kernels then do the work.
LogicalResult Importer::convLRN(const onnx::NodeProto &) {
  auto x = required(0);
  auto alpha = attrFloat("alpha", 1e-4f), beta = attrFloat("beta", 0.75f),
       bias = attrFloat("bias", 1.0f);
  auto size = attrInt("size", 0);
  if (failed(x) || failed(alpha) || failed(beta) || failed(bias) ||
      failed(size))
    return failure();
  auto type = typeOf(*x);
  if (type.getRank() < 3)
    return nodeFail("the input has rank " + Twine(type.getRank()) +
                    ", not 3 or more");
  if (*size <= 0 || *size > (int64_t(1) << 20))
    return nodeFail("size " + Twine(*size) + " is not positive");
  const int64_t n = type.getDimSize(0), c = type.getDimSize(1);
  const int64_t rest = type.getNumElements() / std::max<int64_t>(1, n * c);
  Type f32 = builder.getF32Type();
  Value v = castTo(*x, f32);
  Value sq = make<ReshapeOp>({make<MulOp>({v, v})},
                             {named("shape", ints({n, 1, c, rest}))});
  auto wType = RankedTensorType::get({1, 1, *size, 1}, f32);
  Value ones = builder.create<ConstantOp>(
      loc, wType, DenseElementsAttr::get(wType, builder.getF32FloatAttr(1)));
  const int64_t before = (*size - 1) / 2, after = *size / 2; // ceil((s-1)/2)
  Value sum = make<ConvOp>(
      {sq, ones}, {named("strides", ints({1, 1})),
                   named("pads", ints({before, 0, after, 0})),
                   named("dilations", ints({1, 1})), named("group", i64(1))});
  sum = make<ReshapeOp>({sum}, {named("shape", ints(type.getShape()))});
  Value denom = make<AddOp>(
      {scalarConstant(f32, *bias),
       make<MulOp>(
           {scalarConstant(f32, double(*alpha) / double(*size)), sum})});
  Value y = make<DivOp>({v, make<PowOp>({denom, scalarConstant(f32, *beta)})});
  y = castTo(y, type.getElementType());
  return y ? define(0, y) : failure();
}

// GlobalMaxPool: the max over every spatial axis, kept as extent 1.
LogicalResult Importer::convGlobalMaxPool(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  const int64_t rank = typeOf(*x).getRank();
  if (rank < 3)
    return nodeFail("the input has rank " + Twine(rank) + ", not 3 or more");
  std::vector<int64_t> spatial = spatialAxes(rank);
  Value y = reduce("max", *x, spatial, true);
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
