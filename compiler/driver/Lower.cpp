//===- Lower.cpp - a group of cuts ops as one generated kernel ------------===//
#include "compiler/driver/Lower.h"

#include "codegen/emit/Cuda.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/Elementwise.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/Pool.h"
#include "codegen/ops/Reduction.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cfloat>
#include <map>

namespace cuts::driver {
namespace {

using codegen::EpilogueOp;
using dfg::Op;

mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}
std::vector<int64_t> shapeOf(mlir::Value v) {
  auto s = typeOf(v).getShape();
  return {s.begin(), s.end()};
}
int64_t product(llvm::ArrayRef<int64_t> s) {
  int64_t p = 1;
  for (int64_t d : s)
    p *= d;
  return p;
}
bool isF32(mlir::Value v) { return typeOf(v).getElementType().isF32(); }

std::string opName(mlir::Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto n = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    s += " (" + n.getName().str() + ")";
  return s;
}

/// An elementwise op as a scalar DFG op: unary ops with their attributes in
/// value/value2, binary ops with two inputs.
struct ScalarOp {
  Op op;
  double value = 0, value2 = 0;
  bool binary = false;
};

std::optional<ScalarOp> scalarOp(mlir::Operation *op) {
  if (llvm::isa<AddOp>(op))
    return ScalarOp{Op::Add, 0, 0, true};
  if (llvm::isa<SubOp>(op))
    return ScalarOp{Op::Sub, 0, 0, true};
  if (llvm::isa<MulOp>(op))
    return ScalarOp{Op::Mul, 0, 0, true};
  if (llvm::isa<DivOp>(op))
    return ScalarOp{Op::Div, 0, 0, true};
  if (llvm::isa<ReluOp>(op))
    return ScalarOp{Op::Relu};
  if (llvm::isa<NegOp>(op))
    return ScalarOp{Op::Neg};
  if (llvm::isa<ExpOp>(op))
    return ScalarOp{Op::Exp};
  if (llvm::isa<LogOp>(op))
    return ScalarOp{Op::Log};
  if (llvm::isa<SqrtOp>(op))
    return ScalarOp{Op::Sqrt};
  if (llvm::isa<ErfOp>(op))
    return ScalarOp{Op::Erf};
  if (llvm::isa<TanhOp>(op))
    return ScalarOp{Op::Tanh};
  if (llvm::isa<SigmoidOp>(op))
    return ScalarOp{Op::Sigmoid};
  if (llvm::isa<ReciprocalOp>(op))
    return ScalarOp{Op::Recip};
  if (llvm::isa<HardSwishOp>(op))
    return ScalarOp{Op::HardSwish};
  if (auto c = llvm::dyn_cast<ClipOp>(op)) {
    // A missing bound clamps nothing; FLT_MAX keeps the emitted source
    // free of infinities.
    double lo = c.getMin() ? c.getMin()->convertToDouble() : -FLT_MAX;
    double hi = c.getMax() ? c.getMax()->convertToDouble() : FLT_MAX;
    return ScalarOp{Op::Clip, lo, hi};
  }
  if (auto l = llvm::dyn_cast<LeakyReluOp>(op))
    return ScalarOp{Op::LeakyRelu, l.getAlpha().convertToDouble()};
  if (auto h = llvm::dyn_cast<HardSigmoidOp>(op))
    return ScalarOp{Op::HardSigmoid, h.getAlpha().convertToDouble(),
                    h.getBeta().convertToDouble()};
  if (auto g = llvm::dyn_cast<GeluOp>(op)) {
    if (g.getApproximate() == "tanh")
      return ScalarOp{Op::GeluTanh};
    return ScalarOp{Op::Gelu};
  }
  return std::nullopt;
}

/// numpy broadcasting of `in` to `out` (right-aligned, extents 1 or equal).
bool broadcastsTo(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  if (in.size() > out.size())
    return false;
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1 && in[d] != out[lead + d])
      return false;
  return true;
}

