//===- Reduce.cpp - ONNX reductions, arg reductions, TopK and CumSum ------===//
//
// The dialect has three row reductions (sum, mean, max). Every other ONNX
// reduction is written here in terms of them and elementwise ops, so the
// code generator's row kernels, fusion and emulation serve them all:
// min(x) = -max(-x) (~max(~x) for integers), the L1/L2/log-sum family as a
// prologue and an epilogue around a sum, ArgMax as a max over keyed
// positions, TopK by ranks, CumSum as a log-step scan.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

namespace cuts::import {

FailureOr<Importer::ReduceSpec> Importer::reduceSpec(const onnx::NodeProto &n,
                                                     int64_t rank) {
  auto keep = attrInt("keepdims", 1);
  auto noop = attrInt("noop_with_empty_axes", 0);
  if (failed(keep) || failed(noop))
    return failure();
  // Axes moved from attribute to input in opset 13 (ReduceSum) and 18 (the
  // others).
  bool axesInput = n.op_type() == "ReduceSum" ? opset >= 13 : opset >= 18;
  ReduceSpec s;
  s.keep = *keep != 0;
  if (axesInput) {
    if (hasInput(1)) {
      auto a = constInts(1, "axes");
      if (failed(a))
        return failure();
      s.axes = *a;
    }
  } else {
    auto a = attrInts("axes");
    if (failed(a))
      return failure();
    if (*a)
      s.axes = **a;
  }
  if (failed(normaliseAxes(s.axes, rank)))
    return failure();
  if (s.axes.empty() && !*noop)
    for (int64_t d = 0; d < rank; ++d)
      s.axes.push_back(d);
  return s;
}

Value Importer::reduce(StringRef kind, Value x, ArrayRef<int64_t> axes,
                       bool keep) {
  if (!x || axes.empty())
    return x;
  SmallVector<NamedAttribute> attrs = {named("axes", ints(axes)),
                                       named("keepdims", boolean(keep))};
  if (kind == "sum")
    return make<ReduceSumOp>({x}, attrs);
  if (kind == "mean")
    return make<ReduceMeanOp>({x}, attrs);
  if (kind == "max")
    return make<ReduceMaxOp>({x}, attrs);
  return flipOrder(reduce("max", flipOrder(x), axes, keep)); // min
}

LogicalResult Importer::convReduce(const onnx::NodeProto &n) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto spec = reduceSpec(n, typeOf(*x).getRank());
  if (failed(spec))
    return failure();
  StringRef op = n.op_type();
  Type e = typeOf(*x).getElementType();
  bool isFloat = llvm::isa<FloatType>(e);
  if (!isFloat &&
      (op == "ReduceLogSum" || op == "ReduceLogSumExp" || op == "ReduceL2"))
    return nodeFail("needs a floating-point input");
  const std::vector<int64_t> &axes = spec->axes;
  Value v = *x, y;
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" ||
      op == "ReduceMin") {
    y = reduce(op.drop_front(6).lower(), v, axes, spec->keep);
  } else if (op == "ReduceL1") {
    y = reduce("sum", make<AbsOp>({v}), axes, spec->keep);
  } else if (op == "ReduceL2") {
    y = make<SqrtOp>({reduce("sum", make<MulOp>({v, v}), axes, spec->keep)});
  } else if (op == "ReduceSumSquare") {
    y = reduce("sum", make<MulOp>({v, v}), axes, spec->keep);
  } else if (op == "ReduceLogSum") {
    y = make<LogOp>({reduce("sum", v, axes, spec->keep)});
  } else if (op == "ReduceLogSumExp") {
    // max + log(sum(exp(x - max))): no overflow for large x.
    Value m = reduce("max", v, axes, true);
    Value s = reduce("sum", make<ExpOp>({make<SubOp>({v, m})}), axes, true);
    y = make<AddOp>({make<LogOp>({s}), m});
    if (!spec->keep && y && !axes.empty())
      y = make<SqueezeOp>({y}, {named("axes", ints(axes))});
  } else {
    return nodeFail("is not a reduction cuts knows");
  }
  if (!y)
    return failure();
  return define(0, y);
}

