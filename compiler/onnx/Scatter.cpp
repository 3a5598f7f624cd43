//===- Scatter.cpp - ScatterND and ScatterElements with constant indices --===//
//
// With the indices known at compile time, a scatter is a gather: each
// output element either keeps data's or takes one update, and which one is
// a constant map from output positions to update positions (-1: data's);
// a reduction over repeated indices takes one such map per repeat.
// The output is then where(map >= 0, gather(updates, map), data), which
// fusion makes one elementwise kernel; with data and updates constant too
// (Swin's attention mask) it folds away. Indices computed at run time are
// not supported.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

namespace cuts::import {

namespace {
// The map is a constant of data's size: bounded like a folded tensor.
constexpr int64_t kMaxScatterMap = kMaxFoldElements;
} // namespace

// data with update u written where map[p] == u (reduced with `reduction`
// where that is not "none").
Value Importer::scatterByMap(Value data, Value updates, ArrayRef<int64_t> map,
                             StringRef reduction) {
  if (!data)
    return nullptr;
  auto type = typeOf(data);
  Type i64t = builder.getI64Type();
  auto mapType = RankedTensorType::get(type.getShape(), i64t);
  Value m = builder.create<ConstantOp>(loc, mapType,
                                       DenseElementsAttr::get(mapType, map));
  Value zero = scalarConstant(i64t, 0);
  Value flat = reshaped(updates, {typeOf(updates).getNumElements()});
  Value picked =
      make<GatherOp>({flat, make<MaxOp>({m, zero})}, {named("axis", i64(0))});
  if (reduction == "add")
    picked = make<AddOp>({data, picked});
  else if (reduction == "mul")
    picked = make<MulOp>({data, picked});
  else if (reduction == "max")
    picked = make<MaxOp>({data, picked});
  else if (reduction == "min")
    picked = make<MinOp>({data, picked});
  Value hit = make<NotOp>({make<LessOp>({m, zero})});
  return make<WhereOp>({hit, picked, data});
}

LogicalResult Importer::convScatter(const onnx::NodeProto &n) {
  const bool nd = n.op_type() == "ScatterND";
  auto data = required(0), idx = required(1), updates = required(2);
  auto reduction = attrString("reduction", "none");
  auto axis = attrInt("axis", 0);
  if (failed(data) || failed(idx) || failed(updates) || failed(reduction) ||
      failed(axis))
    return failure();
  if (*reduction != "none" && *reduction != "add" && *reduction != "mul" &&
      *reduction != "max" && *reduction != "min")
    return nodeFail("reduction '" + *reduction +
                    "' is not none, add, mul, "
                    "max or min");
  auto indices = constantOf(*idx);
  if (!indices || indices->isFloat())
    return nodeFail("indices (input '" + node->input(1) +
                    "') must be integers computable at compile time");
  auto type = typeOf(*data);
  auto shape = type.getShape();
  if (type.getNumElements() > kMaxScatterMap)
    return nodeFail("data has more than 2^26 elements");
  if (typeOf(*updates).getElementType() != type.getElementType())
    return nodeFail("updates and data have different element types");
  // Round r holds each position's r-th update: a reduction applies the
  // rounds one after another; without one the last update wins.
  std::vector<std::vector<int64_t>> rounds;
  constexpr size_t kMaxRounds = 64;
  auto us = typeOf(*updates).getShape();
  auto is = indices->shape();
  auto bad = [&](const Twine &why) { return nodeFail(why); };
  // Writes update `from` at flat output position `to`.
  auto write = [&](int64_t to, int64_t from) -> LogicalResult {
    size_t r = 0;
    while (*reduction != "none" && r < rounds.size() &&
           rounds[r][size_t(to)] >= 0)
      ++r;
    if (r == kMaxRounds)
      return bad("a position is updated more than 64 times");
    if (r == rounds.size())
      rounds.emplace_back(size_t(type.getNumElements()), -1);
    rounds[r][size_t(to)] = from;
    return success();
  };
  auto normalised = [&](int64_t i, int64_t dim, int64_t &out) {
    out = i < 0 ? i + dim : i;
    return out >= 0 && out < dim;
  };
  if (nd) {
    const int64_t r = type.getRank();
    if (is.empty() || is.back() < 1 || is.back() > r)
      return bad("the last axis of indices must be in [1, rank of data]");
    const int64_t q = is.back();
    SmallVector<int64_t> want(is.drop_back());
    want.append(shape.begin() + q, shape.end());
    if (ArrayRef<int64_t>(want) != us)
      return bad("updates do not have the shape indices and data give");
    int64_t slice = 1;
    for (int64_t d = q; d < r; ++d)
      slice *= shape[d];
    const int64_t tuples = indices->numel() / q;
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t prefix = 0;
      for (int64_t d = 0; d < q; ++d) {
        int64_t at;
        if (!normalised(indices->i[size_t(t * q + d)], shape[d], at))
          return bad("an index is out of range for axis " + Twine(d));
        prefix = prefix * shape[d] + at;
      }
      for (int64_t s = 0; s < slice; ++s)
        if (failed(write(prefix * slice + s, t * slice + s)))
          return failure();
    }
  } else {
    const int64_t r = type.getRank();
    std::vector<int64_t> axes = {*axis};
    if (failed(normaliseAxes(axes, r)))
      return failure();
    if (int64_t(is.size()) != r || us != is)
      return bad("indices and updates must have one shape, of data's rank");
    for (int64_t d = 0; d < r; ++d)
      if (d != axes[0] && is[size_t(d)] > shape[size_t(d)])
        return bad("indices are longer than data along axis " + Twine(d));
    std::vector<int64_t> pos(size_t(r), 0);
    for (int64_t u = 0; u < indices->numel(); ++u) {
      int64_t rest = u;
      for (int64_t d = r - 1; d >= 0; --d) {
        pos[size_t(d)] = rest % is[size_t(d)];
        rest /= is[size_t(d)];
      }
      if (!normalised(indices->i[size_t(u)], shape[size_t(axes[0])],
                      pos[size_t(axes[0])]))
        return bad("an index is out of range for axis " + Twine(axes[0]));
      int64_t to = 0;
      for (int64_t d = 0; d < r; ++d)
        to = to * shape[size_t(d)] + pos[size_t(d)];
      if (failed(write(to, u)))
        return failure();
    }
  }
  Value y = *data;
  for (const std::vector<int64_t> &map : rounds)
    y = scatterByMap(y, *updates, map, *reduction);
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