/// How an epilogue operand of an anchor's output of shape `out` (channels
/// along `channelAxis`) is read.
enum class OperandForm { Scalar, PerChannel, Full, Other };
OperandForm operandForm(llvm::ArrayRef<int64_t> operand,
                        llvm::ArrayRef<int64_t> out, size_t channelAxis) {
  if (!broadcastsTo(operand, out))
    return OperandForm::Other;
  if (product(operand) == 1)
    return OperandForm::Scalar;
  if (product(operand) == product(out))
    return OperandForm::Full;
  // Every extent but the channel axis's (aligned to the output) is 1.
  size_t lead = out.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    if (operand[d] != 1 && lead + d != channelAxis)
      return OperandForm::Other;
  return OperandForm::PerChannel;
}

/// The op of a group that needs a whole tile or row of its input: conv,
/// matmul, pooling, reductions; null when every op is elementwise.
bool isAnchorOp(mlir::Operation *op) {
  auto d = describeOp(op);
  return d && d->kind != OpKind::Elementwise;
}

struct Analysis {
  mlir::Operation *anchor = nullptr;    // null: elementwise only
  std::vector<mlir::Operation *> chain; // after the anchor, in order
  mlir::Operation *last = nullptr;      // its result leaves the group
};

std::optional<Analysis> analyse(llvm::ArrayRef<mlir::Operation *> ops,
                                std::string &why) {
  llvm::SmallPtrSet<mlir::Operation *, 8> group(ops.begin(), ops.end());
  Analysis a;
  int escaping = 0;
  for (mlir::Operation *op : ops) {
    if (isViewOp(op) || !describeOp(op)) {
      why = opName(op) + " is a view or constant inside a kernel";
      return std::nullopt;
    }
    for (mlir::Value v : op->getOperands())
      if (!isF32(v)) {
        why = opName(op) + " has a non-fp32 operand";
        return std::nullopt;
      }
    bool leaves = false;
    for (mlir::OpResult r : op->getResults()) {
      if (r.getResultNumber() > 0 && !r.use_empty()) {
        why = opName(op) + " uses a secondary result";
        return std::nullopt;
      }
      if (!isF32(r)) {
        why = opName(op) + " has a non-fp32 result";
        return std::nullopt;
      }
      for (mlir::Operation *user : r.getUsers())
        if (!group.contains(user))
          leaves = true;
    }
    if (leaves) {
      ++escaping;
      a.last = op;
    }
    if (isAnchorOp(op)) {
      if (a.anchor) {
        why = "two tiled ops in one kernel (shared-memory-level fusion is not "
              "generated yet)";
        return std::nullopt;
      }
      if (op != ops.front()) {
        why = "an op before the anchor " + opName(op) +
              " (prologue fusion is not generated yet)";
        return std::nullopt;
      }
      a.anchor = op;
    }
  }
  if (escaping != 1 || a.last != ops.back()) {
    why = "the group's result must be its last op's, and only that";
    return std::nullopt;
  }
  if (!a.anchor)
    return a;
  // A chain: every op after the anchor reads the previous op's result once.
  mlir::Operation *prev = a.anchor;
  for (mlir::Operation *op : ops.drop_front()) {
    auto s = scalarOp(op);
    if (!s) {
      why = opName(op) + " cannot follow an anchor in registers";
      return std::nullopt;
    }
    int fromPrev = 0;
    for (mlir::Value v : op->getOperands()) {
      auto *def = v.getDefiningOp();
      if (def == prev)
        ++fromPrev;
      else if (def && group.contains(def)) {
        why = opName(op) + " reads two values of the group";
        return std::nullopt;
      }
    }
    if (fromPrev != 1 ||
        (s->binary && op->getOperand(0).getDefiningOp() != prev &&
         (s->op == Op::Sub || s->op == Op::Div))) {
      why = opName(op) + " does not continue the anchor's chain";
      return std::nullopt;
    }
    if (product(shapeOf(op->getResult(0))) !=
        product(shapeOf(a.anchor->getResult(0)))) {
      why = opName(op) + " changes the anchor's output size";
      return std::nullopt;
    }
    a.chain.push_back(op);
    prev = op;
  }
  return a;
}

