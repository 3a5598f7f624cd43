//===- FuseGelu.cpp - decomposed GELUs as one cuts.gelu
//--------------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>

namespace cuts {
#define GEN_PASS_DEF_FUSEGELU
#include "compiler/passes/Passes.h.inc"

namespace {

// v is a constant whose every element is within 1e-3 (relative) of c.
bool isConstant(mlir::Value v, double c) {
  auto k = v.getDefiningOp<ConstantOp>();
  auto t = k ? toHost(k.getValue()) : std::nullopt;
  if (!t || !t->isFloat() || t->numel() < 1)
    return false;
  for (double x : t->f)
    if (std::fabs(x - c) > 1e-3 * std::fabs(c))
      return false;
  return true;
}

// The factors of v through nested muls (v itself when not a mul).
void factors(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &out) {
  if (auto m = v.getDefiningOp<MulOp>()) {
    factors(m.getA(), out);
    factors(m.getB(), out);
    return;
  }
  out.push_back(v);
}

// The factors of v are exactly x (once), a constant c and one other
// value, which is returned; null otherwise.
mlir::Value timesConstant(mlir::Value v, mlir::Value x, double c) {
  llvm::SmallVector<mlir::Value> f;
  factors(v, f);
  if (f.size() != 3 && !(f.size() == 2 && !x))
    return {};
  mlir::Value other;
  bool sawX = !x, sawC = false;
  for (mlir::Value u : f) {
    if (!sawX && u == x)
      sawX = true;
    else if (!sawC && isConstant(u, c))
      sawC = true;
    else if (!other)
      other = u;
    else
      return {};
  }
  return sawX && sawC ? other : mlir::Value();
}

// v = x^3: pow(x, 3), or x x x as nested muls.
bool isCube(mlir::Value v, mlir::Value x) {
  if (auto p = v.getDefiningOp<PowOp>())
    return p.getX() == x && isConstant(p.getY(), 3.0);
  llvm::SmallVector<mlir::Value> f;
  factors(v, f);
  return f.size() == 3 &&
         llvm::all_of(f, [&](mlir::Value u) { return u == x; });
}

// The argument of 1 + t (either order), t the op's result.
template <typename Op> Op onePlus(mlir::Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return {};
  for (int k = 0; k < 2; ++k)
    if (isConstant(add->getOperand(k), 1.0))
      if (auto t = add->getOperand(1 - k).getDefiningOp<Op>())
        return t;
  return {};
}

// The erf form's argument x / sqrt(2) (a div or a mul by 1 / sqrt(2)) is
// of x.
bool erfArgument(mlir::Value arg, mlir::Value x) {
  if (auto d = arg.getDefiningOp<DivOp>())
    return d.getA() == x && isConstant(d.getB(), std::sqrt(2.0));
  llvm::SmallVector<mlir::Value> f;
  factors(arg, f);
  return f.size() == 2 && ((f[0] == x && isConstant(f[1], std::sqrt(0.5))) ||
                           (f[1] == x && isConstant(f[0], std::sqrt(0.5))));
}

// The tanh form's argument sqrt(2 / pi) (x + 0.044715 x^3) is of x.
bool tanhArgument(mlir::Value arg, mlir::Value x) {
  mlir::Value inner = timesConstant(arg, {}, std::sqrt(2.0 / M_PI));
  auto add = inner ? inner.getDefiningOp<AddOp>() : AddOp();
  if (!add)
    return false;
  for (int k = 0; k < 2; ++k) {
    if (add->getOperand(k) != x)
      continue;
    mlir::Value cube = timesConstant(add->getOperand(1 - k), {}, 0.044715);
    return cube && isCube(cube, x);
  }
  return false;
}

// 0.5 x (1 + erf(x / sqrt 2)) or 0.5 x (1 + tanh(sqrt(2 / pi) (x +
// 0.044715 x^3))), the muls in any order and nesting: the gelu that
// replaces `root`, or nothing.
bool fuse(MulOp root) {
  llvm::SmallVector<mlir::Value> f;
  factors(root, f);
  if (f.size() != 3)
    return false;
  for (mlir::Value x : f) {
    mlir::Value rest = timesConstant(root, x, 0.5);
    if (!rest)
      continue;
    const char *form = nullptr;
    if (auto e = onePlus<ErfOp>(rest); e && erfArgument(e.getX(), x))
      form = "none";
    else if (auto t = onePlus<TanhOp>(rest); t && tanhArgument(t.getX(), x))
      form = "tanh";
    if (!form || x.getType() != root.getType())
      continue;
    mlir::OpBuilder b(root);
    auto gelu = b.create<GeluOp>(root.getLoc(), root.getType(), x,
                                 b.getStringAttr(form));
    root.getC().replaceAllUsesWith(gelu.getY());
    return true;
  }
  return false;
}

struct FuseGeluPass : impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    llvm::SmallVector<MulOp> muls;
    getOperation().walk([&](MulOp m) { muls.push_back(m); });
    // Outermost first: a gelu's inner muls are never roots of their own.
    for (auto it = muls.rbegin(); it != muls.rend(); ++it)
      if (!(*it)->use_empty())
        (void)fuse(*it);
  }
};

} // namespace
} // namespace cuts
