//===- cuts.cpp - the cuts command line
//------------------------------------===//
//
// `cuts <command> ...`: the user's interface (see DESIGN.md). Errors go to
// stderr as `cuts: error: <file>: <what>` with exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

int error(const std::string &file, const std::string &what) {
  llvm::errs() << "cuts: error: " << (file.empty() ? "" : file + ": ") << what
               << "\n";
  return 1;
}

void usage(llvm::raw_ostream &os) {
  os << "usage: cuts <command> [options]\n"
        "\n"
        "commands:\n"
        "  import MODEL.onnx [-o FILE.mlir] [--input-shape NAME=D0xD1x...]...\n"
        "                    [--no-passes] [--print-weights]\n"
        "      ONNX -> cuts dialect (after the clean-up passes unless\n"
        "      --no-passes), printed. Weights are elided unless\n"
        "      --print-weights (then the output parses back with cuts-opt).\n"
        "  import --list-ops\n"
        "      the ONNX operators cuts covers\n";
}

// "1x3x224x224" -> {1, 3, 224, 224}; a scalar is the empty string.
bool parseDims(const std::string &s, std::vector<int64_t> &dims) {
  dims.clear();
  if (s.empty())
    return true;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t x = s.find('x', pos);
    std::string part = s.substr(pos, x == std::string::npos ? x : x - pos);
    if (part.empty() || part.size() > 12 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    dims.push_back(std::stoll(part));
    if (x == std::string::npos)
      break;
    pos = x + 1;
  }
  return true;
}

int cmdImport(const std::vector<std::string> &args) {
  std::string model, output = "-";
  bool runPasses = true, printWeights = false;
  cuts::ImportOptions opts;
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string &a = args[k];
    auto value = [&](std::string &out) {
      if (k + 1 >= args.size())
        return false;
      out = args[++k];
      return true;
    };
    if (a == "--list-ops") {
      for (const auto &op : cuts::supportedOnnxOps())
        llvm::outs() << op << "\n";
      return 0;
    } else if (a == "-o") {
      if (!value(output))
        return error("", "-o needs a file name");
    } else if (a == "--no-passes") {
      runPasses = false;
    } else if (a == "--print-weights") {
      printWeights = true;
    } else if (a == "--input-shape" || a.rfind("--input-shape=", 0) == 0) {
      std::string spec;
      if (a == "--input-shape") {
        if (!value(spec))
          return error("", "--input-shape needs NAME=D0xD1x...");
      } else {
        spec = a.substr(std::string("--input-shape=").size());
      }
      size_t eq = spec.rfind('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 ||
          !parseDims(spec.substr(eq + 1), dims))
        return error("", "--input-shape '" + spec +
                             "' is not NAME=D0xD1x... (e.g. "
                             "input=1x3x224x224)");
      if (!opts.inputShapes.emplace(spec.substr(0, eq), dims).second)
        return error("", "--input-shape given twice for '" +
                             spec.substr(0, eq) + "'");
    } else if (a == "-h" || a == "--help") {
      usage(llvm::outs());
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return error("", "import: unknown option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return error("", "import: more than one model given ('" + model +
                           "' and '" + a + "')");
    }
  }
  if (model.empty())
    return error("", "import: no model given (cuts import MODEL.onnx)");

  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  std::string err;
  auto module = cuts::importOnnxFile(ctx, model, opts, err);
  if (!module)
    return error(model, err);
  if (runPasses) {
    std::string diag;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (diag.empty())
        diag = d.str();
      return mlir::success();
    });
    mlir::PassManager pm(&ctx);
    cuts::buildCleanupPipeline(pm);
    if (failed(pm.run(*module)))
      return error(model, "the clean-up passes failed: " + diag);
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec);
  if (ec)
    return error(output, "cannot write (" + ec.message() + ")");
  mlir::OpPrintingFlags flags;
  if (!printWeights)
    flags.elideLargeResourceString(0);
  std::string text;
  llvm::raw_string_ostream ts(text);
  module->print(ts, flags);
  // Elided blobs leave an empty resource section behind; drop it.
  size_t section = text.rfind("\n{-#");
  if (!printWeights && section != std::string::npos &&
      text.find_first_not_of(" \n", section + 5) == text.find("#-}", section))
    text.erase(section);
  os << text << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    usage(llvm::errs());
    return 1;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(llvm::outs());
    return 0;
  }
  if (cmd == "--version") {
    llvm::outs() << "cuts 0.1.0\n";
    return 0;
  }
  if (cmd == "import")
    return cmdImport(args);
  usage(llvm::errs());
  return error("", "unknown command '" + cmd + "'");
}