/// Collects the graph values of a kernel's tensors by name.
struct Binder {
  std::map<std::string, mlir::Value> values;
  int next = 0;
  std::string add(const std::string &stem, mlir::Value v) {
    std::string n = stem + std::to_string(next++);
    values[n] = v;
    return n;
  }
};

/// The epilogue of `chain` after an anchor whose output has shape `out`
/// with channels on `channelAxis`; nullopt with `error` if an operand has a
/// form the exit DFG cannot read.
std::optional<std::vector<EpilogueOp>>
epilogueOf(const Analysis &a, llvm::ArrayRef<int64_t> out, size_t channelAxis,
           const std::vector<int64_t> &kernelOut, Binder &b,
           std::string &error) {
  std::vector<EpilogueOp> e;
  mlir::Operation *prev = a.anchor;
  int64_t channels = out[channelAxis];
  for (mlir::Operation *op : a.chain) {
    ScalarOp s = *scalarOp(op);
    if (!s.binary) {
      e.push_back(EpilogueOp::unary(s.op, s.value, s.value2));
      prev = op;
      continue;
    }
    mlir::Value other = op->getOperand(0).getDefiningOp() == prev
                            ? op->getOperand(1)
                            : op->getOperand(0);
    auto os = shapeOf(other);
    switch (operandForm(os, out, channelAxis)) {
    case OperandForm::Scalar:
      e.push_back(EpilogueOp::binary(s.op, b.add("scalar", other), {1}));
      break;
    case OperandForm::PerChannel:
      e.push_back(EpilogueOp::binary(s.op, b.add("bias", other), {channels}));
      break;
    case OperandForm::Full:
      e.push_back(EpilogueOp::binary(s.op, b.add("res", other), kernelOut));
      break;
    case OperandForm::Other:
      error = opName(op) + " reads an operand that is neither a scalar, "
                           "per-channel nor full-size";
      return std::nullopt;
    }
    prev = op;
  }
  return e;
}

std::optional<GroupKernel> finish(std::optional<codegen::Kernel> k,
                                  const Binder &b, const char *family,
                                  std::string &error) {
  if (!k)
    return std::nullopt;
  GroupKernel g;
  g.family = family;
  for (const codegen::TensorArg &t : k->tensors) {
    auto it = b.values.find(t.name);
    if (it == b.values.end()) {
      error = "kernel tensor '" + t.name + "' is bound to no graph value";
      return std::nullopt;
    }
    g.args.push_back(it->second);
  }
  g.kernel = std::move(*k);
  return g;
}

