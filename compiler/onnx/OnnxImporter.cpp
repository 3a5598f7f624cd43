//===- OnnxImporter.cpp - ONNX ModelProto to the cuts dialect -------------===//
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/onnx/Importer.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx.pb.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

using namespace mlir;

namespace cuts::import {

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::elementType(int32_t t, const Twine &what) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return Type(builder.getF32Type());
  case onnx::TensorProto::FLOAT16:
    return Type(builder.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(builder.getBF16Type());
  case onnx::TensorProto::DOUBLE:
    return Type(builder.getF64Type());
  case onnx::TensorProto::BOOL:
    return Type(builder.getI1Type());
  case onnx::TensorProto::INT8:
    return Type(builder.getIntegerType(8));
  case onnx::TensorProto::INT16:
    return Type(builder.getIntegerType(16));
  case onnx::TensorProto::INT32:
    return Type(builder.getIntegerType(32));
  case onnx::TensorProto::INT64:
    return Type(builder.getIntegerType(64));
  case onnx::TensorProto::UINT8:
    return Type(builder.getIntegerType(8, /*isSigned=*/false));
  case onnx::TensorProto::UINT16:
    return Type(builder.getIntegerType(16, false));
  case onnx::TensorProto::UINT32:
    return Type(builder.getIntegerType(32, false));
  case onnx::TensorProto::UINT64:
    return Type(builder.getIntegerType(64, false));
  default:
    break;
  }
  static const char *names[] = {
      "UNDEFINED",      "FLOAT",        "UINT8",          "INT8",
      "UINT16",         "INT16",        "INT32",          "INT64",
      "STRING",         "BOOL",         "FLOAT16",        "DOUBLE",
      "UINT32",         "UINT64",       "COMPLEX64",      "COMPLEX128",
      "BFLOAT16",       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",        "INT4",           "FLOAT4E2M1"};
  std::string name = t >= 0 && t < int32_t(std::size(names))
                         ? names[t]
                         : "data type " + std::to_string(t);
  (void)fail(what + " has element type " + name +
             ", which cuts does not support");
  return failure();
}

static size_t storageBytes(Type et) {
  unsigned w = et.getIntOrFloatBitWidth();
  return w == 1 ? 1 : w / 8;
}

// A blob of `data` that keeps `owner` alive, or a copy where the data is
// not aligned for its elements.
template <typename Owner>
static AsmResourceBlob keptBlob(StringRef data, std::unique_ptr<Owner> owner) {
  constexpr size_t align = alignof(uint64_t);
  if (reinterpret_cast<uintptr_t>(data.data()) % align != 0)
    return HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(data.data(), data.size()), align);
  return AsmResourceBlob(
      ArrayRef<char>(data.data(), data.size()), align,
      [owner = std::move(owner)](void *, size_t, size_t) {},
      /*dataIsMutable=*/false);
}

FailureOr<AsmResourceBlob> Importer::tensorBlob(const onnx::TensorProto &t,
                                                Type et, int64_t numel,
                                                const Twine &what,
                                                onnx::TensorProto *owned) {
  size_t eb = storageBytes(et);
  size_t want = size_t(numel) * eb;
  auto sizeError = [&](size_t got) -> FailureOr<AsmResourceBlob> {
    (void)fail(what + " holds " + Twine(got) + " bytes of data, its shape " +
               "and type need " + Twine(want));
    return failure();
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        char *end = nullptr;
        long long v = std::strtoll(kv.value().c_str(), &end, 10);
        if (kv.value().empty() || *end || v < 0) {
          (void)fail(what + ": bad external data " + kv.key() + " '" +
                     kv.value() + "'");
          return failure();
        }
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty() || modelDir.empty() ||
        llvm::sys::path::is_absolute(location) ||
        StringRef(location).contains("..")) {
      (void)fail(what + ": external data location '" + location +
                 "' must be a relative path next to the model");
      return failure();
    }
    SmallString<256> path(modelDir);
    llvm::sys::path::append(path, location);
    // A slice past the file's end would be mapped, and read as a SIGBUS.
    const uint64_t slice = length >= 0 ? uint64_t(length) : uint64_t(want);
    uint64_t fileBytes = 0;
    if (!llvm::sys::fs::file_size(path, fileBytes) &&
        uint64_t(offset) + slice > fileBytes) {
      (void)fail(what + ": external data '" + path.str() + "' holds " +
                 Twine(fileBytes) + " bytes, the tensor's slice ends at " +
                 Twine(uint64_t(offset) + slice));
      return failure();
    }
    auto buf = llvm::MemoryBuffer::getFileSlice(path, slice, offset,
                                                /*IsVolatile=*/false);
    if (!buf) {
      (void)fail(what + ": cannot read external data '" + path.str() + "' (" +
                 buf.getError().message() + ")");
      return failure();
    }
    StringRef data = (*buf)->getBuffer();
    if (data.size() != want)
      return sizeError(data.size());
    return keptBlob(data, std::move(*buf));
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      return sizeError(t.raw_data().size());
    if (!owned)
      return HeapAsmResourceBlob::allocateAndCopyWithAlign(
          ArrayRef<char>(t.raw_data().data(), want), alignof(uint64_t));
    auto raw = std::make_unique<std::string>();
    raw->swap(*owned->mutable_raw_data());
    StringRef data = *raw;
    return keptBlob(data, std::move(raw));
  }
  std::string out(want, '\0');
  auto put = [&](size_t k, uint64_t bits) {
    std::memcpy(&out[k * eb], &bits, eb);
  };
  auto check = [&](int n) { return n == numel; };
  if (auto ft = llvm::dyn_cast<FloatType>(et); ft && (ft.isF32())) {
    if (!check(t.float_data_size()))
      return sizeError(size_t(t.float_data_size()) * 4);
    for (int64_t k = 0; k < numel; ++k) {
      float v = t.float_data(k);
      std::memcpy(&out[k * 4], &v, 4);
    }
  } else if (et.isF64()) {
    if (!check(t.double_data_size()))
      return sizeError(size_t(t.double_data_size()) * 8);
    for (int64_t k = 0; k < numel; ++k) {
      double v = t.double_data(k);
      std::memcpy(&out[k * 8], &v, 8);
    }
  } else if (et.isInteger(64) && !et.isUnsignedInteger()) {
    if (!check(t.int64_data_size()))
      return sizeError(size_t(t.int64_data_size()) * 8);
    for (int64_t k = 0; k < numel; ++k)
      put(k, uint64_t(t.int64_data(k)));
  } else if (et.isUnsignedInteger(64) || et.isUnsignedInteger(32)) {
    if (!check(t.uint64_data_size()))
      return sizeError(size_t(t.uint64_data_size()) * eb);
    for (int64_t k = 0; k < numel; ++k)
      put(k, t.uint64_data(k));
  } else {
    // int32_data carries every narrower type, f16 and bf16 as bit patterns.
    if (!check(t.int32_data_size()))
      return sizeError(size_t(t.int32_data_size()) * eb);
    for (int64_t k = 0; k < numel; ++k)
      put(k, uint64_t(int64_t(t.int32_data(k))));
  }
  return HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(out.data(), out.size()), alignof(uint64_t));
}

static std::string blobKey(StringRef name) {
  // Resource keys are bare identifiers: [A-Za-z_][A-Za-z0-9_$.]*.
  std::string key;
  for (char c : name)
    key += (llvm::isAlnum(c) || c == '_' || c == '.') ? c : '_';
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key = "_" + key;
  return key;
}

FailureOr<ElementsAttr> Importer::tensorAttr(const onnx::TensorProto &t,
                                             const Twine &what,
                                             onnx::TensorProto *owned) {
  auto et = elementType(t.data_type(), what);
  if (failed(et))
    return failure();
  SmallVector<int64_t> shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && numel > (int64_t(1) << 40) / d)) {
      (void)fail(what + " has an invalid or too large shape");
      return failure();
    }
    shape.push_back(d);
    numel *= d;
  }
  auto blob = tensorBlob(t, *et, numel, what, owned);
  if (failed(blob))
    return failure();
  auto type = RankedTensorType::get(shape, *et);
  if (numel == 0)
    return ElementsAttr(DenseElementsAttr::get(type, ArrayRef<Attribute>{}));
  std::string key = blobKey(t.name().empty() ? "constant" : t.name());
  return ElementsAttr(
      DenseResourceElementsAttr::get(type, key, std::move(*blob)));
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

FailureOr<Value> Importer::lookup(const std::string &name) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto init = initializers.find(name);
  if (init == initializers.end()) {
    (void)fail(
        "tensor '" + name + "'" +
        (node ? " used by node '" + nodeName + "' (" + node->op_type() + ")"
              : std::string()) +
        " is not produced by any node, input or initializer");
    return failure();
  }
  // Initializers become constants at the top of the body, in order of use.
  auto attr =
      tensorAttr(*init->second, "initializer '" + name + "'", init->second);
  if (failed(attr))
    return failure();
  OpBuilder::InsertionGuard g(builder);
  if (lastConstant)
    builder.setInsertionPointAfter(lastConstant);
  else
    builder.setInsertionPointToStart(body);
  auto c = builder.create<ConstantOp>(NameLoc::get(builder.getStringAttr(name)),
                                      attr->getShapedType(), *attr);
  lastConstant = c;
  Value v = c;
  values[name] = v;
  return v;
}

