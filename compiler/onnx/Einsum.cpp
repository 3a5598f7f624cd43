//===- Einsum.cpp - ONNX Einsum as transposes, reshapes and a matmul ------===//
#include "compiler/onnx/Importer.h"

#include <algorithm>
#include <cctype>

namespace cuts::import {

namespace {

/// An Einsum equation with every operand's and the output's axes as one
/// letter each, an ellipsis's axes as the digits '0'... (right-aligned, as
/// they broadcast).
struct EinsumAxes {
  std::vector<std::string> inputs;
  std::string output;
};

FailureOr<EinsumAxes> parseEinsum(std::string eq, ArrayRef<int64_t> ranks,
                                  std::string &why) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs)
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  if (terms.size() != ranks.size()) {
    why = "equation '" + eq + "' has " + std::to_string(terms.size()) +
          " operand(s), the node " + std::to_string(ranks.size());
    return failure();
  }
  // Each term's ellipsis: the axes its letters leave.
  int64_t ellipsis = 0;
  std::vector<int64_t> spans;
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t at = terms[t].find("...");
    std::string letters = terms[t];
    if (at != std::string::npos)
      letters.erase(at, 3);
    for (char c : letters)
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        why = "equation '" + eq + "': '" + std::string(1, c) +
              "' is not an index letter";
        return failure();
      }
    int64_t span = ranks[t] - int64_t(letters.size());
    if (span < 0 || (span > 0 && at == std::string::npos)) {
      why = "term '" + terms[t] + "' does not match its operand's rank " +
            std::to_string(ranks[t]);
      return failure();
    }
    spans.push_back(span);
    ellipsis = std::max(ellipsis, span);
  }
  auto digits = [](int64_t from, int64_t to) {
    std::string d;
    for (int64_t k = from; k < to; ++k)
      d.push_back(char('0' + k));
    return d;
  };
  EinsumAxes a;
  std::map<char, int> uses;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::string term = terms[t];
    if (size_t at = term.find("..."); at != std::string::npos)
      term.replace(at, 3, digits(ellipsis - spans[t], ellipsis));
    for (char c : term)
      ++uses[c];
    a.inputs.push_back(term);
  }
  if (arrow != std::string::npos) {
    a.output = eq.substr(arrow + 2);
    if (size_t at = a.output.find("..."); at != std::string::npos)
      a.output.replace(at, 3, digits(0, ellipsis));
  } else { // implicit: the ellipsis, then the letters used once, sorted
    a.output = digits(0, ellipsis);
    for (auto [c, n] : uses)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c)))
        a.output.push_back(c);
  }
  for (size_t k = 0; k < a.output.size(); ++k)
    if (!uses.count(a.output[k]) ||
        a.output.find(a.output[k], k + 1) != std::string::npos) {
      why = "output index '" + std::string(1, a.output[k]) +
            "' is repeated or in no operand";
      return failure();
    }
  return a;
}

} // namespace

FailureOr<Value> Importer::einsumDiagonals(Value v, std::string &term) {
  // A letter twice: the pair moved last and merged, every (n + 1)-th
  // element gathered; then the term again, until no letter repeats.
  for (size_t i = 0; i < term.size(); ++i) {
    size_t j = term.find(term[i], i + 1);
    if (j == std::string::npos)
      continue;
    if (term.find(term[i], j + 1) != std::string::npos) {
      (void)nodeFail("index '" + Twine(term[i]) +
                     "' appears three times in one operand");
      return failure();
    }
    std::string rest = term;
    rest.erase(j, 1), rest.erase(i, 1);
    auto shape = typeOf(v).getShape();
    const int64_t n = shape[i];
    SmallVector<int64_t> merged;
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != i && d != j)
        merged.push_back(shape[d]);
    merged.push_back(n * n);
    auto moved = permuteAxes(v, term, rest + term[i] + term[i]);
    auto flat = failed(moved) ? moved : reshapeTo(*moved, merged);
    if (failed(flat))
      return failure();
    auto it = RankedTensorType::get({n}, builder.getI64Type());
    SmallVector<int64_t> at;
    for (int64_t k = 0; k < n; ++k)
      at.push_back(k * (n + 1));
    Value idx = builder.create<ConstantOp>(
        loc, it, DenseElementsAttr::get(it, ArrayRef<int64_t>(at)));
    auto diag = result(create<GatherOp>(
        {*flat, idx}, {named("axis", i64(int64_t(rest.size())))}));
    if (failed(diag))
      return failure();
    v = *diag, term = rest + term[i], i = size_t(-1);
  }
  return v;
}