std::optional<GroupKernel> lowerAnchored(const Analysis &a, const TileParams &p,
                                         const std::string &name,
                                         std::string &error) {
  mlir::Operation *op = a.anchor;
  mlir::Value result = a.last->getResult(0);
  auto out = shapeOf(op->getResult(0));
  Binder b;
  b.values["Y"] = result;

  if (auto conv = llvm::dyn_cast<ConvOp>(op)) {
    auto x = shapeOf(conv.getX()), w = shapeOf(conv.getW());
    if (x.size() != 4) {
      error = "only 2-D convolutions are generated";
      return std::nullopt;
    }
    codegen::ConvShape s;
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
    s.K = w[0], s.FH = w[2], s.FW = w[3];
    s.SH = conv.getStrides()[0], s.SW = conv.getStrides()[1];
    s.PH = conv.getPads()[0], s.PW = conv.getPads()[1];
    s.DH = conv.getDilations()[0], s.DW = conv.getDilations()[1];
    s.group = conv.getGroup();
    s.OH = out[2], s.OW = out[3];
    b.values["X"] = conv.getX();
    b.values["Wt"] = conv.getW();
    std::vector<EpilogueOp> epi;
    if (conv.getB())
      epi.push_back(
          EpilogueOp::binary(Op::Add, b.add("bias", conv.getB()), {s.K}));
    auto rest = epilogueOf(a, out, 1, out, b, error);
    if (!rest)
      return std::nullopt;
    epi.insert(epi.end(), rest->begin(), rest->end());
    return finish(codegen::buildConv(name, s, p, epi, error), b, "conv", error);
  }

  if (llvm::isa<MatMulOp, MatMulAddOp, GemmOp>(op)) {
    mlir::Value A = op->getOperand(0), B = op->getOperand(1);
    auto as = shapeOf(A), bs = shapeOf(B);
    bool ta = false, tb = false;
    mlir::Value C;
    if (auto g = llvm::dyn_cast<GemmOp>(op)) {
      ta = g.getTransA(), tb = g.getTransB();
      C = g.getC();
      if (g.getAlpha().convertToDouble() != 1.0 ||
          (C && g.getBeta().convertToDouble() != 1.0)) {
        error = "Gemm with alpha or beta other than 1 is not generated yet";
        return std::nullopt;
      }
    } else if (auto ma = llvm::dyn_cast<MatMulAddOp>(op)) {
      C = ma.getC();
    }
    if (as.size() < 2 || bs.size() < 2) {
      error = "matmuls of vectors are not generated yet";
      return std::nullopt;
    }
    int64_t batch = 1;
    if (bs.size() > 2) {
      // Attention's products: both operands carry the same batch axes.
      if (as.size() != bs.size() ||
          !std::equal(as.begin(), as.end() - 2, bs.begin())) {
        error = "batched matmuls whose operands broadcast are not generated "
                "yet";
        return std::nullopt;
      }
      batch = product(llvm::ArrayRef<int64_t>(as).drop_back(2));
    }
    int64_t K = ta ? as[as.size() - 2] : as.back();
    int64_t N = tb ? bs[bs.size() - 2] : bs.back();
    int64_t M = product(as) / K / batch;
    b.values["A"] = A;
    b.values["B"] = B;
    std::vector<int64_t> kout = batch > 1 ? std::vector<int64_t>{batch, M, N}
                                          : std::vector<int64_t>{M, N};
    std::vector<EpilogueOp> epi;
    if (C) {
      switch (operandForm(shapeOf(C), out, out.size() - 1)) {
      case OperandForm::Scalar:
        epi.push_back(EpilogueOp::binary(Op::Add, b.add("scalar", C), {1}));
        break;
      case OperandForm::PerChannel:
        epi.push_back(EpilogueOp::binary(Op::Add, b.add("bias", C), {N}));
        break;
      case OperandForm::Full:
        epi.push_back(EpilogueOp::binary(Op::Add, b.add("res", C), kout));
        break;
      case OperandForm::Other:
        error = opName(op) + ": its addend has an unsupported shape";
        return std::nullopt;
      }
    }
    auto rest = epilogueOf(a, out, out.size() - 1, kout, b, error);
    if (!rest)
      return std::nullopt;
    epi.insert(epi.end(), rest->begin(), rest->end());
    return finish(
        codegen::buildMatMul(name, M, K, N, p, epi, error, ta, tb, batch), b,
        "matmul", error);
  }

  auto pool = [&](mlir::Value X, llvm::ArrayRef<int64_t> kernel,
                  llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                  llvm::ArrayRef<int64_t> dilations, bool max,
                  bool includePad) -> std::optional<GroupKernel> {
    auto x = shapeOf(X);
    if (x.size() != 4) {
      error = "only 2-D pooling is generated";
      return std::nullopt;
    }
    codegen::PoolShape s;
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
    s.FH = kernel[0], s.FW = kernel[1];
    s.SH = strides[0], s.SW = strides[1];
    s.PH = pads[0], s.PW = pads[1];
    s.DH = dilations[0], s.DW = dilations[1];
    s.OH = out[2], s.OW = out[3];
    s.max = max;
    s.countIncludePad = includePad;
    b.values["X"] = X;
    auto epi = epilogueOf(a, out, 1, out, b, error);
    if (!epi)
      return std::nullopt;
    return finish(codegen::buildPool(name, s, p, *epi, error), b, "pool",
                  error);
  };
  if (auto mp = llvm::dyn_cast<MaxPoolOp>(op))
    return pool(mp.getX(), mp.getKernelShape(), mp.getStrides(), mp.getPads(),
                mp.getDilations(), true, false);
  if (auto ap = llvm::dyn_cast<AveragePoolOp>(op))
    return pool(ap.getX(), ap.getKernelShape(), ap.getStrides(), ap.getPads(),
                ap.getDilations(), false, ap.getCountIncludePad());

  // Row ops: the reduced extent last and contiguous; no epilogue yet.
  if (!a.chain.empty()) {
    error = opName(op) + " takes no fused ops after it yet";
    return std::nullopt;
  }
  codegen::RowShape s;
  mlir::Value X = op->getOperand(0);
  auto x = shapeOf(X);
  b.values["X"] = X;
  if (llvm::isa<GlobalAveragePoolOp>(op)) {
    s.op = codegen::RowOp::ReduceMean;
    s.rows = x[0] * x[1];
    s.length = product(x) / s.rows;
  } else if (auto sm = llvm::dyn_cast<SoftmaxOp>(op)) {
    if (int64_t(sm.getAxis()) != int64_t(x.size()) - 1) {
      error = opName(op) + ": softmax over an axis other than the last is not "
                           "generated yet";
      return std::nullopt;
    }
    s.op = codegen::RowOp::Softmax;
    s.length = x.back();
    s.rows = product(x) / s.length;
  } else if (auto ln = llvm::dyn_cast<LayerNormalizationOp>(op)) {
    s.op = codegen::RowOp::LayerNorm;
    s.length = product(llvm::ArrayRef<int64_t>(x).drop_front(ln.getAxis()));
    s.rows = product(x) / s.length;
    s.epsilon = ln.getEpsilon().convertToDouble();
    s.bias = bool(ln.getB());
    if (product(shapeOf(ln.getScale())) != s.length ||
        (ln.getB() && product(shapeOf(ln.getB())) != s.length)) {
      error = opName(op) + ": scale and bias must cover the normalised axes";
      return std::nullopt;
    }
    b.values["scale"] = ln.getScale();
    if (ln.getB())
      b.values["bias"] = ln.getB();
  } else if (llvm::isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op)) {
    auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes").asArrayRef();
    // The reduced axes must be the trailing ones.
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != int64_t(x.size() - axes.size() + i)) {
        error = opName(op) + ": only reductions over the last axes are "
                             "generated yet";
        return std::nullopt;
      }
    s.op = llvm::isa<ReduceMeanOp>(op)  ? codegen::RowOp::ReduceMean
           : llvm::isa<ReduceSumOp>(op) ? codegen::RowOp::ReduceSum
                                        : codegen::RowOp::ReduceMax;
    s.rows = product(shapeOf(op->getResult(0)));
    s.length = product(x) / std::max<int64_t>(s.rows, 1);
  } else {
    error = opName(op) + " has no kernel builder yet";
    return std::nullopt;
  }
  return finish(codegen::buildRowOp(name, s, p, error), b, "row", error);
}