FailureOr<Value> Importer::required(int k) {
  if (!hasInput(k)) {
    (void)nodeFail("input " + Twine(k) + " is required");
    return failure();
  }
  return lookup(node->input(k));
}

LogicalResult Importer::define(int k, Value v) {
  if (k < node->output_size() && !node->output(k).empty())
    values[node->output(k)] = v;
  return success();
}

// Evaluates v at import time through the folders of the ops that compute it.
// Graph inputs have a value only when the caller bound one (shapeInputValues).
std::optional<HostTensor> Importer::constantOf(Value v, int depth) {
  Attribute a = constantAttr(v, depth);
  if (!a)
    return std::nullopt;
  return toHost(a);
}

Attribute Importer::constantAttr(Value v, int depth) {
  // Deep chains are activations, not shape arithmetic: give up rather than
  // recurse without bound (and do not remember a give-up as a verdict).
  if (!v || depth > 256)
    return nullptr;
  auto memo = constants.find(v);
  if (memo != constants.end())
    return memo->second;
  Attribute result = evaluate(v, depth);
  constants[v] = result;
  return result;
}

Attribute Importer::evaluate(Value v, int depth) {
  Operation *op = v.getDefiningOp();
  if (!op) {
    auto name = inputNameOf.find(v);
    if (name == inputNameOf.end())
      return nullptr;
    auto bound = opts.shapeInputValues.find(name->second);
    if (bound == opts.shapeInputValues.end())
      return nullptr;
    onnx::TensorProto t;
    if (!t.ParseFromString(bound->second))
      return nullptr;
    std::string saved = error;
    auto attr = tensorAttr(t, "value bound to input '" + name->second + "'");
    error = saved;
    if (failed(attr) || attr->getShapedType() != v.getType())
      return nullptr;
    return *attr;
  }
  if (auto c = llvm::dyn_cast<ConstantOp>(op))
    return c.getValue();
  auto resultOf = [&](ArrayRef<Attribute> operands) -> Attribute {
    SmallVector<OpFoldResult> results;
    if (failed(op->fold(operands, results)) || results.empty())
      return nullptr;
    OpFoldResult r = results[llvm::cast<OpResult>(v).getResultNumber()];
    if (auto a = llvm::dyn_cast_if_present<Attribute>(r))
      return a;
    return constantAttr(llvm::cast<Value>(r), depth + 1);
  };
  // Ops such as Shape fold without knowing their operands' values.
  SmallVector<Attribute> operands(op->getNumOperands());
  if (Attribute a = resultOf(operands))
    return a;
  for (unsigned k = 0; k < op->getNumOperands(); ++k)
    if (!(operands[k] = constantAttr(op->getOperand(k), depth + 1)))
      return nullptr;
  return op->getNumOperands() ? resultOf(operands) : nullptr;
}

FailureOr<std::vector<int64_t>> Importer::constInts(int k, const char *what) {
  auto v = required(k);
  if (failed(v))
    return failure();
  auto t = constantOf(*v);
  if (!t || t->isFloat() || t->type.getRank() > 1) {
    (void)nodeFail(Twine(what) + " (input '" + node->input(k) +
                   "') must be a constant integer vector computable at "
                   "compile time");
    return failure();
  }
  return std::vector<int64_t>(t->i.begin(), t->i.end());
}

