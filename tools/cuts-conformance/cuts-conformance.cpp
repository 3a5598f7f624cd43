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
// With --numeric, every test whose shapes pass is also compiled (the whole
// pipeline, no NVRTC) and its artifact run on the CPU (every generated
// kernel's own CUDA source, cuts run --emulate's path) on the test's inputs;
// each output must match output_K.pb: within relative L2 1e-5 (fp32), 1e-2
// (fp16) or 5e-2 (bf16: defaultTolerance), integers and bools exactly. Tests
// the compiler does not cover yet are numeric-skipped with its reason. --jobs N
// runs N tests at a time.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"
#include "perfmodel/Arch.h"
#include "tools/support/Emulate.h"
#include "tools/support/TensorFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx.pb.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Result {
  std::string name, status, reason;
  // --numeric: "passed", "failed", "skipped" (not compiled yet) or empty.
  std::string numeric, numericReason;
  double seconds = 0; // wall time of the whole test, to find the slow ones
};

Result verdict(std::string name, std::string status, std::string reason) {
  Result r;
  r.name = std::move(name), r.status = std::move(status);
  r.reason = std::move(reason);
  return r;
}

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

// Compiles the imported module, runs it on the CPU on the test's inputs and
// compares with its outputs; sets r.numeric and r.numericReason.
void numericCheck(mlir::ModuleOp module, const std::string &data, Result &r) {
  // What `cuts compile` runs: the clean-up passes, then the compiler.
  mlir::PassManager pm(module.getContext());
  cuts::buildCleanupPipeline(pm);
  if (failed(pm.run(module))) {
    r.numeric = "failed";
    r.numericReason = "the clean-up passes failed";
    return;
  }
  cuts::driver::CompileOptions co;
  co.arch = *cuts::findArch("h100");
  co.jobs = 1; // tests run in parallel instead
  std::string err;
  auto compiled = cuts::driver::compileModule(module, co, err);
  if (!compiled) {
    // An op or type the compiler does not cover is not a failure.
    r.numeric = cuts::driver::notCoveredYet(err) ? "skipped" : "failed";
    r.numericReason = "compile: " + err;
    return;
  }
  auto art = cuts::rt::parseArtifact(
      cuts::rt::serializeArtifact(compiled->contents), err);
  if (!art) {
    r.numeric = "failed";
    r.numericReason = "artifact: " + err;
    return;
  }
  // The test's inputs by name (input_K.pb holds graph input K's name).
  std::map<std::string, cuts::HostArray> given;
  for (int k = 0;; ++k) {
    std::string path = data + "/input_" + std::to_string(k) + ".pb";
    if (!llvm::sys::fs::exists(path))
      break;
    auto a = cuts::readTensorFile(path, err);
    if (!a) {
      r.numeric = "failed";
      r.numericReason = err;
      return;
    }
    given[a->name] = std::move(*a);
  }
  const cuts::rt::Manifest &m = art->manifest;
  std::vector<std::vector<uint8_t>> inputs, outputs;
  for (int t : m.inputs) {
    const cuts::rt::Tensor &x = m.tensors[t];
    auto it = given.find(x.name);
    auto typed = it == given.end()
                     ? std::nullopt
                     : cuts::convertArray(it->second, x.dtype, err);
    if (!typed) {
      r.numeric = "failed";
      r.numericReason = "input '" + x.name + "': " +
                        (it == given.end() ? "not in the test data" : err);
      return;
    }
    inputs.push_back(std::move(typed->bytes));
  }
  if (!cuts::emulateArtifact(*art, inputs, outputs, err)) {
    r.numeric = "failed";
    r.numericReason = "emulation: " + err;
    return;
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const cuts::rt::Tensor &x = m.tensors[m.outputs[i]];
    std::string path = data + "/output_" + std::to_string(i) + ".pb";
    auto want = cuts::readTensorFile(path, err);
    if (!want ||
        want->size() != size_t(x.bytes() / cuts::rt::dtypeBytes(x.dtype))) {
      r.numeric = "failed";
      r.numericReason = want ? path + " has another element count" : err;
      return;
    }
    cuts::HostArray got{x.name, x.shape, x.dtype, std::move(outputs[i])};
    std::string what;
    if (!cuts::matchesReference(got, *want, cuts::defaultTolerance(x.dtype),
                                what)) {
      r.numeric = "failed";
      r.numericReason =
          "output " + std::to_string(i) + " ('" + x.name + "'): " + what;
      return;
    }
  }
  r.numeric = "passed";
}