std::optional<GroupKernel>
lowerElementwise(llvm::ArrayRef<mlir::Operation *> ops, const Analysis &a,
                 const TileParams &p, const std::string &name,
                 std::string &error) {
  auto out = shapeOf(a.last->getResult(0));
  if (out.size() > 4) {
    error = "elementwise kernels of rank > 4 are not generated yet";
    return std::nullopt;
  }
  llvm::DenseMap<mlir::Operation *, int> stepOf;
  llvm::DenseMap<mlir::Value, int> inputOf;
  std::vector<codegen::ElementwiseInput> inputs;
  std::vector<codegen::ElementwiseStep> steps;
  Binder b;
  b.values["Y"] = a.last->getResult(0);
  auto input = [&](mlir::Value v, std::vector<int64_t> perm) -> int {
    auto it = inputOf.find(v);
    if (it != inputOf.end() && perm.empty())
      return it->second;
    int i = int(inputs.size());
    auto shape = shapeOf(v);
    if (shape.empty())
      shape = {1}; // a scalar broadcasts as a one-element vector
    inputs.push_back({b.add("in", v), shape, std::move(perm)});
    if (inputs.back().perm.empty())
      inputOf[v] = i;
    return -1 - i;
  };
  for (mlir::Operation *op : ops) {
    if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
      // A transpose reads an input of the group in permuted order.
      auto *def = t.getData().getDefiningOp();
      if ((def && stepOf.count(def)) || shapeOf(t.getResult()) != out) {
        error = opName(op) + ": only transposes of the group's inputs to the "
                             "output's shape are fused";
        return std::nullopt;
      }
      auto perm = t.getPerm();
      // Consumers read the input permuted; no step of its own.
      stepOf[op] = input(t.getData(), {perm.begin(), perm.end()});
      continue;
    }
    auto s = scalarOp(op);
    if (!s) {
      error = opName(op) + " is not an elementwise op the generator knows";
      return std::nullopt;
    }
    codegen::ElementwiseStep st{s->op, {}, s->value, s->value2};
    for (mlir::Value v : op->getOperands()) {
      auto *def = v.getDefiningOp();
      auto it = def ? stepOf.find(def) : stepOf.end();
      if (it != stepOf.end()) {
        st.args.push_back(it->second);
        continue;
      }
      if (!broadcastsTo(shapeOf(v), out)) {
        error = opName(op) + ": an operand does not broadcast to the output";
        return std::nullopt;
      }
      st.args.push_back(input(v, {}));
    }
    stepOf[op] = int(steps.size());
    steps.push_back(st);
  }
  if (steps.empty() || stepOf[a.last] < 0) {
    // A lone transpose: its result is the permuted input itself, copied
    // (max(x, x) is x, NaN included).
    int in = stepOf[a.last];
    steps.push_back({Op::Max, {in, in}, 0, 0});
  }
  return finish(codegen::buildElementwise(name, out, inputs, steps, p, error),
                b, "ew", error);
}

} // namespace