FailureOr<Value> Importer::einsumSum(Value v, std::string &term,
                                     StringRef keep) {
  SmallVector<int64_t> summed;
  std::string kept;
  for (size_t d = 0; d < term.size(); ++d)
    if (keep.find(term[d]) == StringRef::npos)
      summed.push_back(int64_t(d));
    else
      kept.push_back(term[d]);
  if (summed.empty())
    return v;
  term = kept;
  return result(create<ReduceSumOp>({v}, {named("axes", ints(summed)),
                                         named("keepdims", boolean(false))}));
}

// ONNX Einsum of one or two operands as what it computes: a letter repeated
// in one operand takes the diagonal (a gather), letters of one operand alone
// that the output lacks are summed, and two operands meet in one batched
// matmul (shared letters the output keeps are its batch, shared ones it
// lacks contracted), transposed and reshaped around it.
LogicalResult Importer::convEinsum(const onnx::NodeProto &) {
  auto eq = attrString("equation", "");
  if (failed(eq))
    return failure();
  SmallVector<Value> x;
  SmallVector<int64_t> ranks;
  for (int k = 0; k < node->input_size(); ++k) {
    auto v = required(k);
    if (failed(v))
      return failure();
    x.push_back(*v);
    ranks.push_back(typeOf(*v).getRank());
  }
  if (x.empty() || x.size() > 2)
    return nodeFail("Einsum of " + Twine(x.size()) +
                    " operands is not supported (one or two)");
  std::string why;
  auto axes = parseEinsum(*eq, ranks, why);
  if (failed(axes))
    return nodeFail(why);
  std::map<char, int64_t> size;
  for (size_t t = 0; t < x.size(); ++t)
    for (size_t d = 0; d < axes->inputs[t].size(); ++d) {
      int64_t n = typeOf(x[t]).getDimSize(d);
      auto [at, fresh] = size.emplace(axes->inputs[t][d], n);
      if (!fresh && at->second != n)
        return nodeFail("index '" + Twine(at->first) + "' has extents " +
                        Twine(at->second) + " and " + Twine(n) +
                        " (broadcasting is not supported)");
    }
  const std::string &out = axes->output;
  std::string &ta = axes->inputs[0];
  // Diagonals first, then what neither the output nor the other operand
  // has is summed.
  SmallVector<FailureOr<Value>, 2> v;
  for (size_t t = 0; t < x.size(); ++t)
    v.push_back(einsumDiagonals(x[t], axes->inputs[t]));
  for (size_t t = 0; t < x.size(); ++t)
    if (succeeded(v[t]))
      v[t] = einsumSum(*v[t], axes->inputs[t],
                       x.size() == 2 ? axes->inputs[1 - t] + out : out);
  if (llvm::any_of(v, [](auto &r) { return failed(r); }))
    return failure();
  if (x.size() == 1) {
    auto y = permuteAxes(*v[0], ta, out);
    return failed(y) ? failure() : define(0, *y);
  }
  return einsumProduct(*v[0], ta, *v[1], axes->inputs[1], out, size);
}

LogicalResult Importer::einsumProduct(Value a, StringRef ta, Value b,
                                      StringRef tb, StringRef out,
                                      const std::map<char, int64_t> &size) {
  std::string batch, contracted, left, right;
  for (char c : out)
    (ta.contains(c) ? (tb.contains(c) ? batch : left) : right).push_back(c);
  for (char c : ta)
    if (tb.contains(c) && !out.contains(c))
      contracted.push_back(c);
  auto shapeOf = [&](StringRef letters) {
    SmallVector<int64_t> s;
    for (char c : letters)
      s.push_back(size.at(c));
    return s;
  };
  auto product = [&](StringRef letters) {
    int64_t p = 1;
    for (char c : letters)
      p *= size.at(c);
    return p;
  };
  SmallVector<int64_t> as = shapeOf(batch), bs = shapeOf(batch);
  as.append({product(left), product(contracted)});
  bs.append({product(contracted), product(right)});
  auto am = permuteAxes(a, ta, batch + left + contracted);
  am = failed(am) ? am : reshapeTo(*am, as);
  auto bm = permuteAxes(b, tb, batch + contracted + right);
  bm = failed(bm) ? bm : reshapeTo(*bm, bs);
  if (failed(am) || failed(bm))
    return failure();
  auto y = result(create<MatMulOp>({*am, *bm}, {}));
  y = failed(y) ? y : reshapeTo(*y, shapeOf(batch + left + right));
  y = failed(y) ? y : permuteAxes(*y, batch + left + right, out);
  return failed(y) ? failure() : define(0, *y);
}

} // namespace cuts::import