// The position (fp32) of the max of v along axis a: the largest key where v
// equals its max, the key L - j for the first position, j + 1 for the last.
// Exact below 2^24 positions.
Value Importer::argMaxPosition(Value v, int64_t a, bool last, bool keep) {
  if (!v)
    return v;
  int64_t rank = typeOf(v).getRank(), length = typeOf(v).getDimSize(a);
  if (length >= (int64_t(1) << 24)) {
    (void)nodeFail("axis of 2^24 or more elements is not supported");
    return nullptr;
  }
  std::vector<double> key(static_cast<size_t>(length));
  for (int64_t j = 0; j < length; ++j)
    key[size_t(j)] = double(last ? j + 1 : length - j);
  Type f32 = builder.getF32Type();
  Value at = make<EqualOp>({v, reduce("max", v, {a}, true)});
  Value keys =
      make<WhereOp>({at, alongAxis(key, f32, a, rank), scalarConstant(f32, 0)});
  Value best = reduce("max", keys, {a}, keep);
  if (!best)
    return best;
  return last ? make<SubOp>({best, scalarConstant(f32, 1)})
              : make<SubOp>({scalarConstant(f32, double(length)), best});
}

// The order-reversing flip of v: -v for floats, ~v = -1 - v (all ones minus
// v for unsigned) for integers, which cannot overflow.
Value Importer::flipOrder(Value v) {
  if (!v)
    return v;
  Type e = typeOf(v).getElementType();
  return llvm::isa<FloatType>(e) ? make<NegOp>({v})
                                 : make<SubOp>({scalarConstant(e, -1), v});
}

LogicalResult Importer::convArgReduce(const onnx::NodeProto &n) {
  auto x = required(0);
  auto axis = attrInt("axis", 0);
  auto keep = attrInt("keepdims", 1);
  auto last = attrInt("select_last_index", 0);
  if (failed(x) || failed(axis) || failed(keep) || failed(last))
    return failure();
  std::vector<int64_t> axes = {*axis};
  if (failed(normaliseAxes(axes, typeOf(*x).getRank())))
    return failure();
  Value v = n.op_type() == "ArgMin" ? flipOrder(*x) : *x;
  Value y = castTo(argMaxPosition(v, axes[0], *last != 0, *keep != 0),
                   builder.getI64Type());
  return y ? define(0, y) : failure();
}

// Before opset 13 Hardmax and LogSoftmax worked on x flattened to 2-D at
// `axis`; from 13 on one axis. The (possibly flattened) value and its axis.
FailureOr<std::pair<Value, int64_t>> Importer::rowAxis(Value x) {
  auto axis = attrInt("axis", opset < 13 ? 1 : -1);
  if (failed(axis))
    return failure();
  int64_t rank = typeOf(x).getRank();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a > rank || (opset >= 13 && a == rank))
    return LogicalResult(nodeFail("axis out of range"));
  if (opset >= 13 || a == rank - 1)
    return std::make_pair(x, a);
  Value flat = make<FlattenOp>({x}, {named("axis", i64(a))});
  if (!flat)
    return failure();
  return std::make_pair(flat, int64_t(1));
}

// A row op of x over rowAxis's axis, its result reshaped back where the
// axis came from flattening.
LogicalResult
Importer::convRowwise(llvm::function_ref<Value(Value v, int64_t axis)> op) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto row = rowAxis(*x);
  if (failed(row))
    return failure();
  Value y = op(row->first, row->second);
  if (y && y.getType() != x->getType())
    y = make<ReshapeOp>({y}, {named("shape", ints(typeOf(*x).getShape()))});
  return y ? define(0, y) : failure();
}

LogicalResult Importer::convHardmax(const onnx::NodeProto &) {
  return convRowwise([&](Value v, int64_t a) {
    int64_t rank = typeOf(v).getRank(), length = typeOf(v).getDimSize(a);
    Value at =
        make<EqualOp>({positionsAlong(length, builder.getF32Type(), a, rank),
                       argMaxPosition(v, a, false, true)});
    return castTo(at, typeOf(v).getElementType());
  });
}

// (v - max) - log(sum(exp(v - max))) over axis a: no overflow, and no log
// of an underflowed probability.
Value Importer::logSoftmax(Value v, int64_t a) {
  Value d = make<SubOp>({v, reduce("max", v, {a}, true)});
  return make<SubOp>(
      {d, make<LogOp>({reduce("sum", make<ExpOp>({d}), {a}, true)})});
}