std::string kernelCode(const std::string &source) {
  return source.substr(source.find("// generated by cuts"));
}

tune::Candidate tuneCandidate(const codegen::Kernel &k, const std::string &arch,
                              const std::string &toolkit) {
  tune::Candidate c;
  c.name = k.name;
  c.source = codegen::emitSource(k);
  c.key = tune::signature(kernelCode(c.source), arch, toolkit);
  codegen::LaunchShape shape = codegen::launchShape(k);
  c.grid = shape.blocks, c.block = shape.threads;
  c.sharedBytes = shape.sharedBytes;
  for (const codegen::TensorArg &t : k.tensors) {
    uint64_t bytes = 4;
    for (int64_t d : t.shape)
      bytes *= uint64_t(d);
    c.argBytes.push_back(bytes);
    c.argOutput.push_back(t.output);
  }
  return c;
}

std::optional<rt::ConvSpec> cudnnConv(llvm::ArrayRef<mlir::Operation *> ops,
                                      std::vector<mlir::Value> &args) {
  std::string why;
  auto a = analyse(ops, why);
  if (!a || !a->anchor)
    return std::nullopt;
  rt::ConvSpec s;
  auto conv = llvm::dyn_cast<ConvOp>(a->anchor);
  if (auto g = llvm::dyn_cast<GemmOp>(a->anchor)) {
    // Y[M, N] = A[M, K] B[N, K]^T + C[N] is a 1x1 convolution of M images
    // of K channels by N filters: B is already in KCRS order.
    auto as = shapeOf(g.getA()), bs = shapeOf(g.getB());
    if (g.getTransA() || !g.getTransB() ||
        g.getAlpha().convertToDouble() != 1.0 ||
        (g.getC() && g.getBeta().convertToDouble() != 1.0))
      return std::nullopt;
    s.N = as[0], s.C = as[1], s.H = s.W = 1, s.K = bs[0];
    s.FH = s.FW = 1, s.OH = s.OW = 1;
    s.group = 1;
    mlir::Value bias;
    if (g.getC()) {
      if (product(shapeOf(g.getC())) != s.K)
        return std::nullopt;
      s.bias = true;
      bias = g.getC();
    }
    for (mlir::Operation *op : a->chain) {
      if (!llvm::isa<ReluOp>(op) || s.relu)
        return std::nullopt;
      s.relu = true;
    }
    args = {g.getA(), g.getB()};
    if (s.bias)
      args.push_back(bias);
    args.push_back(a->last->getResult(0));
    return s;
  }
  if (!conv || shapeOf(conv.getX()).size() != 4)
    return std::nullopt;
  auto x = shapeOf(conv.getX()), w = shapeOf(conv.getW());
  auto out = shapeOf(conv.getResult());
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.K = w[0], s.FH = w[2], s.FW = w[3];
  s.strideH = conv.getStrides()[0], s.strideW = conv.getStrides()[1];
  s.padH = conv.getPads()[0], s.padW = conv.getPads()[1];
  s.dilH = conv.getDilations()[0], s.dilW = conv.getDilations()[1];
  // cuDNN pads symmetrically: the end pads must match the begin pads.
  if (conv.getPads()[2] != s.padH || conv.getPads()[3] != s.padW)
    return std::nullopt;
  s.group = conv.getGroup();
  s.OH = out[2], s.OW = out[3];
  s.bias = bool(conv.getB());
  mlir::Value bias = conv.getB(), z;
  mlir::Operation *prev = conv;
  for (mlir::Operation *op : a->chain) {
    if (s.relu)
      return std::nullopt; // relu must be last
    if (llvm::isa<ReluOp>(op)) {
      s.relu = true;
    } else if (llvm::isa<AddOp>(op)) {
      mlir::Value other = op->getOperand(0).getDefiningOp() == prev
                              ? op->getOperand(1)
                              : op->getOperand(0);
      OperandForm f = operandForm(shapeOf(other), out, 1);
      if (f == OperandForm::PerChannel && !s.bias &&
          product(shapeOf(other)) == s.K) {
        s.bias = true;
        bias = other;
      } else if (f == OperandForm::Full && !s.residual &&
                 shapeOf(other) == out) {
        s.residual = true;
        z = other;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    prev = op;
  }
  args = {conv.getX(), conv.getW()};
  if (s.bias)
    args.push_back(bias);
  if (s.residual)
    args.push_back(z);
  args.push_back(a->last->getResult(0));
  return s;
}

bool canGenerate(llvm::ArrayRef<mlir::Operation *> ops, std::string *why) {
  std::string w;
  auto a = analyse(ops, w);
  if (a && !a->anchor)
    for (mlir::Operation *op : ops)
      if (!scalarOp(op) && !llvm::isa<TransposeOp>(op)) {
        w = opName(op) + " is not an elementwise op the generator knows";
        a.reset();
        break;
      }
  if (a && a->anchor &&
      !llvm::isa<ConvOp, MatMulOp, MatMulAddOp, GemmOp, MaxPoolOp,
                 AveragePoolOp, GlobalAveragePoolOp, SoftmaxOp,
                 LayerNormalizationOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(
          a->anchor)) {
    w = opName(a->anchor) + " has no kernel builder yet";
    a.reset();
  }
  if (!a && why)
    *why = w;
  return bool(a);
}

std::optional<GroupKernel> lowerGroup(llvm::ArrayRef<mlir::Operation *> ops,
                                      const TileParams &p,
                                      const std::string &name,
                                      std::string &error) {
  auto a = analyse(ops, error);
  if (!a)
    return std::nullopt;
  if (a->anchor)
    return lowerAnchored(*a, p, name, error);
  return lowerElementwise(ops, *a, p, name, error);
}

} // namespace cuts::driver