FailureOr<std::optional<double>> Importer::constScalar(int k,
                                                       const char *what) {
  if (!hasInput(k))
    return std::optional<double>();
  auto v = lookup(node->input(k));
  if (failed(v))
    return failure();
  auto t = constantOf(*v);
  if (!t || t->numel() != 1) {
    (void)nodeFail(Twine(what) + " (input '" + node->input(k) +
                   "') must be a constant scalar computable at compile time");
    return failure();
  }
  return std::optional<double>(t->getF(0));
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *Importer::attr(StringRef name) {
  for (const auto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

FailureOr<int64_t> Importer::attrInt(StringRef name, int64_t dflt) {
  const auto *a = attr(name);
  if (!a)
    return dflt;
  if (a->has_type() && a->type() != onnx::AttributeProto::INT) {
    (void)nodeFail("attribute '" + name + "' must be an INT");
    return failure();
  }
  return a->i();
}

FailureOr<float> Importer::attrFloat(StringRef name, float dflt) {
  const auto *a = attr(name);
  if (!a)
    return dflt;
  if (a->has_type() && a->type() != onnx::AttributeProto::FLOAT) {
    (void)nodeFail("attribute '" + name + "' must be a FLOAT");
    return failure();
  }
  return a->f();
}

FailureOr<std::string> Importer::attrString(StringRef name, StringRef dflt) {
  const auto *a = attr(name);
  if (!a)
    return dflt.str();
  if (a->has_type() && a->type() != onnx::AttributeProto::STRING) {
    (void)nodeFail("attribute '" + name + "' must be a STRING");
    return failure();
  }
  return a->s();
}

FailureOr<std::optional<std::vector<int64_t>>>
Importer::attrInts(StringRef name) {
  const auto *a = attr(name);
  if (!a)
    return std::optional<std::vector<int64_t>>();
  if (a->has_type() && a->type() != onnx::AttributeProto::INTS) {
    (void)nodeFail("attribute '" + name + "' must be INTS");
    return failure();
  }
  return std::optional<std::vector<int64_t>>(
      std::vector<int64_t>(a->ints().begin(), a->ints().end()));
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

// kernel/strides/pads/dilations of a conv or pooling node with auto_pad
// resolved to explicit pads.
FailureOr<Importer::Window>
Importer::window(Value x, std::optional<std::vector<int64_t>> kernel,
                 bool ceilMode) {
  int64_t rank = typeOf(x).getRank();
  if (rank < 3) {
    (void)nodeFail("input must have rank >= 3");
    return failure();
  }
  size_t s = rank - 2;
  Window w;
  if (!kernel || kernel->size() != s) {
    (void)nodeFail("'kernel_shape' must have " + Twine(s) + " entries");
    return failure();
  }
  w.kernel = *kernel;
  auto strides = attrInts("strides");
  auto pads = attrInts("pads");
  auto dilations = attrInts("dilations");
  auto autoPad = attrString("auto_pad", "NOTSET");
  if (failed(strides) || failed(pads) || failed(dilations) || failed(autoPad))
    return failure();
  w.strides = strides->value_or(std::vector<int64_t>(s, 1));
  w.dilations = dilations->value_or(std::vector<int64_t>(s, 1));
  w.pads = pads->value_or(std::vector<int64_t>(2 * s, 0));
  if (w.strides.size() != s || w.dilations.size() != s ||
      w.pads.size() != 2 * s) {
    (void)nodeFail("strides/dilations need " + Twine(s) + " entries and pads " +
                   Twine(2 * s));
    return failure();
  }
  for (size_t d = 0; d < s; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1) {
      (void)nodeFail("kernel_shape, strides and dilations must be >= 1");
      return failure();
    }
  if (*autoPad == "NOTSET")
    return w;
  if (*autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
    return w;
  }
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER") {
    (void)nodeFail("auto_pad '" + *autoPad + "' is not one of NOTSET, " +
                   "SAME_UPPER, SAME_LOWER, VALID");
    return failure();
  }
  for (size_t d = 0; d < s; ++d) {
    int64_t in = typeOf(x).getDimSize(d + 2);
    int64_t out = (in + w.strides[d] - 1) / w.strides[d];
    int64_t total =
        std::max<int64_t>(0, (out - 1) * w.strides[d] +
                                 (w.kernel[d] - 1) * w.dilations[d] + 1 - in);
    int64_t small = total / 2, big = total - small;
    w.pads[d] = *autoPad == "SAME_UPPER" ? small : big;
    w.pads[d + s] = *autoPad == "SAME_UPPER" ? big : small;
  }
  (void)ceilMode;
  return w;
}

LogicalResult Importer::convConv(const onnx::NodeProto &) {
  auto x = required(0), w = required(1);
  if (failed(x) || failed(w))
    return failure();
  Value b = input(2);
  if (hasInput(2) && !b)
    return failure();
  auto kernel = attrInts("kernel_shape");
  auto group = attrInt("group", 1);
  if (failed(kernel) || failed(group))
    return failure();
  auto wShape = typeOf(*w).getShape();
  std::vector<int64_t> wk(wShape.begin() + std::min<size_t>(2, wShape.size()),
                          wShape.end());
  if (*kernel && **kernel != wk)
    return nodeFail("kernel_shape disagrees with W's spatial shape");
  auto win = window(*x, wk, false);
  if (failed(win))
    return failure();
  SmallVector<Value> operands{*x, *w};
  if (b)
    operands.push_back(b);
  return emit<ConvOp>(operands, {named("strides", ints(win->strides)),
                                 named("pads", ints(win->pads)),
                                 named("dilations", ints(win->dilations)),
                                 named("group", i64(*group))});
}

LogicalResult Importer::convConvTranspose(const onnx::NodeProto &) {
  auto x = required(0), w = required(1);
  if (failed(x) || failed(w))
    return failure();
  Value b = input(2);
  if (hasInput(2) && !b)
    return failure();
  auto group = attrInt("group", 1);
  auto strides = attrInts("strides");
  auto pads = attrInts("pads");
  auto dilations = attrInts("dilations");
  auto outPad = attrInts("output_padding");
  auto outShape = attrInts("output_shape");
  auto autoPad = attrString("auto_pad", "NOTSET");
  auto kernel = attrInts("kernel_shape");
  if (failed(group) || failed(strides) || failed(pads) || failed(dilations) ||
      failed(outPad) || failed(outShape) || failed(autoPad) || failed(kernel))
    return failure();
  auto tx = typeOf(*x), tw = typeOf(*w);
  if (tx.getRank() < 3 || tw.getRank() != tx.getRank())
    return nodeFail("X and W must have equal rank >= 3");
  size_t s = tx.getRank() - 2;
  std::vector<int64_t> k(tw.getShape().begin() + 2, tw.getShape().end());
  if (*kernel && **kernel != k)
    return nodeFail("kernel_shape disagrees with W's spatial shape");
  std::vector<int64_t> st = strides->value_or(std::vector<int64_t>(s, 1));
  std::vector<int64_t> dl = dilations->value_or(std::vector<int64_t>(s, 1));
  std::vector<int64_t> op = outPad->value_or(std::vector<int64_t>(s, 0));
  std::vector<int64_t> pd = pads->value_or(std::vector<int64_t>(2 * s, 0));
  if (st.size() != s || dl.size() != s || op.size() != s || pd.size() != 2 * s)
    return nodeFail("strides/dilations/output_padding need " + Twine(s) +
                    " entries and pads " + Twine(2 * s));
  std::vector<int64_t> target;
  if (*outShape) {
    target = **outShape;
    if (target.size() == s + 2)
      target.erase(target.begin(), target.begin() + 2);
    if (target.size() != s)
      return nodeFail("output_shape needs " + Twine(s) + " entries");
  } else if (*autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < s; ++d)
      target.push_back(tx.getDimSize(d + 2) * st[d]);
  } else if (*autoPad == "VALID") {
    std::fill(pd.begin(), pd.end(), 0);
  } else if (*autoPad != "NOTSET") {
    return nodeFail("auto_pad '" + *autoPad + "' is not supported");
  }
  if (!target.empty()) {
    // ONNX: total_padding = stride*(in-1) + output_padding + ((k-1)*d+1) -
    // output_shape, split by auto_pad (SAME_UPPER puts the odd pad at the end).
    bool lower = *autoPad == "SAME_LOWER";
    for (size_t d = 0; d < s; ++d) {
      int64_t total = st[d] * (tx.getDimSize(d + 2) - 1) + op[d] +
                      (k[d] - 1) * dl[d] + 1 - target[d];
      if (total < 0) {
        // A larger output_shape extends the end of the axis; the extra
        // outputs get no contributions (as in ONNX's reference).
        op[d] -= total;
        total = 0;
      }
      pd[d] = lower ? total - total / 2 : total / 2;
      pd[d + s] = lower ? total / 2 : total - total / 2;
    }
  }
  SmallVector<Value> operands{*x, *w};
  if (b)
    operands.push_back(b);
  return emit<ConvTransposeOp>(operands, {named("strides", ints(st)),
                                          named("pads", ints(pd)),
                                          named("dilations", ints(dl)),
                                          named("output_padding", ints(op)),
                                          named("group", i64(*group))});
}

LogicalResult Importer::convMatMul(const onnx::NodeProto &) {
  auto a = required(0), b = required(1);
  if (failed(a) || failed(b))
    return failure();
  return emit<MatMulOp>({*a, *b});
}

LogicalResult Importer::convGemm(const onnx::NodeProto &) {
  auto a = required(0), b = required(1);
  if (failed(a) || failed(b))
    return failure();
  Value c = input(2);
  if (hasInput(2) && !c)
    return failure();
  auto alpha = attrFloat("alpha", 1.0f), beta = attrFloat("beta", 1.0f);
  auto ta = attrInt("transA", 0), tb = attrInt("transB", 0);
  if (failed(alpha) || failed(beta) || failed(ta) || failed(tb))
    return failure();
  SmallVector<Value> operands{*a, *b};
  if (c)
    operands.push_back(c);
  return emit<GemmOp>(operands,
                      {named("alpha", f32(*alpha)), named("beta", f32(*beta)),
                       named("transA", boolean(*ta != 0)),
                       named("transB", boolean(*tb != 0))});
}

template <typename OpTy>
LogicalResult Importer::convBinary(const onnx::NodeProto &) {
  auto a = required(0), b = required(1);
  if (failed(a) || failed(b))
    return failure();
  return emit<OpTy>({*a, *b});
}

template <typename OpTy>
LogicalResult Importer::convUnary(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  return emit<OpTy>({*x});
}

// Greater, GreaterOrEqual, LessOrEqual from the dialect's less and equal:
// a > b is b < a, and a <= b is (a < b) or (a == b), false with a NaN as
// ONNX says (not(b < a) would be true).
template <bool Greater, bool OrEqual>
LogicalResult Importer::convCompare(const onnx::NodeProto &) {
  auto a = required(0), b = required(1);
  if (failed(a) || failed(b))
    return failure();
  Value lo = Greater ? *b : *a, hi = Greater ? *a : *b;
  if (!OrEqual)
    return emit<LessOp>({lo, hi});
  auto less = create<LessOp>({lo, hi}, {});
  auto equal = create<EqualOp>({*a, *b}, {});
  if (failed(less) || failed(equal))
    return failure();
  return emit<OrOp>({(*less)->getResult(0), (*equal)->getResult(0)});
}

LogicalResult Importer::convMod(const onnx::NodeProto &) {
  auto a = required(0), b = required(1);
  auto fmod = attrInt("fmod", 0);
  if (failed(a) || failed(b) || failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return nodeFail("fmod " + std::to_string(*fmod) + " is not 0 or 1");
  return *fmod ? emit<FModOp>({*a, *b}) : emit<ModOp>({*a, *b});
}

// Max, Min, Sum and Mean: their inputs folded left to right by a binary op
// (each step broadcasting as the op does); Mean then divides by the count.
template <typename OpTy, bool Mean>
LogicalResult Importer::convVariadic(const onnx::NodeProto &n) {
  if (n.input_size() < 1)
    return nodeFail("needs at least one input");
  auto first = required(0);
  if (failed(first))
    return failure();
  Value v = *first;
  for (int k = 1; k < n.input_size(); ++k) {
    auto x = required(k);
    if (failed(x))
      return failure();
    auto op = create<OpTy>({v, *x}, {});
    if (failed(op))
      return failure();
    v = (*op)->getResult(0);
  }
  if (!Mean || n.input_size() == 1)
    return define(0, v);
  Type element = typeOf(v).getElementType();
  if (!llvm::isa<FloatType>(element))
    return nodeFail("Mean takes floating-point tensors");
  return emit<DivOp>({v, scalarConstant(element, n.input_size())});
}

Value Importer::scalarConstant(Type element, double v) {
  auto scalar = RankedTensorType::get({}, element);
  Attribute a = llvm::isa<FloatType>(element)
                    ? Attribute(builder.getFloatAttr(element, v))
                    : Attribute(builder.getIntegerAttr(element, int64_t(v)));
  return builder.create<ConstantOp>(loc, scalar,
                                    DenseElementsAttr::get(scalar, a));
}

Value Importer::alongAxis(ArrayRef<double> values, Type element, int64_t axis,
                          int64_t rank) {
  SmallVector<int64_t> shape(size_t(rank), 1);
  shape[size_t(axis)] = int64_t(values.size());
  auto type = RankedTensorType::get(shape, element);
  SmallVector<Attribute> attrs;
  for (double v : values)
    attrs.push_back(
        llvm::isa<FloatType>(element)
            ? Attribute(builder.getFloatAttr(element, v))
            : Attribute(builder.getIntegerAttr(element, int64_t(v))));
  return builder.create<ConstantOp>(loc, type,
                                    DenseElementsAttr::get(type, attrs));
}

Value Importer::positionsAlong(int64_t count, Type element, int64_t axis,
                               int64_t rank) {
  std::vector<double> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), 0.0);
  return alongAxis(v, element, axis, rank);
}

Value Importer::castTo(Value v, Type t) {
  if (!v || typeOf(v).getElementType() == t)
    return v;
  return make<CastOp>({v}, {named("to", TypeAttr::get(t))});
}

// Trilu: where(mask, x, 0) with the [N, M] mask of the kept triangle (column
// j - row i >= k for the upper one, <= k for the lower) built now: the
// shape is static, so no kernel computes indices.
LogicalResult Importer::convTrilu(const onnx::NodeProto &) {
  auto x = required(0);
  auto upper = attrInt("upper", 1);
  auto k = constScalar(1, "k");
  if (failed(x) || failed(upper) || failed(k))
    return failure();
  auto type = typeOf(*x);
  if (type.getRank() < 2)
    return nodeFail("input must have at least 2 dimensions");
  const int64_t rows = type.getDimSize(type.getRank() - 2),
                cols = type.getDimSize(type.getRank() - 1);
  const int64_t diagonal = int64_t(k->value_or(0.0));
  llvm::SmallVector<bool> keep(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep[size_t(i * cols + j)] =
          *upper ? j - i >= diagonal : j - i <= diagonal;
  auto maskType = RankedTensorType::get({rows, cols}, builder.getI1Type());
  auto mask = builder.create<ConstantOp>(
      loc, maskType, DenseElementsAttr::get(maskType, llvm::ArrayRef(keep)));
  return emit<WhereOp>({mask, *x, scalarConstant(type.getElementType(), 0)});
}

FailureOr<Value> Importer::result(FailureOr<Operation *> op) {
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

FailureOr<Value> Importer::reshapeTo(Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return result(create<ReshapeOp>({v}, {named("shape", ints(shape))}));
}

FailureOr<Value> Importer::permuteAxes(Value v, StringRef from, StringRef to) {
  if (from == to)
    return v;
  SmallVector<int64_t> perm;
  for (char c : to)
    perm.push_back(int64_t(from.find(c)));
  return result(create<TransposeOp>({v}, {named("perm", ints(perm))}));
}

LogicalResult Importer::convPow(const onnx::NodeProto &n) {
  return convBinary<PowOp>(n);
}

LogicalResult Importer::convWhere(const onnx::NodeProto &) {
  auto c = required(0), x = required(1), y = required(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  return emit<WhereOp>({*c, *x, *y});
}

LogicalResult Importer::convLeakyRelu(const onnx::NodeProto &) {
  auto x = required(0);
  auto alpha = attrFloat("alpha", 0.01f);
  if (failed(x) || failed(alpha))
    return failure();
  return emit<LeakyReluOp>({*x}, {named("alpha", f32(*alpha))});
}

LogicalResult Importer::convHardSigmoid(const onnx::NodeProto &) {
  auto x = required(0);
  auto alpha = attrFloat("alpha", 0.2f), beta = attrFloat("beta", 0.5f);
  if (failed(x) || failed(alpha) || failed(beta))
    return failure();
  return emit<HardSigmoidOp>(
      {*x}, {named("alpha", f32(*alpha)), named("beta", f32(*beta))});
}

LogicalResult Importer::convGelu(const onnx::NodeProto &) {
  auto x = required(0);
  auto approx = attrString("approximate", "none");
  if (failed(x) || failed(approx))
    return failure();
  if (*approx != "none" && *approx != "tanh")
    return nodeFail("approximate '" + *approx + "' is not none or tanh");
  return emit<GeluOp>({*x},
                      {named("approximate", builder.getStringAttr(*approx))});
}

LogicalResult Importer::convClip(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (opset < 11) {
    if (const auto *a = attr("min"))
      attrs.push_back(named("min", f64(a->f())));
    if (const auto *a = attr("max"))
      attrs.push_back(named("max", f64(a->f())));
  } else {
    auto lo = constScalar(1, "min"), hi = constScalar(2, "max");
    if (failed(lo) || failed(hi))
      return failure();
    if (*lo)
      attrs.push_back(named("min", f64(**lo)));
    if (*hi)
      attrs.push_back(named("max", f64(**hi)));
  }
  return emit<ClipOp>({*x}, attrs);
}

LogicalResult Importer::convBatchNorm(const onnx::NodeProto &) {
  SmallVector<Value> operands;
  for (int k = 0; k < 5; ++k) {
    auto v = required(k);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  auto eps = attrFloat("epsilon", 1e-5f);
  auto training = attrInt("training_mode", 0);
  if (failed(eps) || failed(training))
    return failure();
  bool extraOutputs = false;
  for (int k = 1; k < node->output_size(); ++k)
    extraOutputs |= !node->output(k).empty();
  if (*training || extraOutputs)
    return nodeFail("training mode (running statistics outputs) is not "
                    "supported; cuts compiles inference graphs");
  return emit<BatchNormalizationOp>(operands, {named("epsilon", f32(*eps))});
}

// RMSNormalization: x / sqrt(mean(x^2 over axis..) + epsilon) * scale, in
// fp32 (stash_type 1) for 16-bit inputs.
LogicalResult Importer::convRMSNorm(const onnx::NodeProto &) {
  auto x = required(0), scale = required(1);
  auto axis = attrInt("axis", -1);
  auto eps = attrFloat("epsilon", 1e-5f);
  auto stash = attrInt("stash_type", 1);
  if (failed(x) || failed(scale) || failed(axis) || failed(eps) ||
      failed(stash))
    return failure();
  if (*stash != 1)
    return nodeFail("stash_type " + Twine(*stash) + " is not supported (1)");
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  std::vector<int64_t> axes = {*axis};
  if (failed(normaliseAxes(axes, rank)))
    return failure();
  for (int64_t a = axes[0] + 1; a < rank; ++a)
    axes.push_back(a);
  Type f32 = builder.getF32Type(), e = type.getElementType();
  Value v = castTo(*x, f32);
  Value rms = make<SqrtOp>(
      {make<AddOp>({reduce("mean", make<MulOp>({v, v}), axes, true),
                    scalarConstant(f32, *eps)})});
  Value y =
      castTo(make<MulOp>({make<DivOp>({v, rms}), castTo(*scale, f32)}), e);
  return y ? define(0, y) : failure();
}

LogicalResult Importer::convLayerNorm(const onnx::NodeProto &) {
  auto x = required(0), scale = required(1);
  if (failed(x) || failed(scale))
    return failure();
  Value b = input(2);
  if (hasInput(2) && !b)
    return failure();
  auto axis = attrInt("axis", -1);
  auto eps = attrFloat("epsilon", 1e-5f);
  auto stash = attrInt("stash_type", 1);
  if (failed(axis) || failed(eps) || failed(stash))
    return failure();
  if (*stash != 1)
    return nodeFail("stash_type " + Twine(*stash) + " is not supported (1)");
  int64_t rank = typeOf(*x).getRank();
  int64_t ax = *axis < 0 ? *axis + rank : *axis;
  SmallVector<Value> operands{*x, *scale};
  if (b)
    operands.push_back(b);
  return emit<LayerNormalizationOp>(
      operands, {named("axis", i64(ax)), named("epsilon", f32(*eps))});
}

LogicalResult Importer::convSoftmax(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto axis = attrInt("axis", opset < 13 ? 1 : -1);
  if (failed(axis))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  int64_t ax = *axis < 0 ? *axis + rank : *axis;
  if (opset >= 13 || ax == rank - 1)
    return emit<SoftmaxOp>({*x}, {named("axis", i64(ax))});
  // Before opset 13 Softmax flattened the input to 2-D at `axis`.
  if (ax < 0 || ax > rank)
    return nodeFail("axis out of range");
  auto flat = create<FlattenOp>({*x}, {named("axis", i64(ax))});
  if (failed(flat))
    return failure();
  auto sm = create<SoftmaxOp>({(*flat)->getResult(0)}, {named("axis", i64(1))});
  if (failed(sm))
    return failure();
  return emit<ReshapeOp>({(*sm)->getResult(0)},
                         {named("shape", ints(typeOf(*x).getShape()))});
}

LogicalResult Importer::convMaxPool(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  if (node->output_size() > 1 && !node->output(1).empty())
    return nodeFail("the Indices output is not supported");
  auto kernel = attrInts("kernel_shape");
  auto ceil = attrInt("ceil_mode", 0);
  if (failed(kernel) || failed(ceil))
    return failure();
  auto w = window(*x, *kernel, *ceil != 0);
  if (failed(w))
    return failure();
  return emit<MaxPoolOp>({*x}, {named("kernel_shape", ints(w->kernel)),
                                named("strides", ints(w->strides)),
                                named("pads", ints(w->pads)),
                                named("dilations", ints(w->dilations)),
                                named("ceil_mode", boolean(*ceil != 0))});
}

LogicalResult Importer::convAveragePool(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto kernel = attrInts("kernel_shape");
  auto ceil = attrInt("ceil_mode", 0);
  auto cip = attrInt("count_include_pad", 0);
  if (failed(kernel) || failed(ceil) || failed(cip))
    return failure();
  auto w = window(*x, *kernel, *ceil != 0);
  if (failed(w))
    return failure();
  return emit<AveragePoolOp>(
      {*x}, {named("kernel_shape", ints(w->kernel)),
             named("strides", ints(w->strides)), named("pads", ints(w->pads)),
             named("dilations", ints(w->dilations)),
             named("ceil_mode", boolean(*ceil != 0)),
             named("count_include_pad", boolean(*cip != 0))});
}

LogicalResult Importer::convGlobalAveragePool(const onnx::NodeProto &n) {
  return convUnary<GlobalAveragePoolOp>(n);
}

LogicalResult Importer::convFlatten(const onnx::NodeProto &) {
  auto x = required(0);
  auto axis = attrInt("axis", 1);
  if (failed(x) || failed(axis))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  return emit<FlattenOp>(
      {*x}, {named("axis", i64(*axis < 0 ? *axis + rank : *axis))});
}

LogicalResult Importer::convReshape(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> shape;
  if (opset < 5) {
    auto s = attrInts("shape");
    if (failed(s) || !*s)
      return nodeFail("attribute 'shape' is required");
    shape = **s;
  } else {
    auto s = constInts(1, "shape");
    if (failed(s))
      return failure();
    shape = *s;
  }
  auto allowZero = attrInt("allowzero", 0);
  if (failed(allowZero))
    return failure();
  auto in = typeOf(*x).getShape();
  int64_t known = 1, inferAt = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !*allowZero) {
      if (d >= in.size())
        return nodeFail("shape entry 0 at axis " + Twine(d) +
                        " has no input axis to copy");
      shape[d] = in[d];
    }
    if (shape[d] == -1) {
      if (inferAt >= 0)
        return nodeFail("shape has more than one -1");
      inferAt = d;
      continue;
    }
    if (shape[d] < 0)
      return nodeFail("shape entry " + Twine(shape[d]) + " is invalid");
    known *= shape[d];
  }
  int64_t numel = typeOf(*x).getNumElements();
  if (inferAt >= 0) {
    if (known == 0 || numel % known != 0)
      return nodeFail("cannot infer the -1 of shape for " + Twine(numel) +
                      " elements");
    shape[inferAt] = numel / known;
  }
  return emit<ReshapeOp>({*x}, {named("shape", ints(shape))});
}

LogicalResult Importer::convTranspose(const onnx::NodeProto &) {
  auto x = required(0);
  auto perm = attrInts("perm");
  if (failed(x) || failed(perm))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  std::vector<int64_t> p;
  if (*perm)
    p = **perm;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      p.push_back(d);
  for (int64_t &d : p)
    if (d < 0)
      d += rank;
  return emit<TransposeOp>({*x}, {named("perm", ints(p))});
}

LogicalResult Importer::convConcat(const onnx::NodeProto &) {
  SmallVector<Value> operands;
  for (int k = 0; k < node->input_size(); ++k) {
    if (node->input(k).empty())
      continue;
    auto v = lookup(node->input(k));
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  auto axis = attrInt("axis", INT64_MIN);
  if (failed(axis))
    return failure();
  if (*axis == INT64_MIN)
    return nodeFail("attribute 'axis' is required");
  if (operands.empty())
    return nodeFail("needs at least one input");
  int64_t rank = typeOf(operands[0]).getRank();
  return emit<ConcatOp>(operands,
                        {named("axis", i64(*axis < 0 ? *axis + rank : *axis))});
}

LogicalResult Importer::normaliseAxes(std::vector<int64_t> &axes,
                                      int64_t rank) {
  for (int64_t &a : axes) {
    if (a < -rank || a >= rank)
      return nodeFail("axis " + Twine(a) + " out of range for rank " +
                      Twine(rank));
    if (a < 0)
      a += rank;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return nodeFail("axes contain a duplicate");
  return success();
}

LogicalResult Importer::convSplit(const onnx::NodeProto &) {
  auto x = required(0);
  auto axis = attrInt("axis", 0);
  if (failed(x) || failed(axis))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  int64_t ax = *axis < 0 ? *axis + rank : *axis;
  if (ax < 0 || ax >= rank)
    return nodeFail("axis " + Twine(*axis) + " out of range");
  int64_t dim = typeOf(*x).getDimSize(ax);
  std::vector<int64_t> split;
  if (opset < 13) {
    auto s = attrInts("split");
    if (failed(s))
      return failure();
    if (*s)
      split = **s;
  } else if (hasInput(1)) {
    auto s = constInts(1, "split");
    if (failed(s))
      return failure();
    split = *s;
  }
  if (split.empty()) {
    auto numOutputs = attrInt("num_outputs", node->output_size());
    if (failed(numOutputs))
      return failure();
    int64_t n = *numOutputs;
    if (n < 1 || n > dim)
      return nodeFail("cannot split an axis of " + Twine(dim) + " into " +
                      Twine(n) + " non-empty parts");
    // Opset 18: equal parts of ceil(dim / n), the last one smaller.
    int64_t part = (dim + n - 1) / n;
    for (int64_t k = 0; k < n; ++k)
      split.push_back(std::max<int64_t>(0, std::min(part, dim - k * part)));
  }
  if (int64_t(split.size()) != node->output_size())
    return nodeFail("split has " + Twine(split.size()) + " parts for " +
                    Twine(node->output_size()) + " outputs");
  return emit<SplitOp>({*x},
                       {named("axis", i64(ax)), named("split", ints(split))});
}

LogicalResult Importer::convSlice(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto shape = typeOf(*x).getShape();
  int64_t rank = shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    auto s = attrInts("starts"), e = attrInts("ends"), a = attrInts("axes");
    if (failed(s) || failed(e) || failed(a) || !*s || !*e)
      return nodeFail("attributes 'starts' and 'ends' are required");
    starts = **s;
    ends = **e;
    if (*a)
      axes = **a;
  } else {
    auto s = constInts(1, "starts"), e = constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (hasInput(3)) {
      auto a = constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (hasInput(4)) {
      auto p = constInts(4, "steps");
      if (failed(p))
        return failure();
      steps = *p;
    }
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(k);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return nodeFail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> st(rank, 0), en(shape.begin(), shape.end()), sp(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || seen[a])
      return nodeFail("slice axis " + Twine(axes[k]) +
                      " is out of range or repeated");
    seen[a] = true;
    int64_t dim = shape[a], step = steps[k];
    if (step == 0)
      return nodeFail("slice step must not be 0");
    auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -dim - 1 : v + dim; // keep "before the front" below 0
      return std::max(lo, std::min(hi, v));
    };
    if (step > 0) {
      st[a] = clampIdx(starts[k], 0, dim);
      en[a] = clampIdx(ends[k], 0, dim);
    } else {
      st[a] = clampIdx(starts[k], 0, dim - 1);
      en[a] = clampIdx(ends[k], -1, dim - 1);
    }
    sp[a] = step;
  }
  return emit<SliceOp>({*x},
                       {named("starts", ints(st)), named("ends", ints(en)),
                        named("steps", ints(sp))});
}

// Indices known at compile time must lie in [-n, n): out-of-range indices are
// an error in ONNX, and a compiler that knows them says so.
LogicalResult Importer::checkIndices(Value indices, int64_t n) {
  auto t = constantOf(indices);
  if (!t)
    return success();
  for (int64_t k = 0; k < t->numel(); ++k)
    if (t->i[k] < -n || t->i[k] >= n)
      return nodeFail("index " + Twine(t->i[k]) +
                      " is out of range for an "
                      "axis of size " +
                      Twine(n));
  return success();
}

LogicalResult Importer::convGather(const onnx::NodeProto &) {
  auto x = required(0), idx = required(1);
  auto axis = attrInt("axis", 0);
  if (failed(x) || failed(idx) || failed(axis))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  int64_t ax = *axis < 0 ? *axis + rank : *axis;
  if (ax >= 0 && ax < rank &&
      failed(checkIndices(*idx, typeOf(*x).getDimSize(ax))))
    return failure();
  return emit<GatherOp>({*x, *idx},
                        {named("axis", i64(*axis < 0 ? *axis + rank : *axis))});
}

LogicalResult Importer::convGatherElements(const onnx::NodeProto &) {
  auto x = required(0), idx = required(1);
  auto axis = attrInt("axis", 0);
  if (failed(x) || failed(idx) || failed(axis))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  int64_t ax = *axis < 0 ? *axis + rank : *axis;
  if (ax >= 0 && ax < rank &&
      failed(checkIndices(*idx, typeOf(*x).getDimSize(ax))))
    return failure();
  return emit<GatherElementsOp>(
      {*x, *idx}, {named("axis", i64(*axis < 0 ? *axis + rank : *axis))});
}

LogicalResult Importer::convGatherND(const onnx::NodeProto &) {
  auto x = required(0), idx = required(1);
  auto batchDims = attrInt("batch_dims", 0);
  if (failed(x) || failed(idx) || failed(batchDims))
    return failure();
  return emit<GatherNDOp>({*x, *idx}, {named("batch_dims", i64(*batchDims))});
}

// Axes from an attribute (before opset 13) or the input at inputIndex.
FailureOr<std::vector<int64_t>> Importer::axesFor(int inputIndex, int64_t rank,
                                                  bool required) {
  std::vector<int64_t> axes;
  if (opset < 13 || !hasInput(inputIndex)) {
    auto a = attrInts("axes");
    if (failed(a))
      return failure();
    if (*a)
      axes = **a;
    else if (required) {
      (void)nodeFail("axes are required");
      return failure();
    }
  } else {
    auto a = constInts(inputIndex, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  if (failed(normaliseAxes(axes, rank)))
    return failure();
  return axes;
}

LogicalResult Importer::convUnsqueeze(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  // Axes index the output; count them first to know its rank.
  std::vector<int64_t> raw;
  if (opset < 13) {
    auto a = attrInts("axes");
    if (failed(a) || !*a)
      return nodeFail("attribute 'axes' is required");
    raw = **a;
  } else {
    auto a = constInts(1, "axes");
    if (failed(a))
      return failure();
    raw = *a;
  }
  if (failed(normaliseAxes(raw, rank + int64_t(raw.size()))))
    return failure();
  if (raw.empty())
    return define(0, *x);
  return emit<UnsqueezeOp>({*x}, {named("axes", ints(raw))});
}

LogicalResult Importer::convSqueeze(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto shape = typeOf(*x).getShape();
  auto axes = axesFor(1, shape.size(), false);
  if (failed(axes))
    return failure();
  if (axes->empty())
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 1)
        axes->push_back(d);
  if (axes->empty())
    return define(0, *x);
  return emit<SqueezeOp>({*x}, {named("axes", ints(*axes))});
}

LogicalResult Importer::convExpand(const onnx::NodeProto &) {
  auto x = required(0);
  auto shape = constInts(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  return emit<ExpandOp>({*x}, {named("shape", ints(*shape))});
}

LogicalResult Importer::convCastLike(const onnx::NodeProto &) {
  auto x = required(0), like = required(1);
  if (failed(x) || failed(like))
    return failure();
  return emit<CastOp>(
      {*x}, {named("to", TypeAttr::get(typeOf(*like).getElementType()))});
}

LogicalResult Importer::convCast(const onnx::NodeProto &) {
  auto x = required(0);
  auto to = attrInt("to", -1);
  if (failed(x) || failed(to))
    return failure();
  auto et = elementType(int32_t(*to), "Cast node '" + nodeName + "' target");
  if (failed(et))
    return failure();
  return emit<CastOp>({*x}, {named("to", TypeAttr::get(*et))});
}

LogicalResult Importer::convPad(const onnx::NodeProto &) {
  auto x = required(0);
  auto mode = attrString("mode", "constant");
  if (failed(x) || failed(mode))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  std::vector<int64_t> pads;
  double value = 0;
  if (opset < 11) {
    auto p = attrInts("pads");
    auto v = attrFloat("value", 0.0f);
    if (failed(p) || failed(v) || !*p)
      return nodeFail("attribute 'pads' is required");
    pads = **p;
    value = *v;
  } else {
    auto p = constInts(1, "pads");
    auto v = constScalar(2, "constant_value");
    if (failed(p) || failed(v))
      return failure();
    pads = *p;
    value = v->value_or(0.0);
    if (hasInput(3)) {
      auto axes = constInts(3, "axes");
      if (failed(axes))
        return failure();
      std::vector<int64_t> full(2 * rank, 0);
      if (pads.size() != 2 * axes->size())
        return nodeFail("pads needs two entries per axis");
      for (size_t k = 0; k < axes->size(); ++k) {
        int64_t a = (*axes)[k] < 0 ? (*axes)[k] + rank : (*axes)[k];
        if (a < 0 || a >= rank)
          return nodeFail("pad axis out of range");
        full[a] = pads[k];
        full[a + rank] = pads[k + axes->size()];
      }
      pads = full;
    }
  }
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge" &&
      *mode != "wrap")
    return nodeFail("mode '" + *mode + "' is not supported");
  return emit<PadOp>({*x}, {named("pads", ints(pads)),
                            named("mode", builder.getStringAttr(*mode)),
                            named("value", f64(value))});
}

LogicalResult Importer::convIdentity(const onnx::NodeProto &n) {
  return convUnary<IdentityOp>(n);
}

LogicalResult Importer::convDropout(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  if (opset >= 12 && hasInput(2)) {
    auto training = constScalar(2, "training_mode");
    if (failed(training))
      return failure();
    // Training with ratio 0 keeps every element: the inference op.
    auto ratio = constScalar(1, "ratio");
    if (failed(ratio))
      return failure();
    if (**training != 0 && ratio->value_or(0.5) != 0)
      return nodeFail("training_mode = true is not supported; cuts compiles "
                      "inference graphs");
  }
  auto op = create<DropoutOp>({*x}, {});
  if (failed(op))
    return failure();
  (void)define(0, (*op)->getResult(0));
  if (node->output_size() > 1 && !node->output(1).empty()) {
    // In inference the mask keeps every element.
    auto maskType =
        RankedTensorType::get(typeOf(*x).getShape(), builder.getI1Type());
    auto mask = builder.create<ConstantOp>(
        loc, maskType, DenseElementsAttr::get(maskType, true));
    (void)define(1, mask);
  }
  return success();
}

LogicalResult Importer::convConstant(const onnx::NodeProto &) {
  if (node->attribute_size() != 1)
    return nodeFail("needs exactly one value attribute");
  const auto &a = node->attribute(0);
  ElementsAttr value;
  auto f32t = builder.getF32Type();
  auto i64t = builder.getIntegerType(64);
  if (a.name() == "value") {
    onnx::TensorProto t = a.t();
    if (t.name().empty())
      t.set_name(node->output(0));
    auto attr = tensorAttr(t, "Constant node '" + nodeName + "'");
    if (failed(attr))
      return failure();
    value = *attr;
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, f32t), a.f());
  } else if (a.name() == "value_floats") {
    std::vector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, f32t), ArrayRef<float>(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, i64t), a.i());
  } else if (a.name() == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, i64t), ArrayRef<int64_t>(v));
  } else {
    return nodeFail("attribute '" + a.name() + "' is not supported (string " +
                    "and sparse constants)");
  }
  auto c = builder.create<ConstantOp>(loc, value.getShapedType(), value);
  return define(0, c);
}

