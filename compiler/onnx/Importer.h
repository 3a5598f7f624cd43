//===- Importer.h - the ONNX importer's converter class (private) -*- C++
//-*-===//
//
// Private to compiler/onnx: the converters of one op family each live in
// their own file (OnnxImporter.cpp the graph and the plain ops, Activation.cpp,
// Attention.cpp, Einsum.cpp, Layout.cpp, Normalize.cpp, Reduce.cpp, Resize.cpp,
// Scatter.cpp) and share this class's value, attribute and
// op-creation helpers.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_ONNX_IMPORTER_H
#define CUTS_COMPILER_ONNX_IMPORTER_H

#include "compiler/onnx/OnnxImporter.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx.pb.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuts::import {

using namespace mlir;

struct ResizeAttrs; // Resize.cpp

// Element counts beyond this are refused: no GPU holds such a tensor, and
// their products would overflow int64 arithmetic downstream.
constexpr int64_t kMaxElements = int64_t(1) << 40;

inline bool tooManyElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return true;
    if (d != 0 && n > kMaxElements / d)
      return true;
    n *= d;
  }
  return false;
}

// Thrown-free error plumbing: every failing helper records one message and
// returns failure; the first message wins.
class Importer {
public:
  Importer(MLIRContext &ctx, StringRef modelDir, const ImportOptions &opts)
      : ctx(ctx), builder(&ctx), modelDir(modelDir.str()), opts(opts) {}

  OwningOpRef<ModuleOp> run(onnx::ModelProto &model);
  std::string error;

private:
  // The model's parts, in the order run() imports them.
  LogicalResult readOpset(const onnx::ModelProto &model);
  LogicalResult importInputs(const onnx::GraphProto &graph,
                             SmallVector<Type> &types,
                             SmallVector<std::string> &names);
  /// The shape of input `in` (named `what` in errors): --input-shape's
  /// where given (checked against what the model declares), else the
  /// model's, which must be static.
  FailureOr<SmallVector<int64_t>> inputShape(const onnx::ValueInfoProto &in,
                                             const std::string &what);
  LogicalResult importNode(const onnx::NodeProto &n);
  /// Output `out` computes `t`: the element type and the shape the model
  /// declares (where it declares them) must match.
  LogicalResult checkOutput(const onnx::ValueInfoProto &out,
                            RankedTensorType t);
  LogicalResult importOutputs(const onnx::GraphProto &graph, func::FuncOp func,
                              ArrayRef<Type> argTypes);

  using Converter = LogicalResult (Importer::*)(const onnx::NodeProto &);
  static const llvm::StringMap<Converter> &converters();
  friend std::vector<std::string> cuts::supportedOnnxOps();

  // Errors.
  LogicalResult fail(const Twine &msg) {
    if (error.empty())
      error = msg.str();
    return failure();
  }
  LogicalResult nodeFail(const Twine &msg) {
    return fail("node '" + nodeName + "' (" + node->op_type() + ", opset " +
                Twine(opset) + "): " + msg);
  }

  // Types and tensors.
  FailureOr<Type> elementType(int32_t onnxType, const Twine &what);
  /// `owned`: t is the model's own, whose raw_data the attribute may take
  /// over (an initializer, read once).
  FailureOr<ElementsAttr> tensorAttr(const onnx::TensorProto &t,
                                     const Twine &what,
                                     onnx::TensorProto *owned = nullptr);
  /// t's data as stored, in a blob: external data mapped in place, raw_data
  /// taken over from `owned`, else copied or converted. A model's weights
  /// can be gigabytes, so they are not copied where that can be avoided.
  FailureOr<AsmResourceBlob> tensorBlob(const onnx::TensorProto &t, Type et,
                                        int64_t numel, const Twine &what,
                                        onnx::TensorProto *owned);

  // Values.
  FailureOr<Value> lookup(const std::string &name);
  Value input(int k) {
    if (k >= node->input_size() || node->input(k).empty())
      return nullptr;
    auto v = lookup(node->input(k));
    return succeeded(v) ? *v : nullptr;
  }
  bool hasInput(int k) const {
    return k < node->input_size() && !node->input(k).empty();
  }
  FailureOr<Value> required(int k);
  std::optional<HostTensor> constantOf(Value v, int depth = 0);
  Attribute constantAttr(Value v, int depth);
  Attribute evaluate(Value v, int depth);
  FailureOr<std::vector<int64_t>> constInts(int k, const char *what);
  FailureOr<std::optional<double>> constScalar(int k, const char *what);
  LogicalResult define(int k, Value v);

