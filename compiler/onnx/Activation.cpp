//===- Activation.cpp - activations and predicates from primitives --------===//
//
// ONNX's activations that the dialect has no op for, and the elementwise
// predicates IsNaN, IsInf and Sign, written with the dialect's elementwise
// ops (comparisons, Where, Exp, Log, Tanh, ...): fusion puts them back into
// one kernel, so a dedicated op would buy nothing but code.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

#include <cmath>
#include <limits>

namespace cuts::import {

namespace {
// Ops whose value is one of the formulas below; the converter's switch.
enum class Act {
  Elu,
  Celu,
  Selu,
  Softplus,
  Softsign,
  ThresholdedRelu,
  Mish,
  Swish,
  Shrink,
};
} // namespace

// log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
Value Importer::softplus(Value x) {
  Type e = typeOf(x).getElementType();
  Value zero = scalarConstant(e, 0), one = scalarConstant(e, 1);
  return make<AddOp>(
      {make<MaxOp>({x, zero}),
       make<LogOp>({make<AddOp>(
           {one, make<ExpOp>({make<NegOp>({make<AbsOp>({x})})})})})});
}

LogicalResult Importer::convActivation(const onnx::NodeProto &n) {
  static const llvm::StringMap<Act> acts = {
      {"Elu", Act::Elu},           {"Celu", Act::Celu},
      {"Selu", Act::Selu},         {"Softplus", Act::Softplus},
      {"Softsign", Act::Softsign}, {"ThresholdedRelu", Act::ThresholdedRelu},
      {"Mish", Act::Mish},         {"Swish", Act::Swish},
      {"Shrink", Act::Shrink}};
  auto x = required(0);
  if (failed(x))
    return failure();
  Act act = acts.lookup(n.op_type());
  Type e = typeOf(*x).getElementType();
  auto c = [&](double v) { return scalarConstant(e, v); };
  // alpha * (exp(x) - 1), the negative branch of the ELU family.
  auto expm1 = [&](Value v, double alpha) {
    return make<MulOp>({c(alpha), make<SubOp>({make<ExpOp>({v}), c(1)})});
  };
  auto negative = [&] { return make<LessOp>({*x, c(0)}); };
  Value y;
  switch (act) {
  case Act::Elu: {
    auto alpha = attrFloat("alpha", 1.0f);
    if (failed(alpha))
      return failure();
    y = make<WhereOp>({negative(), expm1(*x, *alpha), *x});
    break;
  }
  case Act::Celu: { // max(0, x) + min(0, alpha (exp(x / alpha) - 1))
    auto alpha = attrFloat("alpha", 1.0f);
    if (failed(alpha))
      return failure();
    if (*alpha == 0)
      return nodeFail("alpha 0 divides by zero");
    y = make<AddOp>(
        {make<MaxOp>({*x, c(0)}),
         make<MinOp>({c(0), expm1(make<DivOp>({*x, c(*alpha)}), *alpha)})});
    break;
  }
  case Act::Selu: {
    auto alpha = attrFloat("alpha", 1.67326319217681884765625f);
    auto gamma = attrFloat("gamma", 1.05070102214813232421875f);
    if (failed(alpha) || failed(gamma))
      return failure();
    Value positive = make<LessOp>({c(0), *x});
    y = make<MulOp>(
        {c(*gamma), make<WhereOp>({positive, *x, expm1(*x, *alpha)})});
    break;
  }
  case Act::Softplus:
    y = softplus(*x);
    break;
  case Act::Softsign:
    y = make<DivOp>({*x, make<AddOp>({c(1), make<AbsOp>({*x})})});
    break;
  case Act::ThresholdedRelu: {
    auto alpha = attrFloat("alpha", 1.0f);
    if (failed(alpha))
      return failure();
    y = make<WhereOp>({make<LessOp>({c(*alpha), *x}), *x, c(0)});
    break;
  }
  case Act::Mish:
    y = make<MulOp>({*x, make<TanhOp>({softplus(*x)})});
    break;
  case Act::Swish: {
    auto alpha = attrFloat("alpha", 1.0f);
    if (failed(alpha))
      return failure();
    y = make<MulOp>({*x, make<SigmoidOp>({make<MulOp>({c(*alpha), *x})})});
    break;
  }
  case Act::Shrink: { // x < -lambd: x + bias; x > lambd: x - bias; else 0
    auto bias = attrFloat("bias", 0.0f), lambd = attrFloat("lambd", 0.5f);
    if (failed(bias) || failed(lambd))
      return failure();
    Value low = make<LessOp>({*x, c(-*lambd)});
    Value high = make<LessOp>({c(*lambd), *x});
    y = make<WhereOp>(
        {low, make<AddOp>({*x, c(*bias)}),
         make<WhereOp>({high, make<SubOp>({*x, c(*bias)}), c(0)})});
    break;
  }
  }
  return y ? define(0, y) : failure();
}

// PRelu: x < 0 ? slope x : x, slope broadcast to x.
LogicalResult Importer::convPRelu(const onnx::NodeProto &) {
  auto x = required(0), slope = required(1);
  if (failed(x) || failed(slope))
    return failure();
  Value zero = scalarConstant(typeOf(*x).getElementType(), 0);
  Value y =
      make<WhereOp>({make<LessOp>({*x, zero}), make<MulOp>({*slope, *x}), *x});
  return y ? define(0, y) : failure();
}

// Sign: 1, -1 or 0, in x's type.
LogicalResult Importer::convSign(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  Type e = typeOf(*x).getElementType();
  Value zero = scalarConstant(e, 0);
  Value y = make<WhereOp>(
      {make<LessOp>({zero, *x}), scalarConstant(e, 1),
       make<WhereOp>({make<LessOp>({*x, zero}), scalarConstant(e, -1), zero})});
  return y ? define(0, y) : failure();
}

// IsNaN: x != x. IsInf: x equal to the infinities asked for.
LogicalResult Importer::convIsNaN(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  Value y = make<NotOp>({make<EqualOp>({*x, *x})});
  return y ? define(0, y) : failure();
}

LogicalResult Importer::convIsInf(const onnx::NodeProto &) {
  auto x = required(0);
  auto positive = attrInt("detect_positive", 1);
  auto negative = attrInt("detect_negative", 1);
  if (failed(x) || failed(positive) || failed(negative))
    return failure();
  Type e = typeOf(*x).getElementType();
  if (!llvm::isa<FloatType>(e))
    return nodeFail("the input is not a floating-point tensor");
  const double inf = std::numeric_limits<double>::infinity();
  Value pos = make<EqualOp>({*x, scalarConstant(e, inf)});
  Value neg = make<EqualOp>({*x, scalarConstant(e, -inf)});
  Value y = *positive && *negative ? make<OrOp>({pos, neg})
            : *positive            ? pos
            : *negative            ? neg
                                   : make<AndOp>({pos, neg}); // never true
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