LogicalResult Importer::convConstantOfShape(const onnx::NodeProto &) {
  auto shape = constInts(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return nodeFail("shape entries must be >= 0");
  ElementsAttr value = DenseElementsAttr::get(
      RankedTensorType::get({1}, builder.getF32Type()), 0.0f);
  if (const auto *a = attr("value")) {
    auto v =
        tensorAttr(a->t(), "ConstantOfShape node '" + nodeName + "' value");
    if (failed(v))
      return failure();
    auto h = toHost(*v);
    if (!h || h->numel() != 1)
      return nodeFail("'value' must hold exactly one element");
    h->type = RankedTensorType::get({1}, h->type.getElementType());
    value = toAttr(*h);
  }
  return emit<ConstantOfShapeOp>(
      {}, {named("shape", ints(*shape)), named("value", value)});
}

LogicalResult Importer::convSize(const onnx::NodeProto &) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto t = RankedTensorType::get({}, builder.getIntegerType(64));
  return define(
      0, builder.create<ConstantOp>(
             loc, t,
             DenseElementsAttr::get(
                 t, builder.getI64IntegerAttr(typeOf(*x).getNumElements()))));
}

LogicalResult Importer::convShape(const onnx::NodeProto &) {
  auto x = required(0);
  auto start = attrInt("start", 0);
  auto end = attrInt("end", INT64_MAX);
  if (failed(x) || failed(start) || failed(end))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  auto norm = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::max<int64_t>(0, std::min(rank, v));
  };
  int64_t s = norm(*start), e = std::max(s, norm(*end));
  return emit<ShapeOp>({*x}, {named("start", i64(s)), named("end", i64(e))});
}

