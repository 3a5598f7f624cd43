//===- Attention.cpp - ONNX Attention (opsets 23-25) as its function body -===//
//
// softmax(Q K^T * scale + bias) V with ONNX's whole contract: 3-D inputs
// split into heads, grouped-query heads, the KV cache (past and present),
// boolean or additive masks shorter than the keys, causal and sliding-window
// masks aligned bottom-right, nonpad_kv_seqlen, softcap, softmax_precision,
// the four qk_matmul_output modes, and rows with no key to attend (zeros).
// Written with the dialect's ops as ONNX's own function body is; masks of
// static shape fold to one constant bias.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

#include <cmath>
#include <limits>

namespace cuts::import {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
} // namespace

// [B, S, heads * d] -> [B, heads, S, d].
Value Importer::splitHeads(Value v, int64_t heads) {
  if (!v)
    return nullptr;
  auto s = typeOf(v).getShape();
  if (heads <= 0 || s[2] % heads != 0) {
    (void)nodeFail("a hidden size of " + Twine(s[2]) + " does not split into " +
                   Twine(heads) + " heads");
    return nullptr;
  }
  Value r = reshaped(v, {s[0], s[1], heads, s[2] / heads});
  return make<TransposeOp>({r}, {named("perm", ints({0, 2, 1, 3}))});
}

// K or V of [B, h, S, d] with each head repeated `reps` times in place
// ([h0, h0, h1, h1, ...]), as grouped-query attention shares them.
Value Importer::repeatHeads(Value v, int64_t reps) {
  if (!v || reps == 1)
    return v;
  auto s = typeOf(v).getShape();
  Value r = reshaped(v, {s[0] * s[1], 1, s[2] * s[3]});
  r = make<ExpandOp>({r},
                     {named("shape", ints({s[0] * s[1], reps, s[2] * s[3]}))});
  return reshaped(r, {s[0], s[1] * reps, s[2], s[3]});
}

// The additive bias of the masks: 0 where a key may be attended, -inf where
// not; null where nothing is masked. `mask` is attn_mask padded to the keys.
Value Importer::attentionBias(Value mask, Value nonpad, int64_t q, int64_t kv,
                              int64_t past, bool causal, int64_t left,
                              int64_t right, Type e) {
  Value zero = scalarConstant(e, 0), ninf = scalarConstant(e, kNegInf);
  auto additive = [&](Value allowed) {
    return make<WhereOp>({allowed, zero, ninf});
  };
  Type i64t = builder.getI64Type();
  auto constI = [&](int64_t v) { return scalarConstant(i64t, double(v)); };
  Value j = positionsAlong(kv, i64t, 3, 4);
  // nonpad_kv_seqlen per batch, [B, 1, 1, 1].
  Value valid = nonpad ? reshaped(castTo(nonpad, i64t),
                                  {typeOf(nonpad).getNumElements(), 1, 1, 1})
                       : Value();
  Value bias = mask;
  if (mask && typeOf(mask).getElementType().isInteger(1))
    bias = additive(mask);
  auto add = [&](Value b) { bias = bias ? make<AddOp>({bias, b}) : b; };
  if (causal || left >= 0 || right >= 0) {
    // The query's position among the keys: i + offset, per batch with
    // nonpad_kv_seqlen (offset = nonpad - q), else past.
    Value offset =
        valid && !past ? make<SubOp>({valid, constI(q)}) : constI(past);
    Value i = positionsAlong(q, i64t, 2, 4);
    Value diff = make<SubOp>({make<AddOp>({i, offset}), j}); // p - j
    if (causal)                                              // j <= p
      add(additive(make<NotOp>({make<LessOp>({diff, constI(0)})})));
    if (left >= 0) // p - j <= left
      add(additive(make<NotOp>({make<LessOp>({constI(left), diff})})));
    if (right >= 0) // j - p <= right
      add(additive(make<NotOp>({make<LessOp>({diff, constI(-right)})})));
  }
  if (valid) // keys at or past nonpad_kv_seqlen[b] are padding
    add(additive(make<LessOp>({j, valid})));
  return bias;
}