  // Attributes of the current node.
  const onnx::AttributeProto *attr(StringRef name);
  FailureOr<int64_t> attrInt(StringRef name, int64_t dflt);
  FailureOr<float> attrFloat(StringRef name, float dflt);
  FailureOr<std::string> attrString(StringRef name, StringRef dflt);
  FailureOr<std::optional<std::vector<int64_t>>> attrInts(StringRef name);

  // Op creation: infer the result types first so that a failure becomes an
  // error naming the node (the ODS builders would abort instead).
  template <typename OpTy>
  FailureOr<Operation *> create(ValueRange operands,
                                ArrayRef<NamedAttribute> attrs);
  template <typename OpTy>
  LogicalResult emit(ValueRange operands, ArrayRef<NamedAttribute> attrs = {});
  /// The result of a new OpTy, or null: a null operand (an earlier failure,
  /// its error recorded) gives null, so a chain of ops is checked once.
  template <typename OpTy>
  Value make(ArrayRef<Value> operands, ArrayRef<NamedAttribute> attrs = {}) {
    if (llvm::any_of(operands, [](Value v) { return !v; }))
      return nullptr;
    auto op = create<OpTy>(ValueRange(operands), attrs);
    return succeeded(op) ? (*op)->getResult(0) : nullptr;
  }
  /// A constant of `values` along `axis` of a rank-`rank` shape (extent 1
  /// elsewhere), of element type `element`.
  Value alongAxis(ArrayRef<double> values, Type element, int64_t axis,
                  int64_t rank);
  /// The positions 0 .. count-1 along `axis` (alongAxis).
  Value positionsAlong(int64_t count, Type element, int64_t axis, int64_t rank);
  /// v cast to element type t; v itself where it has it already (or null).
  Value castTo(Value v, Type t);
  NamedAttribute named(StringRef n, Attribute a) {
    return builder.getNamedAttr(n, a);
  }
  Attribute i64(int64_t v) { return builder.getI64IntegerAttr(v); }
  Attribute f32(float v) { return builder.getF32FloatAttr(v); }
  Attribute f64(double v) { return builder.getF64FloatAttr(v); }
  Attribute ints(ArrayRef<int64_t> v) {
    return builder.getDenseI64ArrayAttr(v);
  }
  Attribute boolean(bool v) { return builder.getBoolAttr(v); }
  RankedTensorType typeOf(Value v) {
    return llvm::cast<RankedTensorType>(v.getType());
  }

  // Shared pieces of several converters.
  struct Window {
    std::vector<int64_t> kernel, strides, pads, dilations;
  };
  FailureOr<Window> window(Value x, std::optional<std::vector<int64_t>> kernel,
                           bool ceilMode);
  FailureOr<std::vector<int64_t>> axesFor(int inputIndex, int64_t rank,
                                          bool required);
  LogicalResult normaliseAxes(std::vector<int64_t> &axes, int64_t rank);