LogicalResult Importer::convRange(const onnx::NodeProto &) {
  auto start = required(0);
  if (failed(start))
    return failure();
  auto s = constScalar(0, "start"), l = constScalar(1, "limit"),
       d = constScalar(2, "delta");
  if (failed(s) || failed(l) || failed(d))
    return failure();
  if (!*s || !*l || !*d)
    return nodeFail("start, limit and delta are required");
  return emit<RangeOp>(
      {},
      {named("start", f64(**s)), named("limit", f64(**l)),
       named("delta", f64(**d)),
       named("element_type", TypeAttr::get(typeOf(*start).getElementType()))});
}

const llvm::StringMap<Importer::Converter> &Importer::converters() {
  static const llvm::StringMap<Converter> table = {
      {"Abs", &Importer::convUnary<AbsOp>},
      {"Add", &Importer::convBinary<AddOp>},
      {"And", &Importer::convBinary<AndOp>},
      {"AveragePool", &Importer::convAveragePool},
      {"BatchNormalization", &Importer::convBatchNorm},
      {"ArgMax", &Importer::convArgReduce},
      {"ArgMin", &Importer::convArgReduce},
      {"Cast", &Importer::convCast},
      {"CastLike", &Importer::convCastLike},
      {"CumSum", &Importer::convCumSum},
      {"Clip", &Importer::convClip},
      {"Concat", &Importer::convConcat},
      {"Constant", &Importer::convConstant},
      {"ConstantOfShape", &Importer::convConstantOfShape},
      {"Conv", &Importer::convConv},
      {"ConvTranspose", &Importer::convConvTranspose},
      {"Div", &Importer::convBinary<DivOp>},
      {"Dropout", &Importer::convDropout},
      {"Einsum", &Importer::convEinsum},
      {"Equal", &Importer::convBinary<EqualOp>},
      {"Erf", &Importer::convUnary<ErfOp>},
      {"Exp", &Importer::convUnary<ExpOp>},
      {"Expand", &Importer::convExpand},
      {"Flatten", &Importer::convFlatten},
      {"Gather", &Importer::convGather},
      {"GatherElements", &Importer::convGatherElements},
      {"GatherND", &Importer::convGatherND},
      {"Gelu", &Importer::convGelu},
      {"Gemm", &Importer::convGemm},
      {"Greater", &Importer::convCompare<true, false>},
      {"Elu", &Importer::convActivation},
      {"Celu", &Importer::convActivation},
      {"Selu", &Importer::convActivation},
      {"Softplus", &Importer::convActivation},
      {"Softsign", &Importer::convActivation},
      {"ThresholdedRelu", &Importer::convActivation},
      {"Mish", &Importer::convActivation},
      {"Swish", &Importer::convActivation},
      {"Shrink", &Importer::convActivation},
      {"PRelu", &Importer::convPRelu},
      {"Attention", &Importer::convAttention},
      {"ScatterND", &Importer::convScatter},
      {"ScatterElements", &Importer::convScatter},
      {"Scatter", &Importer::convScatter},
      {"DepthToSpace", &Importer::convDepthSpace},
      {"SpaceToDepth", &Importer::convDepthSpace},
      {"Tile", &Importer::convTile},
      {"EyeLike", &Importer::convEyeLike},
      {"OneHot", &Importer::convOneHot},
      {"InstanceNormalization", &Importer::convInstanceNorm},
      {"GroupNormalization", &Importer::convGroupNorm},
      {"MeanVarianceNormalization", &Importer::convMeanVarianceNorm},
      {"LpNormalization", &Importer::convLpNorm},
      {"LRN", &Importer::convLRN},
      {"GlobalMaxPool", &Importer::convGlobalMaxPool},
      {"Sign", &Importer::convSign},
      {"IsNaN", &Importer::convIsNaN},
      {"IsInf", &Importer::convIsInf},
      {"GreaterOrEqual", &Importer::convCompare<true, true>},
      {"GlobalAveragePool", &Importer::convGlobalAveragePool},
      {"HardSigmoid", &Importer::convHardSigmoid},
      {"HardSwish", &Importer::convUnary<HardSwishOp>},
      {"Identity", &Importer::convIdentity},
      {"LayerNormalization", &Importer::convLayerNorm},
      {"LeakyRelu", &Importer::convLeakyRelu},
      {"Less", &Importer::convBinary<LessOp>},
      {"LessOrEqual", &Importer::convCompare<false, true>},
      {"Log", &Importer::convUnary<LogOp>},
      {"MatMul", &Importer::convMatMul},
      {"Max", &Importer::convVariadic<MaxOp>},
      {"MaxPool", &Importer::convMaxPool},
      {"Mean", &Importer::convVariadic<AddOp, true>},
      {"Min", &Importer::convVariadic<MinOp>},
      {"Mod", &Importer::convMod},
      {"Mul", &Importer::convBinary<MulOp>},
      {"Neg", &Importer::convUnary<NegOp>},
      {"Not", &Importer::convUnary<NotOp>},
      {"Or", &Importer::convBinary<OrOp>},
      {"Pad", &Importer::convPad},
      {"Pow", &Importer::convPow},
      {"Range", &Importer::convRange},
      {"Reciprocal", &Importer::convUnary<ReciprocalOp>},
      {"Sin", &Importer::convUnary<SinOp>},
      {"Cos", &Importer::convUnary<CosOp>},
      {"Tan", &Importer::convUnary<TanOp>},
      {"Asin", &Importer::convUnary<AsinOp>},
      {"Acos", &Importer::convUnary<AcosOp>},
      {"Atan", &Importer::convUnary<AtanOp>},
      {"Sinh", &Importer::convUnary<SinhOp>},
      {"Cosh", &Importer::convUnary<CoshOp>},
      {"Asinh", &Importer::convUnary<AsinhOp>},
      {"Acosh", &Importer::convUnary<AcoshOp>},
      {"Atanh", &Importer::convUnary<AtanhOp>},
      {"Floor", &Importer::convUnary<FloorOp>},
      {"Ceil", &Importer::convUnary<CeilOp>},
      {"Round", &Importer::convUnary<RoundOp>},
      {"ReduceL1", &Importer::convReduce},
      {"ReduceL2", &Importer::convReduce},
      {"ReduceLogSum", &Importer::convReduce},
      {"ReduceLogSumExp", &Importer::convReduce},
      {"ReduceMax", &Importer::convReduce},
      {"ReduceMean", &Importer::convReduce},
      {"ReduceMin", &Importer::convReduce},
      {"ReduceSum", &Importer::convReduce},
      {"ReduceSumSquare", &Importer::convReduce},
      {"Resize", &Importer::convResize},
      {"RMSNormalization", &Importer::convRMSNorm},
      {"Relu", &Importer::convUnary<ReluOp>},
      {"Reshape", &Importer::convReshape},
      {"Shape", &Importer::convShape},
      {"Size", &Importer::convSize},
      {"Sigmoid", &Importer::convUnary<SigmoidOp>},
      {"Slice", &Importer::convSlice},
      {"Softmax", &Importer::convSoftmax},
      {"LogSoftmax", &Importer::convLogSoftmax},
      {"Hardmax", &Importer::convHardmax},
      {"TopK", &Importer::convTopK},
      {"NegativeLogLikelihoodLoss", &Importer::convClassLoss},
      {"SoftmaxCrossEntropyLoss", &Importer::convClassLoss},
      {"Upsample", &Importer::convResize},
      {"Split", &Importer::convSplit},
      {"Sqrt", &Importer::convUnary<SqrtOp>},
      {"Squeeze", &Importer::convSqueeze},
      {"Sub", &Importer::convBinary<SubOp>},
      {"Sum", &Importer::convVariadic<AddOp>},
      {"Tanh", &Importer::convUnary<TanhOp>},
      {"Transpose", &Importer::convTranspose},
      {"Trilu", &Importer::convTrilu},
      {"Unsqueeze", &Importer::convUnsqueeze},
      {"Where", &Importer::convWhere},
      {"Xor", &Importer::convBinary<XorOp>},
  };
  return table;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

LogicalResult Importer::readOpset(const onnx::ModelProto &model) {
  opset = -1;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  if (opset < 0)
    return fail("the model imports no opset of the default ONNX domain");
  if (opset > kMaxOpset)
    return fail("opset " + Twine(opset) + " is not supported (cuts reads " +
                Twine(kMinOpset) + " to " + Twine(kMaxOpset) + ")");
  if (opset >= kMinOpset)
    return success();
  // Before opset 7: read where every op is one whose meaning has not changed
  // since (legacy attributes such as consumed_inputs aside), as opset 7.
  static const llvm::StringSet<> unchanged = {"Abs",
                                              "ArgMax",
                                              "ArgMin",
                                              "Ceil",
                                              "DepthToSpace",
                                              "Elu",
                                              "Exp",
                                              "Flatten",
                                              "Floor",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "HardSigmoid",
                                              "Hardmax",
                                              "Identity",
                                              "InstanceNormalization",
                                              "LRN",
                                              "LeakyRelu",
                                              "Log",
                                              "LogSoftmax",
                                              "LpNormalization",
                                              "MatMul",
                                              "Neg",
                                              "Not",
                                              "Reciprocal",
                                              "ReduceL1",
                                              "ReduceL2",
                                              "ReduceLogSum",
                                              "ReduceLogSumExp",
                                              "ReduceMax",
                                              "ReduceMean",
                                              "ReduceMin",
                                              "ReduceSum",
                                              "ReduceSumSquare",
                                              "Relu",
                                              "Selu",
                                              "Shape",
                                              "Sigmoid",
                                              "Size",
                                              "Softmax",
                                              "Softplus",
                                              "Softsign",
                                              "SpaceToDepth",
                                              "Sqrt",
                                              "Squeeze",
                                              "Tanh",
                                              "Transpose",
                                              "Unsqueeze"};
  for (const auto &n : model.graph().node())
    if (!unchanged.contains(n.op_type()))
      return fail("opset " + Twine(opset) + " is not supported (cuts reads " +
                  Twine(kMinOpset) + " to " + Twine(kMaxOpset) +
                  ", and earlier ones only for ops unchanged since; " +
                  n.op_type() + " is not one)");
  opset = kMinOpset;
  return success();
}

// "1x<batch>x224x224": a tensor's declared shape, symbolic dimensions named,
// as --input-shape takes it.
std::string shapeSpec(const onnx::TensorShapeProto &shape) {
  std::string spec;
  for (int e = 0; e < shape.dim_size(); ++e) {
    const auto &de = shape.dim(e);
    spec += (e ? "x" : "") +
            (de.has_dim_value() && de.dim_value() >= 0
                 ? std::to_string(de.dim_value())
                 : "<" +
                       (de.has_dim_param() ? de.dim_param()
                                           : "d" + std::to_string(e)) +
                       ">");
  }
  return spec;
}

FailureOr<SmallVector<int64_t>>
Importer::inputShape(const onnx::ValueInfoProto &in, const std::string &what) {
  const auto &tt = in.type().tensor_type();
  SmallVector<int64_t> shape;
  auto given = opts.inputShapes.find(in.name());
  if (given != opts.inputShapes.end()) {
    shape.assign(given->second.begin(), given->second.end());
    if (opts.batch > 0 && !shape.empty()) {
      shape[0] = opts.batch;
      ++batchedInputs;
      batchedNames.insert(in.name());
    }
    if (!tt.has_shape())
      return shape;
    if (tt.shape().dim_size() != int(shape.size()))
      return fail(what + " has rank " + Twine(tt.shape().dim_size()) +
                  " but --input-shape gives " + Twine(shape.size()) +
                  " dimensions");
    for (int d = opts.batch > 0 ? 1 : 0; d < tt.shape().dim_size(); ++d)
      if (tt.shape().dim(d).has_dim_value() &&
          tt.shape().dim(d).dim_value() != shape[d])
        return fail(what + " has size " + Twine(tt.shape().dim(d).dim_value()) +
                    " at axis " + Twine(d) + " but --input-shape gives " +
                    Twine(shape[d]));
    return shape;
  }
  if (!tt.has_shape())
    return fail(what + " has no shape; give one with --input-shape " +
                in.name() + "=...");
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto &dim = tt.shape().dim(d);
    if (d == 0 && opts.batch > 0 &&
        (!dim.has_dim_value() || dim.dim_value() < 0)) {
      shape.push_back(opts.batch); // the batch profile's
      ++batchedInputs;
      batchedNames.insert(in.name());
      continue;
    }
    if (!dim.has_dim_value() || dim.dim_value() < 0) {
      std::string sym =
          dim.has_dim_param() ? " '" + dim.dim_param() + "'" : std::string();
      // Suggest the flag with the known sizes filled in.
      return fail(what + " has symbolic dimension" + sym + " at axis " +
                  Twine(d) + "; fix it with --input-shape " + in.name() + "=" +
                  shapeSpec(tt.shape()));
    }
    shape.push_back(dim.dim_value());
  }
  return shape;
}