Result runTest(const std::string &dir, const std::set<std::string> &covered,
               bool numeric) {
  Result r;
  r.name = llvm::sys::path::filename(dir).str();
  std::string bytes;
  onnx::ModelProto model;
  if (!readFile(dir + "/model.onnx", bytes) || !model.ParseFromString(bytes))
    return verdict(r.name, "failed", "model.onnx does not parse");
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
    return verdict(r.name, "skipped", "op not covered: " + s);
  }
  for (const auto &in : model.graph().input())
    if (!in.type().has_tensor_type())
      return verdict(r.name, "skipped", "non-tensor input '" + in.name() + "'");
  // Coverage is per op and element type: tests of types cuts does not
  // compile (float8, int4, strings, ...) are skipped like uncovered ops.
  auto typeCovered = [](int32_t t) {
    return mlirElementName(t).rfind("onnx-type-", 0) != 0;
  };
  for (const auto *list : {&model.graph().input(), &model.graph().output()})
    for (const auto &v : *list)
      if (!typeCovered(v.type().tensor_type().elem_type()))
        return verdict(r.name, "skipped",
                       "element type " +
                           std::to_string(v.type().tensor_type().elem_type()) +
                           " of '" + v.name() + "' not covered");
  for (const auto &n : model.graph().node())
    for (const auto &a : n.attribute())
      if (n.op_type() == "Cast" && a.name() == "to" && !typeCovered(a.i()))
        return verdict(r.name, "skipped",
                       "Cast to element type " + std::to_string(a.i()) +
                           " not covered");

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
      return verdict(r.name, "failed", "cannot read " + path);
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
      return verdict(r.name, "failed", "cannot read " + path);
    outputs.push_back(t);
  }
  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  std::string err;
  auto module = cuts::importOnnxFile(ctx, dir + "/model.onnx", opts, err);
  if (!module)
    return verdict(r.name, "failed", "import: " + err);
  auto func = module->lookupSymbol<mlir::func::FuncOp>("main");
  auto results = func.getFunctionType().getResults();
  if (results.size() != outputs.size())
    return verdict(r.name, "failed",
                   "imported " + std::to_string(results.size()) +
                       " outputs, the test has " +
                       std::to_string(outputs.size()));
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
      return verdict(r.name, "failed",
                     "output " + std::to_string(k) + ": inferred " +
                         shapeStr(got) + " " + os.str() + ", expected " +
                         shapeStr(want) + " " + wantType);
  }
  r.status = "passed";
  if (numeric)
    numericCheck(*module, data, r);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  std::string dir, jsonPath, filter;
  bool numeric = false;
  int jobs = 1;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--json" && k + 1 < argc)
      jsonPath = argv[++k];
    else if (a == "--filter" && k + 1 < argc)
      filter = argv[++k];
    else if (a == "--numeric")
      numeric = true;
    else if (a == "--jobs" && k + 1 < argc && std::atoi(argv[k + 1]) > 0)
      jobs = std::atoi(argv[++k]);
    else if (dir.empty() && a[0] != '-')
      dir = a;
    else {
      llvm::errs() << "usage: cuts-conformance DIR [--json OUT] "
                      "[--filter SUBSTR] [--numeric] [--jobs N]\n";
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

  // Each test has its own MLIR context: they run on `jobs` threads.
  std::vector<Result> results(tests.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < tests.size();) {
      auto start = std::chrono::steady_clock::now();
      results[i] = runTest(tests[i], covered, numeric);
      results[i].seconds = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < jobs; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();

  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> num;
  nlohmann::json report = nlohmann::json::array();
  for (const Result &r : results) {
    if (r.status == "passed")
      ++passed;
    else if (r.status == "failed") {
      ++failed;
      llvm::outs() << "FAIL " << r.name << ": " << r.reason << "\n";
    } else
      ++skipped;
    if (r.numeric == "failed")
      llvm::outs() << "NUMERIC FAIL " << r.name << ": " << r.numericReason
                   << "\n";
    if (!r.numeric.empty())
      ++num[r.numeric];
    nlohmann::json j = {{"name", r.name},
                        {"status", r.status},
                        {"reason", r.reason},
                        {"seconds", std::round(r.seconds * 1000) / 1000}};
    if (!r.numeric.empty()) {
      j["numeric"] = r.numeric;
      j["numericReason"] = r.numericReason;
    }
    report.push_back(j);
  }
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << report.dump(1) << "\n";
  }
  if (numeric)
    llvm::outs() << "numeric: " << num["passed"] << " passed, " << num["failed"]
                 << " failed, " << num["skipped"]
                 << " skipped (not compiled yet)\n";
  llvm::outs() << passed << " passed, " << failed << " failed, " << skipped
               << " skipped\n";
  return 0;
}