  // Converters, one per ONNX op type (see converters()).
  LogicalResult convConv(const onnx::NodeProto &);
  LogicalResult convConvTranspose(const onnx::NodeProto &);
  LogicalResult convMatMul(const onnx::NodeProto &);
  LogicalResult convGemm(const onnx::NodeProto &);
  template <typename OpTy> LogicalResult convBinary(const onnx::NodeProto &);
  template <typename OpTy> LogicalResult convUnary(const onnx::NodeProto &);
  template <bool Greater, bool OrEqual>
  LogicalResult convCompare(const onnx::NodeProto &);
  LogicalResult convMod(const onnx::NodeProto &);
  template <typename OpTy, bool Mean = false>
  LogicalResult convVariadic(const onnx::NodeProto &);
  LogicalResult convTrilu(const onnx::NodeProto &);
  LogicalResult convEinsum(const onnx::NodeProto &);
  // convEinsum's pieces: an operand's diagonals (its term loses the repeats)
  // and sums over letters not in `keep` (its term loses them), and the
  // product of two operands as one batched matmul.
  FailureOr<Value> einsumDiagonals(Value v, std::string &term);
  FailureOr<Value> einsumSum(Value v, std::string &term, StringRef keep);
  LogicalResult einsumProduct(Value a, StringRef ta, Value b, StringRef tb,
                              StringRef out,
                              const std::map<char, int64_t> &size);
  // v transposed from the axes `from` to `to` (one letter an axis), and
  // reshaped; v itself where nothing changes.
  FailureOr<Value> permuteAxes(Value v, StringRef from, StringRef to);
  FailureOr<Value> reshapeTo(Value v, ArrayRef<int64_t> shape);
  FailureOr<Value> result(FailureOr<Operation *> op);
  /// A rank-0 constant v of element type `element` (float or integer).
  Value scalarConstant(Type element, double v);
  LogicalResult convPow(const onnx::NodeProto &);
  LogicalResult convWhere(const onnx::NodeProto &);
  LogicalResult convLeakyRelu(const onnx::NodeProto &);
  LogicalResult convHardSigmoid(const onnx::NodeProto &);
  LogicalResult convGelu(const onnx::NodeProto &);
  LogicalResult convClip(const onnx::NodeProto &);
  LogicalResult convBatchNorm(const onnx::NodeProto &);
  LogicalResult convLayerNorm(const onnx::NodeProto &);
  LogicalResult convSoftmax(const onnx::NodeProto &);
  LogicalResult convMaxPool(const onnx::NodeProto &);
  LogicalResult convAveragePool(const onnx::NodeProto &);
  LogicalResult convGlobalAveragePool(const onnx::NodeProto &);
  LogicalResult convFlatten(const onnx::NodeProto &);
  LogicalResult convReshape(const onnx::NodeProto &);
  LogicalResult convTranspose(const onnx::NodeProto &);
  LogicalResult convConcat(const onnx::NodeProto &);
  LogicalResult convSplit(const onnx::NodeProto &);
  LogicalResult convSlice(const onnx::NodeProto &);
  LogicalResult convGather(const onnx::NodeProto &);
  LogicalResult convGatherElements(const onnx::NodeProto &);
  LogicalResult convGatherND(const onnx::NodeProto &);
  LogicalResult checkIndices(Value indices, int64_t n);
  LogicalResult convUnsqueeze(const onnx::NodeProto &);
  LogicalResult convSqueeze(const onnx::NodeProto &);
  LogicalResult convExpand(const onnx::NodeProto &);
  LogicalResult convCast(const onnx::NodeProto &);
  // Reductions (Reduce.cpp). A Reduce* node's axes (sorted; empty with
  // noop_with_empty_axes) and keepdims.
  struct ReduceSpec {
    std::vector<int64_t> axes;
    bool keep = true;
  };
  FailureOr<ReduceSpec> reduceSpec(const onnx::NodeProto &n, int64_t rank);
  /// x reduced ("sum", "mean", "max" or "min") over axes; x for none.
  Value reduce(StringRef kind, Value x, ArrayRef<int64_t> axes, bool keep);
  Value flipOrder(Value v);
  Value argMaxPosition(Value v, int64_t axis, bool last, bool keep);
  FailureOr<std::pair<Value, int64_t>> rowAxis(Value x);
  LogicalResult convRowwise(llvm::function_ref<Value(Value, int64_t)> op);
  Value logSoftmax(Value v, int64_t axis);
  LogicalResult convReduce(const onnx::NodeProto &);
  LogicalResult convArgReduce(const onnx::NodeProto &);
  LogicalResult convHardmax(const onnx::NodeProto &);
  LogicalResult convLogSoftmax(const onnx::NodeProto &);
  LogicalResult convTopK(const onnx::NodeProto &);
  LogicalResult convClassLoss(const onnx::NodeProto &);
  LogicalResult convCumSum(const onnx::NodeProto &);
  // Resize and Upsample (Resize.cpp).
  LogicalResult convResize(const onnx::NodeProto &);
  LogicalResult resizeAll(Value x, ArrayRef<int64_t> axes,
                          ArrayRef<double> scales, ArrayRef<int64_t> sizes,
                          ArrayRef<double> roi, StringRef policy,
                          const ResizeAttrs &r, double extrapolation);
  Value resizeAxis(Value x, int64_t axis, int64_t out, double scale,
                   double roiStart, double roiEnd, const ResizeAttrs &r,
                   double extrapolation);
  LogicalResult convPad(const onnx::NodeProto &);
  LogicalResult convIdentity(const onnx::NodeProto &);
  LogicalResult convDropout(const onnx::NodeProto &);
  LogicalResult convConstant(const onnx::NodeProto &);
  LogicalResult convConstantOfShape(const onnx::NodeProto &);
  LogicalResult convShape(const onnx::NodeProto &);
  LogicalResult convSize(const onnx::NodeProto &);
  LogicalResult convCastLike(const onnx::NodeProto &);
  LogicalResult convRMSNorm(const onnx::NodeProto &);
  LogicalResult convRange(const onnx::NodeProto &);
  // Activations and predicates from primitives (Activation.cpp).
  Value softplus(Value x);
  LogicalResult convActivation(const onnx::NodeProto &);
  LogicalResult convPRelu(const onnx::NodeProto &);
  LogicalResult convSign(const onnx::NodeProto &);
  LogicalResult convIsNaN(const onnx::NodeProto &);
  LogicalResult convIsInf(const onnx::NodeProto &);
  // Normalizations from reductions (Normalize.cpp).
  Value standardize(Value x, ArrayRef<int64_t> axes, double epsilon);
  Value perChannel(Value v, int64_t rank);
  LogicalResult convInstanceNorm(const onnx::NodeProto &);
  LogicalResult convGroupNorm(const onnx::NodeProto &);
  LogicalResult convMeanVarianceNorm(const onnx::NodeProto &);
  LogicalResult convLpNorm(const onnx::NodeProto &);
  LogicalResult convLRN(const onnx::NodeProto &);
  LogicalResult convGlobalMaxPool(const onnx::NodeProto &);
  // Rearranged and position-built tensors (Layout.cpp).
  Value reshaped(Value v, ArrayRef<int64_t> shape);
  LogicalResult convDepthSpace(const onnx::NodeProto &);
  LogicalResult convTile(const onnx::NodeProto &);
  LogicalResult convEyeLike(const onnx::NodeProto &);
  LogicalResult convOneHot(const onnx::NodeProto &);
  // Attention (Attention.cpp).
  Value splitHeads(Value v, int64_t heads);
  Value repeatHeads(Value v, int64_t reps);
  Value attentionBias(Value mask, Value nonpad, int64_t q, int64_t kv,
                      int64_t past, bool causal, int64_t left, int64_t right,
                      Type e);
  LogicalResult convAttention(const onnx::NodeProto &);
  // Scatters with constant indices (Scatter.cpp).
  Value scatterByMap(Value data, Value updates, ArrayRef<int64_t> map,
                     StringRef reduction);
  LogicalResult convScatter(const onnx::NodeProto &);