LogicalResult Importer::importInputs(const onnx::GraphProto &graph,
                                     SmallVector<Type> &types,
                                     SmallVector<std::string> &names) {
  // IR < 4 also lists initializers as inputs: those are weights.
  llvm::StringSet<> used;
  for (const auto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue;
    std::string what = "input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      return fail(what + " is not a tensor (sequences, maps and optionals " +
                  "are not supported)");
    auto et = elementType(in.type().tensor_type().elem_type(), what);
    if (failed(et))
      return failure();
    auto shape = inputShape(in, what);
    if (failed(shape))
      return failure();
    if (tooManyElements(*shape))
      return fail(what + " has a negative dimension or more than 2^40 "
                         "elements");
    types.push_back(RankedTensorType::get(*shape, *et));
    names.push_back(in.name());
    used.insert(in.name());
  }
  for (const auto &kv : opts.inputShapes)
    if (!used.count(kv.first))
      return fail("--input-shape names '" + kv.first +
                  "', which is not an input of the model");
  if (opts.batch > 0 && batchedInputs == 0)
    return fail("--batch: no input has a symbolic batch dimension (axis 0); "
                "export the model with a dynamic batch, or give its inputs' "
                "shapes with --input-shape");
  return success();
}

LogicalResult Importer::importNode(const onnx::NodeProto &n) {
  node = &n;
  nodeName = !n.name().empty() ? n.name()
             : n.output_size() ? "<unnamed, output '" + n.output(0) + "'>"
                               : std::string("<unnamed>");
  loc = NameLoc::get(builder.getStringAttr(
      n.name().empty() && n.output_size() ? n.output(0) : n.name()));
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return fail("node '" + nodeName + "' has op " + n.domain() +
                "::" + n.op_type() +
                ", which cuts does not cover (custom domains "
                "are not supported; the supported ops are listed by "
                "`cuts import --list-ops`)");
  const auto &table = converters();
  auto it = table.find(n.op_type());
  if (it == table.end())
    return fail("node '" + nodeName + "' has op type " + n.op_type() +
                " (opset " + Twine(opset) +
                "), which cuts does not cover; the supported ops are listed "
                "by `cuts import --list-ops`");
  if (n.output_size() == 0)
    return nodeFail("the node has no outputs");
  for (const auto &a : n.attribute())
    if (a.has_g() || a.graphs_size())
      return nodeFail("subgraph attributes are not supported");
  for (const auto &o : n.output())
    if (!o.empty() && (values.count(o) || initializers.count(o)))
      return nodeFail("output '" + o +
                      "' is already defined (ONNX graphs "
                      "assign each name once)");
  builder.setInsertionPointToEnd(body);
  // An error recorded on the way fails the node even where the converter
  // went on (a null value it took for an absent one, say).
  if (failed((this->*(it->second))(n)) || !error.empty())
    return failure();
  for (const auto &o : n.output())
    if (!o.empty() && !values.count(o))
      return nodeFail("output '" + o + "' is not produced");
  return success();
}

