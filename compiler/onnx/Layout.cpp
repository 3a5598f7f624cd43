//===- Layout.cpp - tensors rearranged or built from positions ------------===//
//
// DepthToSpace, SpaceToDepth and Tile as reshapes, transposes and expands
// (the data-movement passes then merge them); EyeLike and OneHot as a
// comparison of positions, which folds to a constant where it can.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

namespace cuts::import {

// The longest list of positions built as a constant (EyeLike, OneHot).
constexpr int64_t kMaxPositions = int64_t(1) << 24;

Value Importer::reshaped(Value v, ArrayRef<int64_t> shape) {
  return make<ReshapeOp>({v}, {named("shape", ints(shape))});
}

// DepthToSpace and SpaceToDepth (DCR or CRD) on [N, C, H, W]: a reshape to
// rank 6, a transpose and a reshape back.
LogicalResult Importer::convDepthSpace(const onnx::NodeProto &n) {
  const bool toSpace = n.op_type() == "DepthToSpace";
  auto x = required(0);
  auto block = attrInt("blocksize", 0);
  auto mode = attrString("mode", "DCR");
  if (failed(x) || failed(block) || failed(mode))
    return failure();
  auto type = typeOf(*x);
  if (type.getRank() != 4)
    return nodeFail("the input has rank " + Twine(type.getRank()) + ", not 4");
  const int64_t b = *block, N = type.getDimSize(0), C = type.getDimSize(1),
                H = type.getDimSize(2), W = type.getDimSize(3);
  if (b <= 0 || b > (int64_t(1) << 20))
    return nodeFail("blocksize " + Twine(b) + " is not in [1, 2^20]");
  if (!toSpace && C > kMaxElements / (b * b))
    return nodeFail("the result has more than 2^40 channels");
  if (*mode != "DCR" && *mode != "CRD")
    return nodeFail("mode '" + *mode + "' is not DCR or CRD");
  const bool dcr = *mode == "DCR";
  Value y;
  if (toSpace) {
    if (C % (b * b) != 0)
      return nodeFail("the " + Twine(C) + " channels are not a multiple of " +
                      Twine(b * b));
    const int64_t c = C / (b * b);
    y = reshaped(*x, dcr ? SmallVector<int64_t>{N, b, b, c, H, W}
                         : SmallVector<int64_t>{N, c, b, b, H, W});
    SmallVector<int64_t> perm = dcr ? SmallVector<int64_t>{0, 3, 4, 1, 5, 2}
                                    : SmallVector<int64_t>{0, 1, 4, 2, 5, 3};
    y = make<TransposeOp>({y}, {named("perm", ints(perm))});
    y = reshaped(y, {N, c, H * b, W * b});
  } else {
    if (H % b != 0 || W % b != 0)
      return nodeFail("the spatial extents " + Twine(H) + "x" + Twine(W) +
                      " are not multiples of " + Twine(b));
    y = reshaped(*x, {N, C, H / b, b, W / b, b});
    SmallVector<int64_t> perm = dcr ? SmallVector<int64_t>{0, 3, 5, 1, 2, 4}
                                    : SmallVector<int64_t>{0, 1, 3, 5, 2, 4};
    y = make<TransposeOp>({y}, {named("perm", ints(perm))});
    y = reshaped(y, {N, C * b * b, H / b, W / b});
  }
  return y ? define(0, y) : failure();
}

// Tile: for each repeated axis, the axes from it on are one block that an
// expand repeats r times.
LogicalResult Importer::convTile(const onnx::NodeProto &) {
  auto x = required(0);
  auto repeats = constInts(1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  SmallVector<int64_t> shape(typeOf(*x).getShape());
  if (repeats->size() != shape.size())
    return nodeFail("repeats has " + Twine(repeats->size()) +
                    " values for an input of rank " + Twine(shape.size()));
  SmallVector<int64_t> out = shape;
  for (size_t a = 0; a < shape.size(); ++a) {
    int64_t r = (*repeats)[a];
    if (r < 0)
      return nodeFail("repeats[" + Twine(a) + "] is negative");
    if (shape[a] != 0 && r > kMaxElements / shape[a])
      return nodeFail("the result has more than 2^40 elements");
    out[a] = shape[a] * r;
  }
  if (tooManyElements(out))
    return nodeFail("the result has more than 2^40 elements");
  Value y = *x;
  for (size_t a = 0; a < shape.size() && y; ++a) {
    int64_t r = (*repeats)[a];
    if (r == 1)
      continue;
    // [outer, 1, inner] expanded to [outer, r, inner]: rank 3 at most.
    SmallVector<int64_t> cur(typeOf(y).getShape());
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < cur.size(); ++i)
      (i < a ? outer : inner) *= cur[i];
    y = make<ExpandOp>({reshaped(y, {outer, 1, inner})},
                       {named("shape", ints({outer, r, inner}))});
    cur[a] *= r;
    y = reshaped(y, cur);
  }
  return y ? define(0, y) : failure();
}

// EyeLike: ones where column - row == k, of the input's shape.
LogicalResult Importer::convEyeLike(const onnx::NodeProto &) {
  auto x = required(0);
  auto k = attrInt("k", 0);
  auto dtype = attrInt("dtype", -1);
  if (failed(x) || failed(k) || failed(dtype))
    return failure();
  auto type = typeOf(*x);
  if (type.getRank() != 2)
    return nodeFail("the input has rank " + Twine(type.getRank()) + ", not 2");
  if (type.getDimSize(0) > kMaxPositions || type.getDimSize(1) > kMaxPositions)
    return nodeFail("an extent is above 2^24");
  Type e = type.getElementType();
  if (*dtype >= 0) {
    auto t = elementType(int32_t(*dtype), "dtype");
    if (failed(t))
      return failure();
    e = *t;
  }
  Type i64t = builder.getI64Type();
  Value rows = make<AddOp>({positionsAlong(type.getDimSize(0), i64t, 0, 2),
                            scalarConstant(i64t, double(*k))});
  Value columns = positionsAlong(type.getDimSize(1), i64t, 1, 2);
  Value y = castTo(make<EqualOp>({rows, columns}), e);
  return y ? define(0, y) : failure();
}

// OneHot: values[1] where the position along the new axis equals the
// index (negative indices count from depth), values[0] elsewhere.
LogicalResult Importer::convOneHot(const onnx::NodeProto &) {
  auto indices = required(0), values = required(2);
  auto depth = constScalar(1, "depth");
  auto axis = attrInt("axis", -1);
  if (failed(indices) || failed(values) || failed(depth) || failed(axis))
    return failure();
  // The positions are a constant of depth values: bounded like a tensor.
  if (!*depth || !(**depth >= 1) || **depth > double(kMaxPositions))
    return nodeFail("depth must be a constant in [1, 2^24]");
  const int64_t d = int64_t(**depth);
  auto vType = typeOf(*values);
  if (vType.getRank() != 1 || vType.getDimSize(0) != 2)
    return nodeFail("values must have shape [2] (off, on)");
  const int64_t rank = typeOf(*indices).getRank() + 1;
  std::vector<int64_t> axes = {*axis};
  if (failed(normaliseAxes(axes, rank)))
    return failure();
  Type i64t = builder.getI64Type();
  Value idx = castTo(*indices, i64t);
  Value dv = scalarConstant(i64t, double(d));
  idx = make<WhereOp>({make<LessOp>({idx, scalarConstant(i64t, 0)}),
                       make<AddOp>({idx, dv}), idx});
  idx = make<UnsqueezeOp>({idx}, {named("axes", ints(axes))});
  Value hit = make<EqualOp>({idx, positionsAlong(d, i64t, axes[0], rank)});
  auto pick = [&](int64_t k) {
    return make<SliceOp>({*values}, {named("starts", ints({k})),
                                     named("ends", ints({k + 1})),
                                     named("steps", ints({1}))});
  };
  Value y = make<WhereOp>({hit, pick(1), pick(0)});
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
