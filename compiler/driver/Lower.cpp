//===- Lower.cpp - a group of cuts ops as one generated kernel ------------===//
#include "compiler/driver/Lower.h"

#include "codegen/emit/Cuda.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/Elementwise.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/Pool.h"
#include "codegen/ops/Reduction.h"
#include "codegen/ops/SharedFusion.h"
#include "codegen/ops/Window.h"
#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cfloat>
#include <limits>
#include <map>
#include <numeric>

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
/// fp32, fp16 or bf16: what kernels compute on as fp32.
bool isFloat(mlir::Value v) {
  mlir::Type t = typeOf(v).getElementType();
  return t.isF32() || t.isF16() || t.isBF16();
}

/// The DFG type of an element type the generator handles.
std::optional<dfg::Type> dfgType(mlir::Type t) {
  if (t.isF32())
    return dfg::Type::F32;
  if (t.isF16())
    return dfg::Type::F16;
  if (t.isBF16())
    return dfg::Type::BF16;
  if (t.isInteger(64))
    return dfg::Type::I64;
  if (t.isInteger(32))
    return dfg::Type::I32;
  if (t.isInteger(1))
    return dfg::Type::Bool;
  return std::nullopt;
}
std::optional<dfg::Type> dfgType(mlir::Value v) {
  return dfgType(typeOf(v).getElementType());
}

/// An elementwise op as a scalar DFG op: unary ops with their attributes in
/// value/value2, binary ops with two inputs.
struct ScalarOp {
  Op op;
  double value = 0, value2 = 0;
  bool binary = false;
  dfg::Type cast = dfg::Type::F32;
};

/// Ops that take any element type; the others compute on fp32 only.
bool anyType(Op op) {
  switch (op) {
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Mod:
  case Op::FMod:
  case Op::Max:
  case Op::Min:
  case Op::Abs:
  case Op::Cast:
  case Op::Equal:
  case Op::Less:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Not:
  case Op::Where:
    return true;
  default:
    return false;
  }
}

std::optional<ScalarOp> scalarOpOfAnyType(mlir::Operation *op);

/// op as a scalar DFG op, if the generator computes it on its operand types.
std::optional<ScalarOp> scalarOp(mlir::Operation *op) {
  auto s = scalarOpOfAnyType(op);
  if (!s)
    return std::nullopt;
  for (mlir::Value v : op->getOperands())
    if (!dfgType(v) || (!anyType(s->op) && !isFloat(v)))
      return std::nullopt;
  for (mlir::Value v : op->getResults())
    if (!dfgType(v))
      return std::nullopt;
  return s;
}

/// The DFG op of each elementwise op that has no attributes.
const llvm::DenseMap<mlir::TypeID, Op> &plainScalarOps() {
  static const llvm::DenseMap<mlir::TypeID, Op> table = {
      {mlir::TypeID::get<EqualOp>(), Op::Equal},
      {mlir::TypeID::get<LessOp>(), Op::Less},
      {mlir::TypeID::get<AndOp>(), Op::And},
      {mlir::TypeID::get<OrOp>(), Op::Or},
      {mlir::TypeID::get<XorOp>(), Op::Xor},
      {mlir::TypeID::get<NotOp>(), Op::Not},
      {mlir::TypeID::get<WhereOp>(), Op::Where},
      {mlir::TypeID::get<AddOp>(), Op::Add},
      {mlir::TypeID::get<SubOp>(), Op::Sub},
      {mlir::TypeID::get<ModOp>(), Op::Mod},
      {mlir::TypeID::get<FModOp>(), Op::FMod},
      {mlir::TypeID::get<MaxOp>(), Op::Max},
      {mlir::TypeID::get<MinOp>(), Op::Min},
      {mlir::TypeID::get<MulOp>(), Op::Mul},
      {mlir::TypeID::get<DivOp>(), Op::Div},
      {mlir::TypeID::get<PowOp>(), Op::Pow},
      {mlir::TypeID::get<ReluOp>(), Op::Relu},
      {mlir::TypeID::get<NegOp>(), Op::Neg},
      {mlir::TypeID::get<AbsOp>(), Op::Abs},
      {mlir::TypeID::get<ExpOp>(), Op::Exp},
      {mlir::TypeID::get<LogOp>(), Op::Log},
      {mlir::TypeID::get<SqrtOp>(), Op::Sqrt},
      {mlir::TypeID::get<ErfOp>(), Op::Erf},
      {mlir::TypeID::get<TanhOp>(), Op::Tanh},
      {mlir::TypeID::get<SigmoidOp>(), Op::Sigmoid},
      {mlir::TypeID::get<ReciprocalOp>(), Op::Recip},
      {mlir::TypeID::get<HardSwishOp>(), Op::HardSwish},
      {mlir::TypeID::get<SinOp>(), Op::Sin},
      {mlir::TypeID::get<CosOp>(), Op::Cos},
      {mlir::TypeID::get<TanOp>(), Op::Tan},
      {mlir::TypeID::get<AsinOp>(), Op::Asin},
      {mlir::TypeID::get<AcosOp>(), Op::Acos},
      {mlir::TypeID::get<AtanOp>(), Op::Atan},
      {mlir::TypeID::get<SinhOp>(), Op::Sinh},
      {mlir::TypeID::get<CoshOp>(), Op::Cosh},
      {mlir::TypeID::get<AsinhOp>(), Op::Asinh},
      {mlir::TypeID::get<AcoshOp>(), Op::Acosh},
      {mlir::TypeID::get<AtanhOp>(), Op::Atanh},
      {mlir::TypeID::get<FloorOp>(), Op::Floor},
      {mlir::TypeID::get<CeilOp>(), Op::Ceil},
      {mlir::TypeID::get<RoundOp>(), Op::Round}};
  return table;
}

/// An elementwise op (CutsOps.td's Elementwise trait) as a scalar DFG op:
/// two operands make a binary op, attributes become value and value2.
std::optional<ScalarOp> scalarOpOfAnyType(mlir::Operation *op) {
  if (!op->hasTrait<OpTrait::Elementwise>())
    return std::nullopt;
  auto plain = plainScalarOps().find(op->getName().getTypeID());
  if (plain != plainScalarOps().end())
    return ScalarOp{plain->second, 0, 0, op->getNumOperands() == 2};
  if (auto c = llvm::dyn_cast<CastOp>(op)) {
    auto t = dfgType(c.getResult());
    if (!t)
      return std::nullopt;
    ScalarOp s{Op::Cast};
    s.cast = *t;
    return s;
  }
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
  if (auto g = llvm::dyn_cast<GeluOp>(op))
    return ScalarOp{g.getApproximate() == "tanh" ? Op::GeluTanh : Op::Gelu};
  return std::nullopt; // an elementwise op the generator has no DFG op for
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

/// The runs [first, last) of out's axes that the kernel's output
/// `kernelOut` merges into each of its axes (a batched matmul's leading
/// axes into one); trailing extent-1 axes of out belong to none.
std::optional<std::vector<std::pair<size_t, size_t>>>
runsOf(llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> kernelOut) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t d = 0;
  for (int64_t extent : kernelOut) {
    size_t first = d;
    int64_t run = 1;
    while (d < out.size() && (run < extent || (extent == 1 && run == 1))) {
      run *= out[d++];
      if (extent == 1)
        break;
    }
    if (run != extent)
      return std::nullopt;
    runs.push_back({first, d});
  }
  for (; d < out.size(); ++d)
    if (out[d] != 1)
      return std::nullopt;
  return runs;
}

/// Axis d of out as a digit of the kernel's output (runsOf): the product
/// of its run's later axes divides, and out[d] is the remainder's modulus
/// unless d leads its run.
codegen::OutputDigit digitOf(size_t d, llvm::ArrayRef<int64_t> out,
                             llvm::ArrayRef<std::pair<size_t, size_t>> runs) {
  for (size_t r = 0; r < runs.size(); ++r)
    if (d >= runs[r].first && d < runs[r].second) {
      int64_t div = 1;
      for (size_t e = d + 1; e < runs[r].second; ++e)
        div *= out[e];
      return {int(r), div, d == runs[r].first ? 0 : out[d]};
    }
  return {0, 1, 0}; // an extent-1 axis after every run: always 0
}