LogicalResult Importer::checkOutput(const onnx::ValueInfoProto &out,
                                    RankedTensorType t) {
  if (!out.type().has_tensor_type())
    return success();
  const auto &tt = out.type().tensor_type();
  if (tt.elem_type() != 0) {
    auto et = elementType(tt.elem_type(), "output '" + out.name() + "'");
    if (failed(et))
      return failure();
    if (*et != t.getElementType()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << "output '" << out.name() << "' is declared " << *et
         << " but computes " << t.getElementType();
      return fail(os.str());
    }
  }
  if (!tt.has_shape())
    return success();
  bool ok = tt.shape().dim_size() == t.getRank();
  for (int d = 0; ok && d < tt.shape().dim_size(); ++d)
    ok = !tt.shape().dim(d).has_dim_value() ||
         tt.shape().dim(d).dim_value() == t.getDimSize(d);
  if (ok)
    return success();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "output '" << out.name() << "' is declared with shape [";
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    os << (d ? "x" : "");
    if (tt.shape().dim(d).has_dim_value())
      os << tt.shape().dim(d).dim_value();
    else
      os << "?";
  }
  os << "] but its inferred type is " << t;
  return fail(os.str());
}

LogicalResult Importer::importOutputs(const onnx::GraphProto &graph,
                                      func::FuncOp func,
                                      ArrayRef<Type> argTypes) {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    auto v = lookup(out.name());
    if (failed(v))
      return failure();
    auto t = typeOf(*v);
    if (failed(checkOutput(out, t)))
      return failure();
    results.push_back(*v);
    resultTypes.push_back(t);
  }
  builder.setInsertionPointToEnd(body);
  builder.create<func::ReturnOp>(UnknownLoc::get(&ctx), results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (int k = 0; k < graph.output_size(); ++k)
    func.setResultAttr(k, "cuts.name",
                       builder.getStringAttr(graph.output(k).name()));
  return success();
}

