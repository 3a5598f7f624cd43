//===- cuts-conformance.cpp - run the ONNX backend node tests -------------===//
//
// `cuts-conformance DIR [--json OUT] [--filter SUBSTR]`: for each ONNX node
// test in DIR (model.onnx + test_data_set_0/{input,output}_*.pb) whose ops
// cuts covers, import the model with its inputs' shapes from the test data
// and check the inferred output shapes and element types against
// output_*.pb. Tests with uncovered ops are skipped with the reason. The last
// line is `N passed, N failed, N skipped`.
//
// Inputs that decide shapes (a Reshape's shape fed by a graph input) are
// bound to their test-data values: with static shapes they are compile-time
// constants, as --input-shape makes the data inputs' shapes.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx.pb.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

struct Result {
  std::string name, status, reason;
};

bool readFile(const std::string &path, std::string &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  out = (*buf)->getBuffer().str();
  return true;
}

// Element type name of an ONNX data type, spelled as MLIR prints it.
std::string mlirElementName(int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return "f32";
  case onnx::TensorProto::FLOAT16:
    return "f16";
  case onnx::TensorProto::BFLOAT16:
    return "bf16";
  case onnx::TensorProto::DOUBLE:
    return "f64";
  case onnx::TensorProto::BOOL:
    return "i1";
  case onnx::TensorProto::INT8:
    return "i8";
  case onnx::TensorProto::INT16:
    return "i16";
  case onnx::TensorProto::INT32:
    return "i32";
  case onnx::TensorProto::INT64:
    return "i64";
  case onnx::TensorProto::UINT8:
    return "ui8";
  case onnx::TensorProto::UINT16:
    return "ui16";
  case onnx::TensorProto::UINT32:
    return "ui32";
  case onnx::TensorProto::UINT64:
    return "ui64";
  default:
    return "onnx-type-" + std::to_string(t);
  }
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k)
    out += (k ? "x" : "") + std::to_string(s[k]);
  return out + "]";
}