/// `shape` with 1s in front up to `rank` axes (ONNX broadcasting's
/// alignment).
std::vector<int64_t> withLeadingOnes(llvm::ArrayRef<int64_t> shape,
                                     size_t rank) {
  std::vector<int64_t> padded(rank - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

/// An operand broadcast to `out` as a shape of the kernel's output's rank,
/// where the kernel's output `kernelOut` merges runs of out's axes: each
/// run must be all broadcast or all full in the operand, so that its
/// memory reads the same either way.
std::optional<std::vector<int64_t>>
broadcastView(llvm::ArrayRef<int64_t> operand, llvm::ArrayRef<int64_t> out,
              llvm::ArrayRef<int64_t> kernelOut) {
  auto runs = runsOf(out, kernelOut);
  if (!broadcastsTo(operand, out) || !runs)
    return std::nullopt;
  std::vector<int64_t> padded = withLeadingOnes(operand, out.size());
  std::vector<int64_t> view;
  for (auto [first, last] : *runs) {
    bool full = true, broadcast = true;
    for (size_t d = first; d < last; ++d) {
      full &= padded[d] == out[d];
      broadcast &= padded[d] == 1;
    }
    if (!full && !broadcast)
      return std::nullopt;
    view.push_back(full ? product(out.slice(first, last - first)) : 1);
  }
  return view;
}

/// An operand broadcast to `out` along some of the axes a run merges (an
/// attention mask shared by the heads): its axes that are not broadcast,
/// each as a digit of the kernel's output.
std::optional<
    std::pair<std::vector<int64_t>, std::vector<codegen::OutputDigit>>>
digitView(llvm::ArrayRef<int64_t> operand, llvm::ArrayRef<int64_t> out,
          llvm::ArrayRef<int64_t> kernelOut) {
  auto runs = runsOf(out, kernelOut);
  if (!broadcastsTo(operand, out) || !runs)
    return std::nullopt;
  std::vector<int64_t> padded = withLeadingOnes(operand, out.size());
  std::vector<int64_t> shape;
  std::vector<codegen::OutputDigit> digits;
  for (size_t d = 0; d < out.size(); ++d)
    if (padded[d] != 1) {
      shape.push_back(padded[d]);
      digits.push_back(digitOf(d, out, *runs));
    }
  return std::make_pair(shape, digits);
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
  /// Transposes before the anchor that its tensor-core kernel reads in
  /// place (readInPlace).
  std::vector<mlir::Operation *> inPlace;
  /// A transpose ending a product's chain: the kernel stores transposed.
  TransposeOp store;
};

bool isMatMulOp(mlir::Operation *op);

std::optional<Analysis> analyse(llvm::ArrayRef<mlir::Operation *> ops,
                                std::string &why) {
  llvm::SmallPtrSet<mlir::Operation *, 8> group(ops.begin(), ops.end());
  Analysis a;
  // Leading slices and transposes the first other op, a product, reads in
  // place (a stem conv's planar input chain: its pad and cast too).
  size_t lead = 0;
  while (lead < ops.size() &&
         llvm::isa<TransposeOp, SliceOp, PadOp, CastOp>(ops[lead]))
    ++lead;
  if (lead > 0 && lead < ops.size() &&
      std::all_of(ops.begin(), ops.begin() + lead, [&](mlir::Operation *t) {
        return readInPlace(t, ops[lead]);
      })) {
    a.inPlace.assign(ops.begin(), ops.begin() + lead);
    ops = ops.drop_front(lead);
  }
  int escaping = 0;
  mlir::Operation *nonFloat = nullptr;
  for (mlir::Operation *op : ops) {
    if (isViewOp(op) || !describeOp(op)) {
      why = opName(op) + " is a view or constant inside a kernel";
      return std::nullopt;
    }
    for (mlir::Value v : op->getOperands())
      if (!dfgType(v)) {
        why = opName(op) + " has an operand of a type the generator does "
                           "not handle (fp32, fp16, bf16, int64, int32, bool)";
        return std::nullopt;
      } else if (!isFloat(v)) {
        nonFloat = op;
      }
    bool leaves = false;
    for (mlir::OpResult r : op->getResults()) {
      if (r.getResultNumber() > 0 && !r.use_empty()) {
        why = opName(op) + " uses a secondary result";
        return std::nullopt;
      }
      if (!dfgType(r)) {
        why = opName(op) + " has a result of a type the generator does not "
                           "handle (fp32, fp16, bf16, int64, int32, bool)";
        return std::nullopt;
      } else if (!isFloat(r)) {
        nonFloat = op;
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
        why = "a third tiled op in one kernel (shared-memory-level fusion "
              "joins two)";
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
  if (nonFloat) {
    // Integer and bool tensors only flow through elementwise kernels
    // (indices, masks); tiled ops and their epilogues compute in fp32 on
    // fp32, fp16 or bf16 tensors.
    why = opName(nonFloat) + " has an integer or bool tensor in a tiled "
                             "op's kernel";
    return std::nullopt;
  }
  // A chain: every op after the anchor reads the previous op's result once.
  mlir::Operation *prev = a.anchor;
  for (mlir::Operation *op : ops.drop_front()) {
    auto s = scalarOp(op);
    // A transpose that keeps the innermost axis ends a product's chain as
    // its store (storeDigits).
    auto t = llvm::dyn_cast<TransposeOp>(op);
    if (t && (op != ops.back() || !isMatMulOp(a.anchor) ||
              t.getPerm().back() != int64_t(t.getPerm().size() - 1)))
      t = nullptr;
    if (!s && !t) {
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
    if (t && fromPrev == 1) {
      a.store = t;
      break;
    }
    if (t) {
      why = opName(op) + " does not continue the anchor's chain";
      return std::nullopt;
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

/// The index of the second anchor of `ops`, or 0 when there is none.
size_t secondAnchor(llvm::ArrayRef<mlir::Operation *> ops) {
  int anchors = 0;
  for (size_t i = 0; i < ops.size(); ++i)
    if (isAnchorOp(ops[i]) && ++anchors == 2)
      return i;
  return 0;
}

bool isMatMulOp(mlir::Operation *op) {
  return llvm::isa<MatMulOp, MatMulAddOp, GemmOp>(op);
}

/// Two kernels' fusion `k`: each tensor's graph value from the kernel it came
/// from, `renamed`'s tensors named with `prefix`.
GroupKernel joined(codegen::Kernel k, const GroupKernel &plain,
                   const GroupKernel &renamed, const std::string &prefix,
                   const char *family) {
  auto valueOf = [](const GroupKernel &g, const std::string &n) {
    for (size_t i = 0; i < g.kernel.tensors.size(); ++i)
      if (g.kernel.tensors[i].name == n)
        return g.args[i];
    return mlir::Value();
  };
  GroupKernel g;
  g.family = family;
  for (const codegen::TensorArg &t : k.tensors)
    g.args.push_back(t.name.compare(0, prefix.size(), prefix) == 0
                         ? valueOf(renamed, t.name.substr(prefix.size()))
                         : valueOf(plain, t.name));
  g.kernel = std::move(k);
  return g;
}

/// A shared-memory-level group: the producer's anchored chain (ops before
/// the second anchor) and the consumer's (the rest).
struct SharedAnalysis {
  Analysis producer, consumer;
  size_t split = 0;
};

/// Both anchored chains of a group with two anchors, where the second
/// anchor reads the first chain's result as its tiled input (operand 0)
/// and as nothing else.
std::optional<SharedAnalysis>
analyseAnchorPair(llvm::ArrayRef<mlir::Operation *> ops, std::string &why) {
  SharedAnalysis sa;
  sa.split = secondAnchor(ops);
  auto first = analyse(ops.take_front(sa.split), why);
  if (!first)
    return std::nullopt;
  auto second = analyse(ops.drop_front(sa.split), why);
  if (!second)
    return std::nullopt;
  if (!first->anchor) {
    why = "a two-anchor group starts with its first anchor";
    return std::nullopt;
  }
  mlir::Operation *S = second->anchor;
  mlir::Value mid = first->last->getResult(0);
  for (unsigned i = 0; i < S->getNumOperands(); ++i)
    if ((S->getOperand(i) == mid) != (i == 0)) {
      why = opName(S) + " reads the first anchor's result as other than its "
                        "tiled input";
      return std::nullopt;
    }
  sa.producer = *first;
  sa.consumer = *second;
  return sa;
}

/// Whether the second anchor of `pair` alone reads the first chain's
/// result, which then never leaves the chip.
bool handedOverOnChip(const SharedAnalysis &pair, std::string &why) {
  mlir::Operation *last = pair.producer.last;
  for (mlir::Operation *user : last->getResult(0).getUsers())
    if (user != pair.consumer.anchor) {
      why = opName(last) + "'s result is read outside the kernel";
      return false;
    }
  return true;
}

std::optional<SharedAnalysis>
analyseShared(llvm::ArrayRef<mlir::Operation *> ops, std::string &why) {
  auto pair = analyseAnchorPair(ops, why);
  if (!pair)
    return std::nullopt;
  const Analysis *first = &pair->producer;
  mlir::Operation *P = first->anchor, *S = pair->consumer.anchor;
  // The intermediate lives in shared memory only: the consumer's anchor is
  // its one reader, through the input it tiles.
  if (!handedOverOnChip(*pair, why))
    return std::nullopt;
  mlir::Value mid = first->last->getResult(0);
  auto batched = [](mlir::Operation *op) {
    return shapeOf(op->getOperand(1)).size() > 2;
  };
  bool windowed = llvm::isa<ConvOp, MaxPoolOp, AveragePoolOp>(S) &&
                  llvm::isa<ConvOp, MaxPoolOp, AveragePoolOp>(P);
  for (mlir::Operation *op : {S, P})
    if (const OpDesc d = *describeOp(op); d.channelsLast || d.im2col) {
      why = opName(op) + ": channels-last ops are not fused at the "
                         "shared-memory level";
      return std::nullopt;
    }
  bool rows =
      (isMatMulOp(S) || llvm::isa<SoftmaxOp, LayerNormalizationOp, ReduceMeanOp,
                                  ReduceSumOp, ReduceMaxOp>(S)) &&
      isMatMulOp(P);
  if (!windowed && !rows) {
    why = "shared-memory-level fusion takes a conv or pooling after a conv "
          "or pooling, or a matmul or row op after a matmul (not " +
          opName(S) + " after " + opName(P) + ")";
    return std::nullopt;
  }
  // The producer's tile goes to shared memory as the consumer's fp32 fetch
  // would have left it (codegen's SharedFusion).
  if (!typeOf(mid).getElementType().isF32()) {
    why = "shared-memory-level fusion passes fp32 tiles only";
    return std::nullopt;
  }
  auto g = llvm::dyn_cast<GemmOp>(S);
  if (rows &&
      (batched(P) || (isMatMulOp(S) && batched(S)) || (g && g.getTransA()))) {
    why = "shared-memory-level fusion of matmuls needs one product each and "
          "the consumer's A untransposed";
    return std::nullopt;
  }
  if (auto conv = llvm::dyn_cast<ConvOp>(S);
      conv && conv.getGroup() != 1 &&
      int64_t(conv.getGroup()) != shapeOf(conv.getX())[1]) {
    why = opName(S) + ": a grouped consumer reads channel slices";
    return std::nullopt;
  }
  return pair;
}

/// A chained product (codegen::fuseChained): two tensor-core products, the
/// second reading the first chain's result (which may have other readers:
/// it is stored) as its A, and nothing else of the group.
std::optional<SharedAnalysis>
analyseChained(llvm::ArrayRef<mlir::Operation *> ops, std::string &why) {
  auto pair = analyseAnchorPair(ops, why);
  if (!pair)
    return std::nullopt;
  mlir::Operation *P = pair->producer.anchor, *S = pair->consumer.anchor;
  auto product = [](mlir::Operation *op) {
    if (auto conv = llvm::dyn_cast<ConvOp>(op))
      return conv.getChannelsLast() && conv.getGroup() == 1;
    return llvm::isa<ConvSumOp>(op) || isMatMulOp(op);
  };
  if (!product(P) || !product(S)) {
    why = "a chained product joins two tensor-core products (channels-last "
          "convs, conv_sums, matmuls)";
    return std::nullopt;
  }
  // fp32 tiles go to shared-memory-level fusion (the model's split too).
  const mlir::Type t =
      typeOf(pair->producer.last->getResult(0)).getElementType();
  if (!t.isF16() && !t.isBF16()) {
    why = "a chained product passes fp16 or bf16 tiles";
    return std::nullopt;
  }
  return pair;
}

/// A pooled implicit GEMM (codegen::fusePooled): a channels-last conv on
/// 16-bit tensor cores and its register-fused ops, then a max pooling (or
/// an average one of unpadded windows inside the image) of their result,
/// which nothing else reads.
std::optional<SharedAnalysis>
analysePooled(llvm::ArrayRef<mlir::Operation *> ops, std::string &why) {
  auto pair = analyseAnchorPair(ops, why);
  if (!pair)
    return std::nullopt;
  mlir::Operation *P = pair->producer.anchor, *S = pair->consumer.anchor;
  auto conv = llvm::dyn_cast<ConvOp>(P);
  const bool average = llvm::isa<AveragePoolOp>(S);
  if (!conv || !conv.getChannelsLast() || conv.getGroup() != 1 ||
      !(llvm::isa<MaxPoolOp>(S) || average) || S->getNumResults() != 1 ||
      !pair->consumer.chain.empty() || !describeOp(S)->channelsLast) {
    why = "a pooled implicit GEMM is a channels-last conv and a max or "
          "average pooling of its result alone";
    return std::nullopt;
  }
  if (average && !poolWindowsInside(*describeOp(S))) {
    why = "an average pooling fuses where its windows lie inside the image, "
          "unpadded";
    return std::nullopt;
  }
  const mlir::Type t =
      typeOf(pair->producer.last->getResult(0)).getElementType();
  if (!t.isF16() && !t.isBF16()) {
    why = "a pooled implicit GEMM passes fp16 or bf16 tiles";
    return std::nullopt;
  }
  if (!handedOverOnChip(*pair, why))
    return std::nullopt;
  return pair;
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

/// A binary epilogue step reading `other` broadcast to the anchor's output
/// `out` (channels on `channelAxis`, the kernel's output `kernelOut`);
/// nullopt where the exit DFG cannot index it.
std::optional<EpilogueOp> operandStep(Op op, mlir::Value other,
                                      llvm::ArrayRef<int64_t> out,
                                      size_t channelAxis,
                                      const std::vector<int64_t> &kernelOut,
                                      Binder &b) {
  auto os = shapeOf(other);
  switch (operandForm(os, out, channelAxis)) {
  case OperandForm::Scalar:
    return EpilogueOp::binary(op, b.add("scalar", other), {1});
  case OperandForm::PerChannel:
    return EpilogueOp::binary(op, b.add("bias", other), {out[channelAxis]});
  case OperandForm::Full:
    return EpilogueOp::binary(op, b.add("res", other), kernelOut);
  case OperandForm::Other:
    if (auto view = broadcastView(os, out, kernelOut))
      return EpilogueOp::binary(op, b.add("bcast", other), *view);
    if (auto dv = digitView(os, out, kernelOut))
      return EpilogueOp::binary(op, b.add("bcast", other), dv->first,
                                dv->second);
    return std::nullopt;
  }
  return std::nullopt;
}

/// The epilogue of `chain` after an anchor whose output has shape `out`
/// with channels on `channelAxis`; nullopt with `error` if an operand has a
/// form the exit DFG cannot read.
std::optional<std::vector<EpilogueOp>>
epilogueOf(const Analysis &a, llvm::ArrayRef<int64_t> out, size_t channelAxis,
           const std::vector<int64_t> &kernelOut, Binder &b,
           std::string &error) {
  std::vector<EpilogueOp> e;
  mlir::Operation *prev = a.anchor;
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
    auto step = operandStep(s.op, other, out, channelAxis, kernelOut, b);
    if (!step) {
      error = opName(op) + " reads an operand that broadcasts to the output "
                           "in a way the kernel cannot index";
      return std::nullopt;
    }
    e.push_back(*step);
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
  // Builders make fp32 tensors; 16-bit float values are stored as such.
  for (size_t i = 0; i < g.args.size(); ++i) {
    auto t = dfgType(g.args[i]);
    if (t && (*t == dfg::Type::F16 || *t == dfg::Type::BF16))
      codegen::setTensorType(*k, k->tensors[i].name, *t);
  }
  // A product's B that is a constant: no kernel writes it.
  k->weightB = k->mma && g.args.size() > 1 &&
               llvm::isa_and_nonnull<ConstantOp>(g.args[1].getDefiningOp());
  g.kernel = std::move(*k);
  return g;
}

/// What every anchored lowering starts from: the anchor's description
/// (OpDesc, the one the model bounds) and its group's binder, with Y bound
/// to the group's result.
struct Anchored {
  const Analysis &a;
  OpDesc d;
  std::vector<int64_t> out; // the anchor's result shape
  Binder b;
};

Anchored anchored(const Analysis &a) {
  Anchored x{a, *describeOp(a.anchor), shapeOf(a.anchor->getResult(0)), {}};
  x.b.values["Y"] = a.last->getResult(0);
  return x;
}

/// Whether tensor cores take operands of type t for op d: 16-bit floats,
/// or fp32 rounded to tf32 where the model allows it (OpDesc::tf32).
bool tensorCoreOperand(dfg::Type t, const OpDesc &d) {
  return t == dfg::Type::F16 || t == dfg::Type::BF16 ||
         (t == dfg::Type::F32 && d.tf32);
}

/// A channels-last conv (or a conv_sum, whose K runs on into `x2`): the
/// implicit GEMM of its pixels on tensor cores, its epilogue a product's
/// (channels innermost).
std::optional<GroupKernel> lowerImplicitGemm(mlir::Operation *op,
                                             mlir::Value x0, mlir::Value x2,
                                             mlir::Value w, mlir::Value bias,
                                             Anchored &x, const TileParams &p,
                                             const std::string &name,
                                             std::string &error) {
  auto t = dfgType(x0);
  if (!p.tensorCore() || !t || !tensorCoreOperand(*t, x.d)) {
    error = opName(op) + ": a channels-last conv runs on tensor cores only, "
                         "in fp16, bf16 or tf32";
    return std::nullopt;
  }
  x.b.values["A"] = x0;
  if (x2)
    x.b.values["A2"] = x2;
  x.b.values["B"] = w;
  const std::vector<int64_t> kout{x.d.N, x.d.K};
  std::vector<EpilogueOp> epi;
  if (bias)
    epi.push_back(EpilogueOp::binary(Op::Add, x.b.add("bias", bias), {x.d.K}));
  auto rest = epilogueOf(x.a, x.out, x.out.size() - 1, kout, x.b, error);
  if (!rest)
    return std::nullopt;
  epi.insert(epi.end(), rest->begin(), rest->end());
  return finish(codegen::buildMmaMatMul(name, x.d, p, *t, epi, error, {}), x.b,
                "conv", error);
}

std::optional<GroupKernel> lowerConv(ConvOp conv, Anchored &x,
                                     const TileParams &p,
                                     const std::string &name,
                                     std::string &error) {
  if (conv.getChannelsLast() && conv.getGroup() == 1 && !x.a.inPlace.empty()) {
    // The group holds the stem's planar input chain (analyse's in-place
    // ops): A is the NCHW tensor it starts from.
    const std::optional<PlanarInput> in = planarInput(conv);
    if (!in || in->ops.size() != x.a.inPlace.size()) {
      error = opName(conv) + ": ops before a conv are its planar input only";
      return std::nullopt;
    }
    x.d.planarC = shapeOf(in->nchw)[1];
    auto g = lowerImplicitGemm(conv, conv.getX(), {}, conv.getW(), conv.getB(),
                               x, p, name, error);
    if (g) {
      g->args[0] = in->nchw; // A, the kernel's first tensor
      codegen::setTensorType(g->kernel, "A", *dfgType(in->nchw));
    }
    return g;
  }
  if (conv.getChannelsLast() && conv.getGroup() == 1)
    return lowerImplicitGemm(conv, conv.getX(), {}, conv.getW(), conv.getB(), x,
                             p, name, error);
  if (shapeOf(conv.getX()).size() != 4) {
    error = "only 2-D convolutions are generated";
    return std::nullopt;
  }
  x.b.values["X"] = conv.getX();
  x.b.values["Wt"] = conv.getW();
  // Channels on axis 1, or innermost (a channels-last depthwise conv).
  const size_t ch = conv.getChannelsLast() ? x.out.size() - 1 : 1;
  std::vector<EpilogueOp> epi;
  if (conv.getB())
    epi.push_back(
        EpilogueOp::binary(Op::Add, x.b.add("bias", conv.getB()), {x.out[ch]}));
  auto rest = epilogueOf(x.a, x.out, ch, x.out, x.b, error);
  if (!rest)
    return std::nullopt;
  epi.insert(epi.end(), rest->begin(), rest->end());
  if (x.d.channelVector())
    return finish(codegen::buildChannelVectors(
                      name, x.d, codegen::ChannelVectorLoop::Reduce::Depthwise,
                      p, epi, error),
                  x.b, "conv", error);
  return finish(codegen::buildConv(name, x.d, p, epi, error), x.b, "conv",
                error);
}

/// The view a tensor-core kernel reads `operand` through, and the tensor it
/// reads: the input of the slices and transposes of `inPlace` that compute
/// operand, at its strides from the slices' offset. Nullopt where no op of
/// inPlace computes operand.
std::optional<std::pair<codegen::MmaView, mlir::Value>>
inPlaceView(mlir::Value operand, llvm::ArrayRef<mlir::Operation *> inPlace) {
  llvm::SmallVector<mlir::Operation *> chain; // operand's first
  mlir::Value base = operand;
  for (mlir::Operation *def = base.getDefiningOp();
       def && llvm::is_contained(inPlace, def); def = base.getDefiningOp()) {
    chain.push_back(def);
    base = def->getOperand(0);
  }
  if (chain.empty())
    return std::nullopt;
  codegen::MmaView v;
  v.shape = shapeOf(base);
  std::vector<int64_t> shape = v.shape,
                       strides = codegen::denseStrides(v.shape);
  for (mlir::Operation *op : llvm::reverse(chain)) {
    if (auto s = llvm::dyn_cast<SliceOp>(op)) {
      for (size_t d = 0; d < shape.size(); ++d)
        v.offset += s.getStarts()[d] * strides[d];
      shape = shapeOf(s.getResult());
      continue;
    }
    auto perm = llvm::cast<TransposeOp>(op).getPerm();
    std::vector<int64_t> sh, st;
    for (int64_t axis : perm)
      sh.push_back(shape[axis]), st.push_back(strides[axis]);
    shape = sh, strides = st;
  }
  const size_t r = shape.size();
  v.batchExtents.assign(shape.begin(), shape.end() - 2);
  v.batchStrides.assign(strides.begin(), strides.end() - 2);
  v.rowStride = strides[r - 2];
  return std::make_pair(v, base);
}

std::optional<GroupKernel> lowerMatMul(mlir::Operation *op, Anchored &x,
                                       const TileParams &p,
                                       const std::string &name,
                                       std::string &error) {
  mlir::Value A = op->getOperand(0), B = op->getOperand(1), C;
  auto as = shapeOf(A), bs = shapeOf(B);
  if (auto g = llvm::dyn_cast<GemmOp>(op)) {
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
  // Attention's products: both operands carry the same batch axes.
  if (bs.size() > 2 && (as.size() != bs.size() ||
                        !std::equal(as.begin(), as.end() - 2, bs.begin()))) {
    error = "batched matmuls whose operands broadcast are not generated yet";
    return std::nullopt;
  }
  const OpDesc &d = x.d;
  x.b.values["A"] = A;
  x.b.values["B"] = B;
  // Operands the kernel reads in place, from the transposes' inputs.
  std::array<std::optional<codegen::MmaView>, 2> views;
  for (int i = 0; i < 2; ++i)
    if (auto v = inPlaceView(op->getOperand(i), x.a.inPlace)) {
      if (as.size() != bs.size()) {
        error = opName(op) + ": an operand read in place needs both batched";
        return std::nullopt;
      }
      views[i] = v->first;
      x.b.values[i ? "B" : "A"] = v->second;
    }
  if ((views[0] || views[1]) && !p.tensorCore()) {
    error = "transposed operands are read in place by tensor-core kernels "
            "only";
    return std::nullopt;
  }
  std::vector<int64_t> kout = d.batch > 1
                                  ? std::vector<int64_t>{d.batch, d.N, d.K}
                                  : std::vector<int64_t>{d.N, d.K};
  std::vector<EpilogueOp> epi;
  if (C) {
    auto step = operandStep(Op::Add, C, x.out, x.out.size() - 1, kout, x.b);
    if (!step) {
      error = opName(op) + ": its addend broadcasts to the output in a way "
                           "the kernel cannot index";
      return std::nullopt;
    }
    epi.push_back(*step);
  }
  auto rest = epilogueOf(x.a, x.out, x.out.size() - 1, kout, x.b, error);
  if (!rest)
    return std::nullopt;
  epi.insert(epi.end(), rest->begin(), rest->end());
  std::optional<codegen::Kernel> k;
  if (!p.tensorCore()) {
    k = codegen::buildMatMul(name, d, p, epi, error);
  } else {
    auto ta = dfgType(A), tb = dfgType(B);
    if (!ta || ta != tb || !tensorCoreOperand(*ta, d)) {
      error = opName(op) + ": tensor cores take two fp16, two bf16 or (under "
                           "--precision tf32) two fp32 operands";
      return std::nullopt;
    }
    k = codegen::buildMmaMatMul(name, d, p, *ta, epi, error, views);
  }
  if (k && x.a.store) {
    // The transpose's axis j is out's axis perm[j], a digit of kout's.
    TransposeOp t = x.a.store;
    auto runs = runsOf(x.out, kout);
    if (!runs) {
      error = opName(t) + ": the product's output axes do not split";
      return std::nullopt;
    }
    std::vector<codegen::OutputDigit> digits;
    for (int64_t axis : t.getPerm())
      digits.push_back(digitOf(size_t(axis), x.out, *runs));
    if (!codegen::storeDigits(*k, shapeOf(t.getResult()), digits, error))
      return std::nullopt;
  }
  return finish(std::move(k), x.b, "matmul", error);
}

std::optional<GroupKernel> lowerPool(mlir::Value X, codegen::Pooling pooling,
                                     Anchored &x, const TileParams &p,
                                     const std::string &name,
                                     std::string &error) {
  if (shapeOf(X).size() != 4) {
    error = "only 2-D pooling is generated";
    return std::nullopt;
  }
  x.b.values["X"] = X;
  // Channels on axis 1, or innermost (a channels-last pooling).
  auto epi =
      epilogueOf(x.a, x.out, x.d.channelsLast ? 3 : 1, x.out, x.b, error);
  if (!epi)
    return std::nullopt;
  if (x.d.channelVector()) {
    using Reduce = codegen::ChannelVectorLoop::Reduce;
    const Reduce r = pooling == codegen::Pooling::Max ? Reduce::Max
                     : pooling == codegen::Pooling::Average
                         ? Reduce::Average
                         : Reduce::AverageWithPad;
    return finish(codegen::buildChannelVectors(name, x.d, r, p, *epi, error),
                  x.b, "pool", error);
  }
  return finish(codegen::buildPool(name, x.d, pooling, p, *epi, error), x.b,
                "pool", error);
}

/// A row op's computation; nullopt (with `error`) for rows the generator
/// cannot read: the reduced extent must be last and contiguous.
std::optional<codegen::RowSpec> rowSpec(mlir::Operation *op, Binder &b,
                                        std::string &error) {
  auto x = shapeOf(op->getOperand(0));
  codegen::RowSpec s;
  if (llvm::isa<GlobalAveragePoolOp>(op)) {
    s.op = codegen::RowOp::ReduceMean;
  } else if (auto sm = llvm::dyn_cast<SoftmaxOp>(op)) {
    if (int64_t(sm.getAxis()) != int64_t(x.size()) - 1) {
      error = opName(op) + ": softmax over an axis other than the last is not "
                           "generated yet";
      return std::nullopt;
    }
    s.op = codegen::RowOp::Softmax;
  } else if (auto ln = llvm::dyn_cast<LayerNormalizationOp>(op)) {
    int64_t length =
        product(llvm::ArrayRef<int64_t>(x).drop_front(ln.getAxis()));
    s.op = codegen::RowOp::LayerNorm;
    s.epsilon = ln.getEpsilon().convertToDouble();
    s.bias = bool(ln.getB());
    if (product(shapeOf(ln.getScale())) != length ||
        (ln.getB() && product(shapeOf(ln.getB())) != length)) {
      error = opName(op) + ": scale and bias must cover the normalised axes";
      return std::nullopt;
    }
    b.values["scale"] = ln.getScale();
    if (ln.getB())
      b.values["bias"] = ln.getB();
  } else if (llvm::isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op)) {
    auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes").asArrayRef();
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != int64_t(x.size() - axes.size() + i)) {
        error = opName(op) + ": only reductions over the last axes are "
                             "generated yet";
        return std::nullopt;
      }
    s.op = llvm::isa<ReduceMeanOp>(op)  ? codegen::RowOp::ReduceMean
           : llvm::isa<ReduceSumOp>(op) ? codegen::RowOp::ReduceSum
                                        : codegen::RowOp::ReduceMax;
  } else {
    error = opName(op) + " has no kernel builder yet";
    return std::nullopt;
  }
  return s;
}

std::optional<GroupKernel> lowerRowOp(mlir::Operation *op, Anchored &x,
                                      const TileParams &p,
                                      const std::string &name,
                                      std::string &error, bool rowsFromShared) {
  if (!x.a.chain.empty()) {
    error = opName(op) + " takes no fused ops after it yet";
    return std::nullopt;
  }
  x.b.values["X"] = op->getOperand(0);
  auto s = rowSpec(op, x.b, error);
  if (!s)
    return std::nullopt;
  s->sharedInput = rowsFromShared;
  return finish(codegen::buildRowOp(name, x.d, *s, p, error), x.b, "row",
                error);
}

std::optional<GroupKernel> lowerAnchored(const Analysis &a, const TileParams &p,
                                         const std::string &name,
                                         std::string &error,
                                         bool rowsFromShared = false) {
  mlir::Operation *op = a.anchor;
  Anchored x = anchored(a);
  if (auto conv = llvm::dyn_cast<ConvOp>(op))
    return lowerConv(conv, x, p, name, error);
  if (auto cs = llvm::dyn_cast<ConvSumOp>(op))
    return lowerImplicitGemm(cs, cs.getX(), cs.getX2(), cs.getW(), cs.getB(), x,
                             p, name, error);
  if (isMatMulOp(op))
    return lowerMatMul(op, x, p, name, error);
  if (auto mp = llvm::dyn_cast<MaxPoolOp>(op))
    return lowerPool(mp.getX(), codegen::Pooling::Max, x, p, name, error);
  if (auto ap = llvm::dyn_cast<AveragePoolOp>(op))
    return lowerPool(ap.getX(),
                     ap.getCountIncludePad() ? codegen::Pooling::AverageWithPad
                                             : codegen::Pooling::Average,
                     x, p, name, error);
  return lowerRowOp(op, x, p, name, error, rowsFromShared);
}

/// The inputs and steps of an elementwise kernel, op by op (see
/// codegen::ElementwiseInput and ElementwiseStep): each op of the group
/// becomes a step, an input read through an index function (data movement
/// of the group's inputs), or nothing (it reads an input broadcast or
/// permuted).
class ElementwiseLowering {
public:
  explicit ElementwiseLowering(std::vector<int64_t> out)
      : out(std::move(out)) {}

  bool add(mlir::Operation *op, std::string &error);
  /// The kernel, once every op is added; `last` is the group's result.
  std::optional<GroupKernel> build(mlir::Operation *last, const TileParams &p,
                                   const std::string &name, std::string &error);

private:
  int input(mlir::Value v, std::vector<int64_t> perm);
  bool fromOutside(mlir::Operation *op, mlir::Value v, std::string &error);
  int outAxis(llvm::ArrayRef<int64_t> res, size_t lead, size_t j) const {
    return res[j] == 1 && out[lead + j] != 1 ? codegen::ElementwiseInput::kFixed
                                             : int(lead + j);
  }
  bool addConcat(ConcatOp cat, std::string &error);
  bool addSlice(SliceOp sl, std::string &error);
  bool addGather(GatherOp g, std::string &error);
  bool addGatherElements(GatherElementsOp g, std::string &error);
  bool addPad(PadOp pad, std::string &error);
  bool addScalar(mlir::Operation *op, std::string &error);

  std::vector<int64_t> out;
  llvm::DenseMap<mlir::Operation *, int> stepOf;
  llvm::DenseMap<mlir::Value, int> inputOf;
  std::vector<codegen::ElementwiseInput> inputs;
  std::vector<codegen::ElementwiseStep> steps;
  Binder b;
};

int ElementwiseLowering::input(mlir::Value v, std::vector<int64_t> perm) {
  auto it = inputOf.find(v);
  if (it != inputOf.end() && perm.empty())
    return it->second;
  int i = int(inputs.size());
  auto shape = shapeOf(v);
  if (shape.empty())
    shape = {1}; // a scalar broadcasts as a one-element vector
  inputs.push_back({b.add("in", v), shape, std::move(perm)});
  inputs.back().type = *dfgType(v);
  if (inputs.back().perm.empty())
    inputOf[v] = -1 - i; // a step argument, like the return value
  return -1 - i;
}

// Data movement reads an input of the group through an index function; its
// result must reach the output by broadcasting.
bool ElementwiseLowering::fromOutside(mlir::Operation *op, mlir::Value v,
                                      std::string &error) {
  auto *def = v.getDefiningOp();
  if (def && stepOf.count(def)) {
    error = opName(op) + ": data movement of a value computed in the "
                         "kernel is not fused (only of its inputs)";
    return false;
  }
  return true;
}

// out = the input whose span along the axis holds the position, read
// shifted back by its offset (a Pick: the emitter bisects the offsets and
// reads that input alone).
bool ElementwiseLowering::addConcat(ConcatOp cat, std::string &error) {
  if (shapeOf(cat.getResult()) != out) {
    error = opName(cat) + ": a concat is fused only as the kernel's output";
    return false;
  }
  int64_t axis = cat.getAxis(), offset = 0;
  std::vector<int> parts; // step arguments: -1 is input 0
  for (mlir::Value v : cat.getInputs()) {
    if (!fromOutside(cat, v, error))
      return false;
    auto shape = shapeOf(v);
    codegen::ElementwiseInput x{b.add("part", v), shape};
    x.type = *dfgType(v);
    x.outsideReadsZero = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      x.follows.push_back(int(d));
      x.start.push_back(int64_t(d) == axis ? -offset : 0);
      x.step.push_back(1);
    }
    offset += shape[axis];
    parts.push_back(-1 - int(inputs.size()));
    inputs.push_back(x);
  }
  steps.push_back({Op::Pick, parts, double(axis), 0});
  stepOf[cat] = int(steps.size()) - 1;
  return true;
}

// A slice reads its input at start + step x position.
bool ElementwiseLowering::addSlice(SliceOp sl, std::string &error) {
  if (!fromOutside(sl, sl.getData(), error))
    return false;
  auto res = shapeOf(sl.getOutput()), data = shapeOf(sl.getData());
  if (!broadcastsTo(res, out) || res.size() != data.size()) {
    error = opName(sl) + ": its result does not broadcast to the output";
    return false;
  }
  size_t lead = out.size() - res.size();
  codegen::ElementwiseInput dx{b.add("in", sl.getData()), data};
  dx.type = *dfgType(sl.getData());
  for (size_t d = 0; d < data.size(); ++d) {
    if (sl.getSteps()[d] <= 0) {
      error = opName(sl) + ": slices with negative steps are not "
                           "generated yet";
      return false;
    }
    dx.follows.push_back(outAxis(res, lead, d));
    dx.start.push_back(sl.getStarts()[d]);
    dx.step.push_back(sl.getSteps()[d]);
  }
  stepOf[sl] = -1 - int(inputs.size());
  inputs.push_back(dx);
  return true;
}

// out[..., i..., ...] = data[..., indices[i...], ...] (ONNX Gather): the
// data is read at a position loaded from the indices.
bool ElementwiseLowering::addGather(GatherOp g, std::string &error) {
  if (!fromOutside(g, g.getData(), error) ||
      !fromOutside(g, g.getIndices(), error))
    return false;
  auto res = shapeOf(g.getOutput());
  auto data = shapeOf(g.getData()), idx = shapeOf(g.getIndices());
  if (!broadcastsTo(res, out)) {
    error = opName(g) + ": its result does not broadcast to the output";
    return false;
  }
  size_t lead = out.size() - res.size();
  int64_t axis = g.getAxis();
  codegen::ElementwiseInput ix{b.add("idx", g.getIndices()),
                               idx.empty() ? std::vector<int64_t>{1} : idx};
  ix.type = *dfgType(g.getIndices());
  ix.follows = idx.empty() ? std::vector<int>{ix.kFixed} : std::vector<int>{};
  for (size_t e = 0; e < idx.size(); ++e)
    ix.follows.push_back(outAxis(res, lead, axis + e));
  codegen::ElementwiseInput dx{b.add("table", g.getData()), data};
  dx.type = *dfgType(g.getData());
  for (size_t d = 0; d < data.size(); ++d)
    dx.follows.push_back(int64_t(d) < axis ? outAxis(res, lead, d)
                         : int64_t(d) == axis
                             ? dx.kGathered
                             : outAxis(res, lead, d - 1 + idx.size()));
  dx.indices = int(inputs.size());
  inputs.push_back(ix);
  stepOf[g] = -1 - int(inputs.size());
  inputs.push_back(dx);
  return true;
}

// out[i...] = data[i... with i_axis = indices[i...]] (ONNX GatherElements):
// the indices have the output's shape, the data is read along `axis` at the
// loaded position and elsewhere at the output's.
bool ElementwiseLowering::addGatherElements(GatherElementsOp g,
                                            std::string &error) {
  if (!fromOutside(g, g.getData(), error) ||
      !fromOutside(g, g.getIndices(), error))
    return false;
  auto res = shapeOf(g.getOutput()), data = shapeOf(g.getData());
  if (!broadcastsTo(res, out)) {
    error = opName(g) + ": its result does not broadcast to the output";
    return false;
  }
  size_t lead = out.size() - res.size();
  int64_t axis = g.getAxis();
  codegen::ElementwiseInput ix{b.add("idx", g.getIndices()), res};
  ix.type = *dfgType(g.getIndices());
  codegen::ElementwiseInput dx{b.add("table", g.getData()), data};
  dx.type = *dfgType(g.getData());
  for (size_t d = 0; d < res.size(); ++d) {
    ix.follows.push_back(outAxis(res, lead, d));
    dx.follows.push_back(int64_t(d) == axis ? dx.kGathered
                                            : outAxis(res, lead, d));
  }
  dx.indices = int(inputs.size());
  inputs.push_back(ix);
  stepOf[g] = -1 - int(inputs.size());
  inputs.push_back(dx);
  return true;
}

// A pad with zeros reads its input shifted back by the begin pads, the
// positions outside it reading 0; a transposed input through both.
bool ElementwiseLowering::addPad(PadOp pad, std::string &error) {
  if (pad.getMode() != "constant" || pad.getValue().convertToDouble() != 0) {
    error = opName(pad) + ": only pads with zeros are generated yet";
    return false;
  }
  if (shapeOf(pad.getOutput()) != out) {
    error = opName(pad) + ": a pad is fused only at the output's shape";
    return false;
  }
  const size_t r = out.size();
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  int i;
  auto t = pad.getData().getDefiningOp<TransposeOp>();
  if (t && stepOf.count(t) && t->hasOneUse()) {
    i = -1 - stepOf[t]; // the transpose's input, read by the pad alone
    perm = inputs[i].perm;
  } else {
    if (!fromOutside(pad, pad.getData(), error))
      return false;
    i = int(inputs.size());
    inputs.push_back({b.add("in", pad.getData()), shapeOf(pad.getData())});
    inputs.back().type = *dfgType(pad.getData());
  }
  codegen::ElementwiseInput &x = inputs[i];
  x.perm.clear();
  x.follows.assign(r, 0), x.start.assign(r, 0), x.step.assign(r, 1);
  for (size_t d = 0; d < r; ++d)
    x.follows[perm[d]] = int(d), x.start[perm[d]] = -pad.getPads()[d];
  x.outsideReadsZero = true;
  stepOf[pad] = -1 - i;
  return true;
}

bool ElementwiseLowering::addScalar(mlir::Operation *op, std::string &error) {
  auto s = scalarOp(op);
  if (!s) {
    error = opName(op) + " is not an elementwise op the generator knows";
    return false;
  }
  codegen::ElementwiseStep st{s->op, {}, s->value, s->value2, s->cast};
  for (mlir::Value v : op->getOperands()) {
    auto *def = v.getDefiningOp();
    auto it = def ? stepOf.find(def) : stepOf.end();
    if (it != stepOf.end()) {
      st.args.push_back(it->second);
      continue;
    }
    if (!broadcastsTo(shapeOf(v), out)) {
      error = opName(op) + ": an operand does not broadcast to the output";
      return false;
    }
    st.args.push_back(input(v, {}));
  }
  stepOf[op] = int(steps.size());
  steps.push_back(st);
  return true;
}

bool ElementwiseLowering::add(mlir::Operation *op, std::string &error) {
  if (auto e = llvm::dyn_cast<ExpandOp>(op)) {
    // Expand reads its input broadcast: no step of its own.
    if (!fromOutside(op, e.getInput(), error))
      return false;
    if (!broadcastsTo(shapeOf(e.getOutput()), out)) {
      error = opName(op) + ": its result does not broadcast to the output";
      return false;
    }
    stepOf[op] = input(e.getInput(), {});
    return true;
  }
  if (auto cat = llvm::dyn_cast<ConcatOp>(op))
    return addConcat(cat, error);
  if (auto sl = llvm::dyn_cast<SliceOp>(op))
    return addSlice(sl, error);
  if (auto g = llvm::dyn_cast<GatherOp>(op))
    return addGather(g, error);
  if (auto g = llvm::dyn_cast<GatherElementsOp>(op))
    return addGatherElements(g, error);
  if (auto pad = llvm::dyn_cast<PadOp>(op))
    return addPad(pad, error);
  if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
    // A transpose reads an input of the group in permuted order.
    auto *def = t.getData().getDefiningOp();
    // One a pad reads alone takes the pad's shape (addPad).
    const bool padded =
        t->hasOneUse() && llvm::isa<PadOp>(*t->getUsers().begin());
    if ((def && stepOf.count(def)) ||
        (shapeOf(t.getResult()) != out && !padded)) {
      error = opName(op) + ": only transposes of the group's inputs to the "
                           "output's shape are fused";
      return false;
    }
    auto perm = t.getPerm();
    // Consumers read the input permuted; no step of its own.
    stepOf[op] = input(t.getData(), {perm.begin(), perm.end()});
    return true;
  }
  if (op->hasTrait<OpTrait::DataMovement>()) {
    error = opName(op) + " is not fused in elementwise kernels yet";
    return false;
  }
  return addScalar(op, error);
}

std::optional<GroupKernel> ElementwiseLowering::build(mlir::Operation *last,
                                                      const TileParams &p,
                                                      const std::string &name,
                                                      std::string &error) {
  b.values["Y"] = last->getResult(0);
  if (steps.empty() || stepOf[last] < 0) {
    // A lone transpose: its result is the permuted input itself, copied
    // (max(x, x) is x, NaN included).
    int in = stepOf[last];
    steps.push_back({Op::Max, {in, in}, 0, 0});
  }
  return finish(codegen::buildElementwise(name, *describeOp(last), out, inputs,
                                          steps, p, error),
                b, "ew", error);
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
  ElementwiseLowering ew(out);
  for (mlir::Operation *op : ops)
    if (!ew.add(op, error))
      return std::nullopt;
  return ew.build(a.last, p, name, error);
}

std::optional<GroupKernel> lowerShared(llvm::ArrayRef<mlir::Operation *> ops,
                                       const TileParams &p,
                                       const TileParams &predecessor,
                                       const std::string &name,
                                       std::string &error) {
  auto sa = analyseShared(ops, error);
  if (!sa)
    return std::nullopt;
  auto pre = lowerAnchored(sa->producer, predecessor, "pre", error);
  if (!pre)
    return std::nullopt;
  auto post = lowerAnchored(sa->consumer, p, name, error, true);
  if (!post)
    return std::nullopt;
  std::string input = isMatMulOp(sa->consumer.anchor) ? "A" : "X";
  auto k = codegen::fuseShared(pre->kernel, post->kernel, input, error);
  if (!k)
    return std::nullopt;
  return joined(std::move(*k), *post, *pre, codegen::kProducerPrefix, "fused");
}

/// A chained product's kernel: the first product tiled by `p`, the second
/// by codegen::chainParams.
std::optional<GroupKernel> lowerChained(llvm::ArrayRef<mlir::Operation *> ops,
                                        const TileParams &p,
                                        const std::string &name,
                                        std::string &error) {
  auto sa = analyseChained(ops, error);
  if (!sa)
    return std::nullopt;
  auto pre = lowerAnchored(sa->producer, p, name, error);
  if (!pre)
    return std::nullopt;
  if (!codegen::stagesOutput(pre->kernel)) {
    error = "a chained product's first product must store its output "
            "through a staged tile";
    return std::nullopt;
  }
  auto p2 = codegen::chainParams(p, *describeOp(sa->consumer.anchor));
  if (!p2) {
    error = "no mma.sync tiling chains after these parameters";
    return std::nullopt;
  }
  auto post = lowerAnchored(sa->consumer, *p2, "chain", error);
  if (!post)
    return std::nullopt;
  // The first result stays on chip where the second product alone reads it.
  mlir::Value mid = sa->producer.last->getResult(0);
  const bool shared = llvm::any_of(mid.getUsers(), [&](mlir::Operation *u) {
    return u != sa->consumer.anchor;
  });
  auto k = codegen::fuseChained(pre->kernel, post->kernel, "A", error, shared);
  if (!k)
    return std::nullopt;
  return joined(std::move(*k), *pre, *post, codegen::kChainPrefix, "chain");
}

/// A pooled implicit GEMM's kernel: the conv tiled by `p`, its output the
/// pooling's.
std::optional<GroupKernel> lowerPooled(const SharedAnalysis &sa,
                                       const TileParams &p,
                                       const std::string &name,
                                       std::string &error) {
  auto g = lowerAnchored(sa.producer, p, name, error);
  if (!g)
    return std::nullopt;
  if (!codegen::poolsStagedTile(g->kernel)) {
    error = "a pooled implicit GEMM stages its output tile alone";
    return std::nullopt;
  }
  mlir::Operation *S = sa.consumer.anchor;
  auto k = codegen::fusePooled(std::move(g->kernel), *describeOp(S),
                               llvm::isa<AveragePoolOp>(S), error);
  if (!k)
    return std::nullopt;
  for (size_t i = 0; i < k->tensors.size(); ++i)
    if (k->tensors[i].output)
      g->args[i] = S->getResult(0);
  // A planar input is read through the patch alone.
  k->patchA = k->desc.planarC > 0;
  if (k->patchA &&
      !codegen::patchable(*k, std::numeric_limits<int64_t>::max())) {
    error = "a planar input's conv reads it from a patch, on wgmma";
    return std::nullopt;
  }
  g->kernel = std::move(*k);
  g->family = "pooled";
  return g;
}

} // namespace

std::string opName(mlir::Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto n = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    s += " (node " + n.getName().str() + ")";
  return s;
}

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
    uint64_t bytes = uint64_t(codegen::elementBytes(t.type));
    for (int64_t d : t.shape)
      bytes *= uint64_t(d);
    c.argBytes.push_back(bytes);
    c.argOutput.push_back(t.output);
  }
  // Split-K's workspace (codegen::kernelParams): partials, then counters.
  const codegen::SplitKWorkspace w = codegen::splitKWorkspace(k);
  if (w.counters > 0) {
    c.argZeroed.assign(c.argBytes.size(), false);
    c.argBytes.push_back(uint64_t(w.partialFloats) * 4);
    c.argOutput.push_back(true);
    c.argZeroed.push_back(false);
    c.argBytes.push_back(uint64_t(w.counters) * 4);
    c.argOutput.push_back(true);
    c.argZeroed.push_back(true);
  }
  return c;
}

/// The math of a library call over `ops`: every tensor they read or write
/// fp32 (Fp32), fp16 (Fp16) or bf16 (Bf16); nullopt for mixed types, which
/// no library call takes.
std::optional<rt::LibraryMath>
libraryMath(llvm::ArrayRef<mlir::Operation *> ops) {
  std::optional<mlir::Type> type;
  for (mlir::Operation *op : ops)
    for (mlir::ValueRange range : {mlir::ValueRange(op->getOperands()),
                                   mlir::ValueRange(op->getResults())})
      for (mlir::Value v : range) {
        mlir::Type t = typeOf(v).getElementType();
        if (type && t != *type)
          return std::nullopt;
        type = t;
      }
  if (!type)
    return std::nullopt;
  if (type->isF32())
    return rt::LibraryMath::Fp32;
  if (type->isF16())
    return rt::LibraryMath::Fp16;
  if (type->isBF16())
    return rt::LibraryMath::Bf16;
  return std::nullopt;
}

std::optional<rt::ConvSpec> cudnnConv(llvm::ArrayRef<mlir::Operation *> ops,
                                      std::vector<mlir::Value> &args) {
  std::string why;
  auto a = analyse(ops, why);
  auto math = libraryMath(ops);
  if (!a || !a->anchor || !a->inPlace.empty() || !math)
    return std::nullopt;
  rt::ConvSpec s;
  s.math = *math;
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
  // Channels-last: x N x H x W x C, w K x FH x FW x C, y N x OH x OW x K.
  s.channelsLast = conv.getChannelsLast();
  const size_t ch = s.channelsLast ? 3 : 1, sp = s.channelsLast ? 1 : 2;
  s.N = x[0], s.C = x[ch], s.H = x[sp], s.W = x[sp + 1];
  s.K = w[0], s.FH = w[sp], s.FW = w[sp + 1];
  s.strideH = conv.getStrides()[0], s.strideW = conv.getStrides()[1];
  s.padH = conv.getPads()[0], s.padW = conv.getPads()[1];
  s.dilH = conv.getDilations()[0], s.dilW = conv.getDilations()[1];
  // cuDNN pads symmetrically: the end pads must match the begin pads.
  if (conv.getPads()[2] != s.padH || conv.getPads()[3] != s.padW)
    return std::nullopt;
  s.group = conv.getGroup();
  s.OH = out[sp], s.OW = out[sp + 1];
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
      OperandForm f = operandForm(shapeOf(other), out, ch);
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

namespace {
/// The value of a constant one-element float tensor.
std::optional<double> scalarConstant(mlir::Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c || product(shapeOf(v)) != 1)
    return std::nullopt;
  auto t = toHost(c.getValue());
  if (!t || !t->isFloat())
    return std::nullopt;
  return t->getF(0);
}
} // namespace

std::optional<rt::GemmSpec> cublasGemm(llvm::ArrayRef<mlir::Operation *> ops,
                                       std::vector<mlir::Value> &args) {
  std::string why;
  auto a = analyse(ops, why);
  auto math = libraryMath(ops);
  // A library call reads its operands from memory and stores its result
  // at one batch stride: no transpose in place or in the store.
  if (!a || !llvm::isa_and_nonnull<MatMulOp, MatMulAddOp, GemmOp>(a->anchor) ||
      !a->inPlace.empty() || a->store || !math)
    return std::nullopt;
  mlir::Operation *op = a->anchor;
  mlir::Value A = op->getOperand(0), B = op->getOperand(1), C;
  rt::GemmSpec s;
  s.math = *math;
  if (auto g = llvm::dyn_cast<GemmOp>(op)) {
    s.transA = g.getTransA(), s.transB = g.getTransB();
    C = g.getC();
    s.alpha = float(g.getAlpha().convertToDouble());
    if (C && g.getBeta().convertToDouble() != 1.0)
      return std::nullopt;
  } else if (auto ma = llvm::dyn_cast<MatMulAddOp>(op)) {
    C = ma.getC();
    s.transB = ma.getTransB();
  } else {
    s.transB = llvm::cast<MatMulOp>(op).getTransB();
  }
  auto as = shapeOf(A), bs = shapeOf(B), out = shapeOf(op->getResult(0));
  if (as.size() < 2 || bs.size() < 2)
    return std::nullopt;
  s.K = s.transA ? as[as.size() - 2] : as.back();
  s.N = s.transB ? bs[bs.size() - 2] : bs.back();
  if (bs.size() == 2) {
    // One B for every row of A: A's leading axes are rows.
    if (s.transA && as.size() != 2)
      return std::nullopt;
    s.M = product(as) / s.K;
    s.batchB = false;
  } else {
    // Attention's products: both operands carry the same batch axes.
    if (as.size() != bs.size() ||
        !std::equal(as.begin(), as.end() - 2, bs.begin()))
      return std::nullopt;
    s.batch = product(llvm::ArrayRef<int64_t>(as).drop_back(2));
    s.M = s.transA ? as.back() : as[as.size() - 2];
  }
  mlir::Value bias, z;
  // y's axes before the last two are the batch (or rows of a 2-D B).
  auto addend = [&](mlir::Value v) {
    auto vs = shapeOf(v);
    if (!broadcastsTo(vs, out))
      return false;
    std::vector<int64_t> padded = withLeadingOnes(vs, out.size());
    if (product(vs) == s.N && padded.back() == s.N && !s.bias) {
      s.bias = true, bias = v;
      return true;
    }
    if (s.residual)
      return false;
    bool full = padded == out;
    bool shared = s.batch > 1 && padded[out.size() - 1] == out.back() &&
                  padded[out.size() - 2] == out[out.size() - 2] &&
                  product(padded) == s.M * s.N;
    if (!full && !shared)
      return false;
    s.residual = true, s.batchZ = full, z = v;
    return true;
  };
  if (C && !addend(C))
    return std::nullopt;
  mlir::Operation *prev = op;
  for (mlir::Operation *next : a->chain) {
    if (s.act != rt::GemmAct::None)
      return std::nullopt; // the activation must be last
    mlir::Value other = next->getNumOperands() < 2 ? mlir::Value()
                        : next->getOperand(0).getDefiningOp() == prev
                            ? next->getOperand(1)
                            : next->getOperand(0);
    auto gelu = llvm::dyn_cast<GeluOp>(next);
    if (llvm::isa<ReluOp>(next)) {
      s.act = rt::GemmAct::Relu;
    } else if (gelu && gelu.getApproximate() == "tanh") {
      // cuBLASLt's GELU is the tanh form only; erf's stays generated.
      s.act = rt::GemmAct::GeluTanh;
    } else if (llvm::isa<MulOp>(next)) {
      // alpha scales the product only: nothing may have been added yet.
      auto v = scalarConstant(other);
      if (!v || s.bias || s.residual)
        return std::nullopt;
      s.alpha *= float(*v);
    } else if (llvm::isa<AddOp>(next)) {
      if (!addend(other))
        return std::nullopt;
    } else {
      return std::nullopt;
    }
    prev = next;
  }
  std::string error;
  if (!rt::checkGemmSpec(s, error))
    return std::nullopt;
  args = {A, B};
  if (s.bias)
    args.push_back(bias);
  if (s.residual)
    args.push_back(z);
  args.push_back(a->last->getResult(0));
  return s;
}

/// The smallest tiling of a's anchor, or where it reads operands in place
/// or is an implicit GEMM the smallest tensor-core one (one warp, a 16 x 16
/// block, 2 stages).
TileParams probeParams(const Analysis &a) {
  const OpDesc d = *describeOp(a.anchor ? a.anchor : a.last);
  TileParams p = smallestParams(d);
  if (!a.inPlace.empty() || d.im2col) {
    p.instr = MatrixInstr::MmaSync, p.warpsM = p.warpsN = 1, p.stages = 2;
    p.Nb = p.Kb = p.Cin = 16, p.Nt = 2, p.Kt = 4;
  }
  if (d.channelVector()) // one vector a thread
    p.Kb = p.Kt = d.channelVector();
  return p;
}

bool canGenerate(llvm::ArrayRef<mlir::Operation *> ops, std::string *why) {
  std::string w;
  bool ok;
  if (secondAnchor(ops)) {
    // Each phase as a kernel of its own, and the hand-over between them.
    auto sa = analyseShared(ops, w);
    if (!sa) {
      std::string pooled, chained;
      sa = analysePooled(ops, pooled);
      if (!sa)
        sa = analyseChained(ops, chained);
      if (!sa)
        w += "; as a pooled implicit GEMM: " + pooled +
             "; as a chained product: " + chained;
    }
    ok = sa && canGenerate(ops.take_front(sa->split), &w) &&
         canGenerate(ops.drop_front(sa->split), &w);
  } else {
    // The builders' own checks on the smallest tiling (one output a thread,
    // a tiny DFG): what they refuse for every tiling (shapes, operand forms,
    // ops without a builder) they refuse here, so the partition search never
    // picks a group that cannot be lowered.
    auto a = analyse(ops, w);
    ok = a && bool(lowerGroup(ops, probeParams(*a), "probe", w));
  }
  if (!ok && why)
    *why = w;
  return ok;
}

std::optional<GroupKernel> lowerGroup(llvm::ArrayRef<mlir::Operation *> ops,
                                      const TileParams &p,
                                      const std::string &name,
                                      std::string &error,
                                      const TileParams *predecessor) {
  if (secondAnchor(ops)) {
    std::string why;
    if (predecessor)
      return lowerShared(ops, p, *predecessor, name, error);
    if (auto pooled = analysePooled(ops, why))
      return lowerPooled(*pooled, p, name, error);
    return lowerChained(ops, p, name, error);
  }
  auto a = analyse(ops, error);
  if (!a)
    return std::nullopt;
  if (a->anchor)
    return lowerAnchored(*a, p, name, error);
  return lowerElementwise(ops, *a, p, name, error);
}

} // namespace cuts::driver