LogicalResult Importer::convLogSoftmax(const onnx::NodeProto &) {
  return convRowwise([&](Value v, int64_t a) { return logSoftmax(v, a); });
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (the first on a
// log-softmax over the classes): -logp[n, target[n, d...], d...] weighted
// by weight[target] (0 where target is ignore_index), then none / sum /
// mean (the weighted mean where weighted), as ONNX's reference computes.
LogicalResult Importer::convClassLoss(const onnx::NodeProto &n) {
  auto x = required(0), target = required(1);
  auto reduction = attrString("reduction", "mean");
  const bool ignoring = attr("ignore_index") != nullptr;
  auto ignore = attrInt("ignore_index", 0);
  if (failed(x) || failed(target) || failed(reduction) || failed(ignore))
    return failure();
  if (*reduction != "none" && *reduction != "sum" && *reduction != "mean")
    return nodeFail("reduction '" + *reduction + "' is not supported");
  auto type = typeOf(*x);
  if (type.getRank() < 2 || typeOf(*target).getRank() != type.getRank() - 1)
    return nodeFail("needs scores [N, C, ...] and a target [N, ...]");
  Value logp =
      n.op_type() == "SoftmaxCrossEntropyLoss" ? logSoftmax(*x, 1) : *x;
  Type e = type.getElementType(), te = typeOf(*target).getElementType();
  Value t = *target, keep;
  if (ignoring) {
    Value ignored = make<EqualOp>({t, scalarConstant(te, double(*ignore))});
    t = make<WhereOp>({ignored, scalarConstant(te, 0), t});
    keep = make<WhereOp>({ignored, scalarConstant(e, 0), scalarConstant(e, 1)});
  }
  Value picked = make<SqueezeOp>(
      {make<GatherElementsOp>(
          {logp, make<UnsqueezeOp>({t}, {named("axes", ints({1}))})},
          {named("axis", i64(1))})},
      {named("axes", ints({1}))});
  Value w = keep;
  if (hasInput(2)) {
    Value cw = make<GatherOp>({input(2), t}, {named("axis", i64(0))});
    w = keep ? make<MulOp>({cw, keep}) : cw;
  }
  Value loss = make<NegOp>({picked});
  if (w)
    loss = make<MulOp>({loss, w});
  std::vector<int64_t> all;
  for (int64_t a = 0; a < type.getRank() - 1; ++a)
    all.push_back(a);
  Value y = loss;
  if (*reduction == "sum" || (*reduction == "mean" && !w))
    y = reduce(*reduction, loss, all, false);
  else if (*reduction == "mean")
    y = make<DivOp>(
        {reduce("sum", loss, all, false), reduce("sum", w, all, false)});
  if (!y)
    return failure();
  (void)define(0, y);
  return node->output_size() > 1 ? define(1, logp) : success();
}

// TopK by ranks: element j's rank is the number of elements ahead of it
// (larger, or equal at a lower position), from an L x L comparison; output
// r takes the position whose rank is r. O(L^2) work and memory, so the axis
// is bounded; ties keep the lower position first, as ONNX asks. NaN ranks
// above every number and equals NaN, as ONNX Runtime orders it.
LogicalResult Importer::convTopK(const onnx::NodeProto &) {
  auto x = required(0);
  auto axis = attrInt("axis", -1);
  auto largest = attrInt("largest", 1);
  if (failed(x) || failed(axis) || failed(largest))
    return failure();
  int64_t k = 0;
  if (opset < 10) {
    auto kk = attrInt("k", -1);
    if (failed(kk))
      return failure();
    k = *kk;
  } else {
    auto kk = constInts(1, "K");
    if (failed(kk))
      return failure();
    if (kk->size() != 1)
      return nodeFail("K must have one element");
    k = (*kk)[0];
  }
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  std::vector<int64_t> axes = {*axis};
  if (failed(normaliseAxes(axes, rank)))
    return failure();
  const int64_t a = axes[0], length = type.getDimSize(a);
  if (k < 0 || k > length)
    return nodeFail("K = " + Twine(k) + " is outside [0, " + Twine(length) +
                    "]");
  if (double(type.getNumElements()) * double(length) > double(1 << 28))
    return nodeFail("TopK over an axis of " + Twine(length) +
                    " elements (x has " + Twine(type.getNumElements()) +
                    ") is beyond its L^2 comparison (2^28 elements)");
  Value xi = make<UnsqueezeOp>({*x}, {named("axes", ints({a + 1}))});
  Value xj = make<UnsqueezeOp>({*x}, {named("axes", ints({a}))});
  auto isNaN = [&](Value v) { return make<NotOp>({make<EqualOp>({v, v})}); };
  Value nanI = isNaN(xi), nanJ = isNaN(xj);
  // above(u, v): u ranks above v, NaN above any number.
  auto above = [&](Value u, Value nanU, Value v, Value nanV) {
    return make<OrOp>(
        {make<LessOp>({v, u}), make<AndOp>({nanU, make<NotOp>({nanV})})});
  };
  // better[i][j]: x_i ranks ahead of x_j (above it where largest).
  Value better =
      *largest ? above(xi, nanI, xj, nanJ) : above(xj, nanJ, xi, nanI);
  Value same = make<OrOp>({make<EqualOp>({xi, xj}), make<AndOp>({nanI, nanJ})});
  // before[i][j] = i < j, over axes a and a + 1.
  std::vector<int64_t> pairShape(size_t(rank - a + 1), 1);
  pairShape[0] = pairShape[1] = length;
  auto pairType = RankedTensorType::get(pairShape, builder.getI1Type());
  llvm::SmallVector<bool> before(size_t(length * length));
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j)
      before[size_t(i * length + j)] = i < j;
  Value beforeC = builder.create<ConstantOp>(
      loc, pairType, DenseElementsAttr::get(pairType, llvm::ArrayRef(before)));
  Value ahead = make<OrOp>({better, make<AndOp>({same, beforeC})});
  Type f32 = builder.getF32Type();
  Value rankOf = reduce("sum", castTo(ahead, f32), {a}, false);
  // onehot[r][j] = rank_j == r, over axes a and a + 1; position = sum j.
  Value onehot =
      make<EqualOp>({make<UnsqueezeOp>({rankOf}, {named("axes", ints({a}))}),
                     positionsAlong(k, f32, a, rank + 1)});
  Value pos = reduce(
      "sum",
      make<WhereOp>({onehot, positionsAlong(length, f32, a + 1, rank + 1),
                     scalarConstant(f32, 0)}),
      {a + 1}, false);
  Value idx = castTo(pos, builder.getI64Type());
  Value values = make<GatherElementsOp>({*x, idx}, {named("axis", i64(a))});
  if (!values)
    return failure();
  (void)define(0, values);
  return define(1, idx);
}

// CumSum as a log-step (Hillis-Steele) scan: y += y shifted by 1, 2, 4, ...
// positions along the axis (a slice and a zero pad), exact for integers.
LogicalResult Importer::convCumSum(const onnx::NodeProto &) {
  auto x = required(0);
  auto exclusive = attrInt("exclusive", 0);
  auto reverse = attrInt("reverse", 0);
  auto axis = constScalar(1, "axis");
  if (failed(x) || failed(exclusive) || failed(reverse) || failed(axis))
    return failure();
  if (!*axis)
    return nodeFail("input 1 (axis) is required");
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  std::vector<int64_t> axes = {int64_t(**axis)};
  if (failed(normaliseAxes(axes, rank)))
    return failure();
  const int64_t a = axes[0], length = type.getDimSize(a);
  auto shift = [&](Value v, int64_t s) -> Value {
    std::vector<int64_t> starts(size_t(rank), 0), steps(size_t(rank), 1);
    std::vector<int64_t> ends(type.getShape().begin(), type.getShape().end());
    std::vector<int64_t> pads(size_t(2 * rank), 0);
    if (*reverse) {
      starts[size_t(a)] = s;
      pads[size_t(rank + a)] = s;
    } else {
      ends[size_t(a)] = length - s;
      pads[size_t(a)] = s;
    }
    Value part = make<SliceOp>({v}, {named("starts", ints(starts)),
                                     named("ends", ints(ends)),
                                     named("steps", ints(steps))});
    return make<PadOp>({part},
                       {named("pads", ints(pads)),
                        named("mode", builder.getStringAttr("constant")),
                        named("value", f64(0))});
  };
  Value y = *exclusive && length > 0 ? shift(*x, 1) : *x;
  for (int64_t s = 1; s < length && y; s *= 2)
    y = make<AddOp>({y, shift(y, s)});
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