Result runTest(const std::string &dir, const std::set<std::string> &covered) {
  Result r;
  r.name = llvm::sys::path::filename(dir).str();
  std::string bytes;
  onnx::ModelProto model;
  if (!readFile(dir + "/model.onnx", bytes) || !model.ParseFromString(bytes))
    return {r.name, "failed", "model.onnx does not parse"};
  std::set<std::string> missing;
  for (const auto &n : model.graph().node()) {
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    if (!defaultDomain || !covered.count(n.op_type()))
      missing.insert((defaultDomain ? "" : n.domain() + "::") + n.op_type());
  }
  if (!missing.empty()) {
    std::string s;
    for (const auto &m : missing)
      s += (s.empty() ? "" : ", ") + m;
    return {r.name, "skipped", "op not covered: " + s};
  }
  for (const auto &in : model.graph().input())
    if (!in.type().has_tensor_type())
      return {r.name, "skipped", "non-tensor input '" + in.name() + "'"};
  // Coverage is per op and element type: tests of types cuts does not
  // compile (float8, int4, strings, ...) are skipped like uncovered ops.
  auto typeCovered = [](int32_t t) {
    return mlirElementName(t).rfind("onnx-type-", 0) != 0;
  };
  for (const auto *list : {&model.graph().input(), &model.graph().output()})
    for (const auto &v : *list)
      if (!typeCovered(v.type().tensor_type().elem_type()))
        return {r.name, "skipped",
                "element type " +
                    std::to_string(v.type().tensor_type().elem_type()) +
                    " of '" + v.name() + "' not covered"};
  for (const auto &n : model.graph().node())
    for (const auto &a : n.attribute())
      if (n.op_type() == "Cast" && a.name() == "to" && !typeCovered(a.i()))
        return {r.name, "skipped",
                "Cast to element type " + std::to_string(a.i()) +
                    " not covered"};

  // Test data: inputs give shapes (and shape-deciding values), outputs the
  // expected types.
  std::string data = dir + "/test_data_set_0";
  cuts::ImportOptions opts;
  std::vector<onnx::TensorProto> outputs;
  for (int k = 0;; ++k) {
    std::string path = data + "/input_" + std::to_string(k) + ".pb";
    if (!llvm::sys::fs::exists(path))
      break;
    onnx::TensorProto t;
    if (!readFile(path, bytes) || !t.ParseFromString(bytes))
      return {r.name, "failed", "cannot read " + path};
    std::string name = k < model.graph().input_size()
                           ? model.graph().input(k).name()
                           : t.name();
    opts.inputShapes[name] =
        std::vector<int64_t>(t.dims().begin(), t.dims().end());
    opts.shapeInputValues[name] = bytes;
  }
  for (int k = 0;; ++k) {
    std::string path = data + "/output_" + std::to_string(k) + ".pb";
    if (!llvm::sys::fs::exists(path))
      break;
    onnx::TensorProto t;
    if (!readFile(path, bytes) || !t.ParseFromString(bytes))
      return {r.name, "failed", "cannot read " + path};
    outputs.push_back(t);
  }
  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  std::string err;
  auto module = cuts::importOnnxFile(ctx, dir + "/model.onnx", opts, err);
  if (!module)
    return {r.name, "failed", "import: " + err};
  auto func = module->lookupSymbol<mlir::func::FuncOp>("main");
  auto results = func.getFunctionType().getResults();
  if (results.size() != outputs.size())
    return {r.name, "failed",
            "imported " + std::to_string(results.size()) +
                " outputs, the test has " + std::to_string(outputs.size())};
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto t = llvm::cast<mlir::RankedTensorType>(results[k]);
    std::vector<int64_t> want(outputs[k].dims().begin(),
                              outputs[k].dims().end());
    std::vector<int64_t> got(t.getShape().begin(), t.getShape().end());
    std::string gotType;
    llvm::raw_string_ostream os(gotType);
    os << t.getElementType();
    std::string wantType = mlirElementName(outputs[k].data_type());
    if (got != want || os.str() != wantType)
      return {r.name, "failed",
              "output " + std::to_string(k) + ": inferred " + shapeStr(got) +
                  " " + os.str() + ", expected " + shapeStr(want) + " " +
                  wantType};
  }
  return {r.name, "passed", ""};
}

} // namespace

int main(int argc, char **argv) {
  std::string dir, jsonPath, filter;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--json" && k + 1 < argc)
      jsonPath = argv[++k];
    else if (a == "--filter" && k + 1 < argc)
      filter = argv[++k];
    else if (dir.empty() && a[0] != '-')
      dir = a;
    else {
      llvm::errs() << "usage: cuts-conformance DIR [--json OUT] "
                      "[--filter SUBSTR]\n";
      return 1;
    }
  }
  if (dir.empty() || !llvm::sys::fs::is_directory(dir)) {
    llvm::errs() << "cuts-conformance: error: " << dir
                 << ": not a directory of ONNX node tests\n";
    return 1;
  }
  std::vector<std::string> tests;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::exists(it->path() + "/model.onnx") &&
        llvm::StringRef(it->path()).contains(filter))
      tests.push_back(it->path());
  std::sort(tests.begin(), tests.end());
  auto ops = cuts::supportedOnnxOps();
  std::set<std::string> covered(ops.begin(), ops.end());

  int passed = 0, failed = 0, skipped = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto &t : tests) {
    Result r = runTest(t, covered);
    if (r.status == "passed")
      ++passed;
    else if (r.status == "failed") {
      ++failed;
      llvm::outs() << "FAIL " << r.name << ": " << r.reason << "\n";
    } else
      ++skipped;
    report.push_back(
        {{"name", r.name}, {"status", r.status}, {"reason", r.reason}});
  }
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << report.dump(1) << "\n";
  }
  llvm::outs() << passed << " passed, " << failed << " failed, " << skipped
               << " skipped\n";
  return 0;
}