  MLIRContext &ctx;
  OpBuilder builder;
  std::string modelDir;
  const ImportOptions &opts;
  int batchedInputs = 0; // inputs given the batch profile's batch (axis 0)
  llvm::StringSet<> batchedNames; // their names (func args get cuts.batched)
  int64_t opset = 0;
  Block *body = nullptr;
  Operation *lastConstant = nullptr; // initializers go after this

  llvm::StringMap<Value> values;
  llvm::StringMap<onnx::TensorProto *> initializers;
  llvm::StringMap<std::string> argNames; // block argument -> graph input name
  llvm::DenseMap<Value, std::string> inputNameOf;
  llvm::DenseMap<Value, Attribute> constants; // memo of constantAttr
  llvm::StringSet<> blobNames;
  const onnx::NodeProto *node = nullptr;
  std::string nodeName;
  Location loc = UnknownLoc::get(&ctx);
};

//===----------------------------------------------------------------------===//
// Op creation
//===----------------------------------------------------------------------===//

template <typename OpTy>
FailureOr<Operation *> Importer::create(ValueRange operands,
                                        ArrayRef<NamedAttribute> attrs) {
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (diag.empty())
      diag = d.str();
    return success();
  });
  SmallVector<Type> types;
  DictionaryAttr dict = builder.getDictionaryAttr(attrs);
  if (failed(OpTy::inferReturnTypes(&ctx, loc, operands, dict,
                                    OpaqueProperties(nullptr), RegionRange(),
                                    types))) {
    (void)nodeFail(diag.empty() ? "inconsistent operand shapes" : diag);
    return failure();
  }
  for (Type t : types)
    if (tooManyElements(llvm::cast<RankedTensorType>(t).getShape())) {
      (void)nodeFail("result of more than 2^40 elements is not supported");
      return failure();
    }
  OperationState state(loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(types);
  Operation *op = builder.create(state);
  if (failed(mlir::verify(op))) {
    (void)nodeFail(diag.empty() ? "op does not verify" : diag);
    op->erase();
    return failure();
  }
  return op;
}

template <typename OpTy>
LogicalResult Importer::emit(ValueRange operands,
                             ArrayRef<NamedAttribute> attrs) {
  auto op = create<OpTy>(operands, attrs);
  if (failed(op))
    return failure();
  for (unsigned k = 0; k < (*op)->getNumResults(); ++k)
    (void)define(k, (*op)->getResult(k));
  return success();
}

} // namespace cuts::import

#endif // CUTS_COMPILER_ONNX_IMPORTER_H