OwningOpRef<ModuleOp> Importer::run(onnx::ModelProto &model) {
  if (failed(readOpset(model)))
    return nullptr;
  onnx::GraphProto &graph = *model.mutable_graph();
  for (auto &t : *graph.mutable_initializer())
    initializers[t.name()] = &t;

  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  (*module)->setAttr("cuts.opset", builder.getI64IntegerAttr(opset));
  if (!graph.name().empty())
    (*module)->setAttr("cuts.graph_name", builder.getStringAttr(graph.name()));

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  if (failed(importInputs(graph, argTypes, argNames)))
    return nullptr;
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(
      UnknownLoc::get(&ctx), "main", builder.getFunctionType(argTypes, {}));
  body = func.addEntryBlock();
  for (size_t k = 0; k < argNames.size(); ++k) {
    func.setArgAttr(k, "cuts.name", builder.getStringAttr(argNames[k]));
    if (batchedNames.count(argNames[k]))
      func.setArgAttr(k, "cuts.batched", builder.getUnitAttr());
    values[argNames[k]] = body->getArgument(k);
    inputNameOf[body->getArgument(k)] = argNames[k];
  }
  // Nodes, in the topological order ONNX requires.
  for (const auto &n : graph.node())
    if (failed(importNode(n)))
      return nullptr;
  node = nullptr;
  if (failed(importOutputs(graph, func, argTypes)))
    return nullptr;

  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (diag.empty())
      diag = d.str();
    return success();
  });
  if (failed(mlir::verify(*module))) {
    (void)fail("the imported graph does not verify: " + diag);
    return nullptr;
  }
  return module;
}

} // namespace cuts::import

namespace cuts {

using import::Importer;

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &kv : Importer::converters())
    ops.push_back(kv.getKey().str());
  llvm::sort(ops);
  return ops;
}

OwningOpRef<ModuleOp> importOnnxBytes(MLIRContext &ctx, StringRef bytes,
                                      StringRef modelDir,
                                      const ImportOptions &options,
                                      std::string &error) {
  ctx.loadDialect<CutsDialect, func::FuncDialect>();
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()), int(bytes.size()));
  stream.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > size_t(INT_MAX) || !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage()) {
    error = "not a valid ONNX model (the protobuf does not parse; the file "
            "may be truncated or not an ONNX file)";
    return nullptr;
  }
  if (!model.has_graph()) {
    error = "not a valid ONNX model (it has no graph)";
    return nullptr;
  }
  Importer importer(ctx, modelDir, options);
  auto module = importer.run(model);
  if (!module)
    error = importer.error.empty() ? "import failed" : importer.error;
  return module;
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &ctx, StringRef path,
                                     const ImportOptions &options,
                                     std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot read the file (" + buf.getError().message() + ")";
    return nullptr;
  }
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importOnnxBytes(ctx, (*buf)->getBuffer(), dir, options, error);
}

} // namespace cuts