LogicalResult Importer::convAttention(const onnx::NodeProto &) {
  auto q = required(0), k = required(1), v = required(2);
  auto causal = attrInt("is_causal", 0);
  auto qHeads = attrInt("q_num_heads", 0), kvHeads = attrInt("kv_num_heads", 0);
  auto mode = attrInt("qk_matmul_output_mode", 0);
  auto softcap = attrFloat("softcap", 0.0f);
  auto precision = attrInt("softmax_precision", -1);
  auto left = attrInt("left_window_size", -1);
  auto right = attrInt("right_window_size", -1);
  if (failed(q) || failed(k) || failed(v) || failed(causal) || failed(qHeads) ||
      failed(kvHeads) || failed(mode) || failed(softcap) || failed(precision) ||
      failed(left) || failed(right))
    return failure();
  Value mask = input(3), pastK = input(4), pastV = input(5), nonpad = input(6);
  for (int in = 3; in <= 6; ++in)
    if (hasInput(in) && !input(in))
      return failure();
  if (bool(pastK) != bool(pastV))
    return nodeFail("past_key and past_value must be given together");
  if (nonpad && pastK)
    return nodeFail("nonpad_kv_seqlen cannot be combined with a past cache");
  if (*mode < 0 || *mode > 3)
    return nodeFail("qk_matmul_output_mode " + Twine(*mode) +
                    " is not 0, 1, 2 or 3");
  if (*left < -1 || *right < -1)
    return nodeFail("a window size is below -1");
  const int64_t rank = typeOf(*q).getRank();
  if (rank != 3 && rank != 4)
    return nodeFail("Q has rank " + Twine(rank) + ", not 3 or 4");
  if (typeOf(*k).getRank() != rank || typeOf(*v).getRank() != rank)
    return nodeFail("Q, K and V do not have the same rank");
  Value Q = *q, K = *k, V = *v;
  if (rank == 3) {
    if (*qHeads <= 0 || *kvHeads <= 0)
      return nodeFail("3-D inputs need q_num_heads and kv_num_heads");
    Q = splitHeads(Q, *qHeads);
    K = splitHeads(K, *kvHeads);
    V = splitHeads(V, *kvHeads);
    if (!Q || !K || !V)
      return failure();
  }
  Type e = typeOf(Q).getElementType();
  if (!llvm::isa<FloatType>(e))
    return nodeFail("Q is not a floating-point tensor");
  auto qs = typeOf(Q).getShape();
  auto attrScale = attr("scale");
  double scale =
      attrScale ? double(attrScale->f()) : 1.0 / std::sqrt(double(qs[3]));
  // sqrt(scale) on Q and on K, rounded to Q's type: ONNX's function body.
  Value root = scalarConstant(e, std::sqrt(scale));
  if (pastK) {
    K = make<ConcatOp>({pastK, K}, {named("axis", i64(2))});
    V = make<ConcatOp>({pastV, V}, {named("axis", i64(2))});
    if (!K || !V)
      return failure();
  }
  const int64_t past = pastK ? typeOf(pastK).getDimSize(2) : 0;
  const int64_t kvLen = typeOf(K).getDimSize(2), hq = qs[1],
                hk = typeOf(K).getDimSize(1);
  // The masks are built from constant position lists of these lengths.
  constexpr int64_t kMaxSequence = int64_t(1) << 24;
  if (qs[2] > kMaxSequence || kvLen > kMaxSequence)
    return nodeFail("a sequence is longer than 2^24");
  if (hk <= 0 || hq % hk != 0 || typeOf(V).getDimSize(1) != hk)
    return nodeFail("the " + Twine(hq) + " query heads do not group over " +
                    Twine(hk) + " key/value heads");
  if (mask) { // keys beyond the mask's last axis are masked
    auto ms = typeOf(mask).getShape();
    int64_t pad = ms.empty() ? -1 : kvLen - ms.back();
    if (pad < 0)
      return nodeFail("attn_mask's last axis is longer than the keys");
    if (pad > 0) { // a constant block of false or -inf after the mask
      SmallVector<int64_t> shape(ms);
      shape.back() = pad;
      if (tooManyElements(shape))
        return nodeFail("attn_mask's padding is too large");
      Type me = typeOf(mask).getElementType();
      auto t = RankedTensorType::get(shape, me);
      Attribute fill = me.isInteger(1)
                           ? Attribute(builder.getBoolAttr(false))
                           : Attribute(builder.getFloatAttr(me, kNegInf));
      Value block =
          builder.create<ConstantOp>(loc, t, DenseElementsAttr::get(t, fill));
      mask = make<ConcatOp>({mask, block},
                            {named("axis", i64(int64_t(ms.size()) - 1))});
    }
  }
  Value bias = attentionBias(mask, nonpad, qs[2], kvLen, past, *causal != 0,
                             *left, *right, e);
  Value kr = repeatHeads(make<MulOp>({K, root}), hq / hk);
  Value vr = repeatHeads(V, hq / hk);
  Value qk = make<MatMulOp>({make<MulOp>({Q, root}), kr},
                            {named("transB", builder.getUnitAttr())});
  if (*softcap > 0) {
    Value cap = scalarConstant(e, *softcap);
    qk = make<MulOp>({make<TanhOp>({make<DivOp>({qk, cap})}), cap});
  }
  if (!qk || !error.empty())
    return failure();
  Value scores = bias ? make<AddOp>({qk, bias}) : qk;
  Value qkOut = *mode == 2 ? scores : qk;
  if (*precision >= 0) {
    auto t = elementType(int32_t(*precision), "softmax_precision");
    if (failed(t))
      return failure();
    scores = castTo(scores, *t);
  }
  if (!scores)
    return failure();
  const int64_t last = typeOf(qk).getRank() - 1;
  Value probs = make<SoftmaxOp>({scores}, {named("axis", i64(last))});
  if (bias) { // a row with every key masked attends nothing: zeros
    Value full = reduce("max", bias, {typeOf(bias).getRank() - 1}, true);
    Value empty = make<EqualOp>({full, scalarConstant(e, kNegInf)});
    probs = make<WhereOp>(
        {empty, scalarConstant(typeOf(probs).getElementType(), 0), probs});
  }
  if (*mode == 3)
    qkOut = probs;
  Value y = make<MatMulOp>({castTo(probs, e), vr});
  if (y && rank == 3) {
    auto ys = typeOf(y).getShape();
    y = make<TransposeOp>({y}, {named("perm", ints({0, 2, 1, 3}))});
    y = reshaped(y, {ys[0], ys[2], ys[1] * ys[3]});
  }
  if (!y || failed(define(0, y)))
    return failure();
  if (node->output_size() > 1 && failed(define(1, K)))
    return failure();
  if (node->output_size() > 2 && failed(define(2, V)))
    return failure();
  if (node->output_size() > 3) {
    qkOut = castTo(qkOut, e);
    if (!qkOut || failed(define(3, qkOut)))
      return failure();
  }
  return success();
}

} // namespace cuts::import
