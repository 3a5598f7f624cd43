//===- cuts.cpp - the cuts command line
//------------------------------------===//
//
// `cuts <command> ...`: the user's interface (see DESIGN.md). Errors go to
// stderr as `cuts: error: <file>: <what>` with exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"
#include "compiler/driver/ModelLibrary.h"
#include "compiler/driver/Profiles.h"
#include "compiler/driver/Search.h"
#include "compiler/driver/Validate.h"
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"
#include "compiler/tune/NvrtcWorker.h"
#include "perfmodel/Explain.h"
#include "tools/support/Options.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace cuts::cli {
int cmdPlan(const std::vector<std::string> &args);
}

namespace {

using cuts::cli::ArgList;
using cuts::cli::error;

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
        "      the ONNX operators cuts covers\n"
        "  explain MODEL.onnx --arch ARCH [--json | --mlir] [--sync] "
        "[--input-shape "
        "...]\n"
        "                    [--top-percent T] [--min-keep K] [--max-keep M]\n"
        "                    [--no-fusion] [--precision P] [--io-precision P]\n"
        "      the kernels the performance model groups the graph into, with\n"
        "      candidates enumerated and kept, the best PUL and its factors;\n"
        "      --mlir: the graph with each group a cuts.group region;\n"
        "      --sync [--tuning CACHE]: also the cuSync pairs a compile would\n"
        "      make, with the model's estimates (and the tuner's times)\n"
        "  compile MODEL.onnx --arch ARCH[,ARCH...] -o DIR [--emit-source]\n"
        "                    [--name NAME] [--input-shape ...] [--no-fusion]\n"
        "                    [--batch B,B,...]\n"
        "                    [--top-percent T] [--min-keep K] [--max-keep M]\n"
        "                    [--jobs N]\n"
        "                    [--tune] [--tuning CACHE] [--tune-candidates K]\n"
        "                    [--tune-seconds S]\n"
        "                    [--candidates FILE] [--no-library]\n"
        "                    [--no-sync | --sync-all]\n"
        "                    [--precision fp32|tf32|fp16|bf16] "
        "[--io-precision fp16|bf16]\n"
        "                    [--layout auto|nchw] [--split-k auto|off]\n"
        "                    [--weight-codecs] [--tensor-parallel N]\n"
        "                    [--tensor-parallel-check N]\n"
        "      DIR/NAME.cuts (the artifact), DIR/NAME.h and DIR/libNAME.so\n"
        "      (NAME: model); the first ARCH is the performance model's\n"
        "      target, CUBINs are built for every ARCH; --emit-source also\n"
        "      writes every kernel's CUDA and HIP source to DIR/kernels/\n"
        "      --batch 1,8,32: one artifact with a plan per batch profile\n"
        "      (axis 0 of the inputs whose axis 0 is symbolic or given by\n"
        "      --input-shape); a run takes any batch up to the largest, a\n"
        "      batch no profile has padded to the next larger\n"
        "      --tune: time the best --tune-candidates K (16) parameter sets "
        "of\n"
        "      every group the partition search considers (one per tiling\n"
        "      before a second FORMAT_shared of any) on this machine's\n"
        "      GPU and choose by measured time; --tuning CACHE: read (and\n"
        "      with --tune, update) measured times, so a machine without a\n"
        "      GPU chooses the same; --tune-seconds S: stop measuring after S\n"
        "      seconds (level by level: every group's best-bound set and\n"
        "      library calls first); --candidates FILE: write what CACHE\n"
        "      lacks, for cuts tune; --no-library: never cuDNN (tuning times\n"
        "      it against the generated kernels where it can run a group)\n"
        "      --no-sync: no cuSync pairs (by default a kernel whose tiles\n"
        "      read the previous kernel's output starts tile by tile where\n"
        "      the model predicts a gain); --sync-all: every pair the tile\n"
        "      analysis follows (to measure what the model decides)\n"
        "      --precision: store the tensors between kernels in fp16 or bf16\n"
        "      (weights converted now; kernels compute in fp32); inputs and\n"
        "      outputs keep the model's types unless --io-precision; tf32\n"
        "      keeps fp32 tensors and lets library products use TF32\n"
        "      --tensor-parallel N: a plan per rank of N, the products split\n"
        "      Megatron-style and the partial sums all-reduced between\n"
        "      kernels (cuts run --emulate runs it; GPUs come next)\n"
        "      --tensor-parallel-check N: split the products Megatron-style\n"
        "      across N ranks and compile every rank's part in one graph,\n"
        "      the all-reduces as additions (checks the split on one device)\n"
        "      --weight-codecs: ship the 3:1 and bf16 weight codecs' kernels,\n"
        "      so that a device list may send the weights compressed\n"
        "      (cuts bench --weight-codec, cuts_load_options.weight_codec)\n"
        "  tune DIR --cache CACHE\n"
        "      time DIR/candidates.json (from compile --candidates) on this\n"
        "      machine's GPU and add the times to CACHE\n"
        "  run MODEL.cuts --input NAME=FILE ... [--emulate] [--compare DIR]\n"
        "  bench MODEL.cuts [--iters N] [--graph] [--kernels] [--json]\n"
        "                    [--peak-tflops F] [--bandwidth-gbs B]\n"
        "      run and time a compiled model (see cuts run --help)\n"
        "  validate MODEL.onnx --arch ARCH -o DIR [--samples N]\n"
        "                    [--kinds conv,depthwise,matmul,...] [--ops "
        "NAME,...]\n"
        "      samples N (200) parameter sets of every distinct op of the\n"
        "      kinds (conv, depthwise, matmul; also pool, batch_norm,\n"
        "      elementwise, reduction), kept and pruned, as kernels for\n"
        "      cuts tune DIR; then\n"
        "      scripts/validate_report.py DIR checks the model's pruning\n"
        "  plan MODEL.json|MODEL.cuts --cluster CLUSTER.json [--gpus N]\n"
        "                    [--top K] [--json] [--batch B --micro-batch M]\n"
        "      the BigCuts planner: every split of the cluster's GPUs into\n"
        "      data-parallel, weight-partitioned and pipeline groups, with\n"
        "      parameter- or activation-resident scheduling, ranked by the\n"
        "      thesis's estimate (x the ideal time); models in\n"
        "      examples/bigcuts (or a compiled model, run for inference at\n"
        "      --batch B in micro-batches of M), clusters in\n"
        "      perfmodel/cluster/clusters\n"
        "  arch [--json] | arch --probe [-o FILE.json]\n"
        "      the known GPU descriptors; --probe measures the local GPU\n"
        "      and writes a descriptor: every --arch takes a name above\n"
        "      or such a FILE.json\n";
}

// Runs pm on module; on failure false, with the first diagnostic the
// passes emitted (which names the op) in `diag`.
bool runPassesOn(mlir::PassManager &pm, mlir::ModuleOp module,
                 std::string &diag) {
  mlir::ScopedDiagnosticHandler handler(pm.getContext(),
                                        [&](mlir::Diagnostic &d) {
                                          if (diag.empty())
                                            diag = d.str();
                                          return mlir::success();
                                        });
  return mlir::succeeded(pm.run(module));
}

// Imports and cleans a model; on failure prints the error and returns null.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &ctx,
                                            const std::string &model,
                                            const cuts::ImportOptions &opts,
                                            bool runPasses) {
  ctx.printOpOnDiagnostic(false);
  std::string err;
  auto module = cuts::importOnnxFile(ctx, model, opts, err);
  if (!module) {
    error(model, err);
    return nullptr;
  }
  if (runPasses) {
    std::string diag;
    mlir::PassManager pm(&ctx);
    cuts::buildCleanupPipeline(pm);
    if (!runPassesOn(pm, *module, diag)) {
      error(model, "the clean-up passes failed: " + diag);
      return nullptr;
    }
  }
  return module;
}

// The module as MLIR text; weights elided unless `printWeights`.
std::string moduleText(mlir::ModuleOp module, bool printWeights) {
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
  return text;
}

int cmdImport(const std::vector<std::string> &args) {
  std::string model, output = "-";
  bool runPasses = true, printWeights = false;
  cuts::ImportOptions opts;
  for (ArgList a(args); a.next();) {
    if (a.is("--list-ops")) {
      for (const auto &op : cuts::supportedOnnxOps())
        llvm::outs() << op << "\n";
      return 0;
    } else if (a.is("-o")) {
      if (!a.value(output))
        return error("", "-o needs a file name");
    } else if (a.is("--no-passes")) {
      runPasses = false;
    } else if (a.is("--print-weights")) {
      printWeights = true;
    } else if (int r = cuts::cli::parseInputShape(a, opts.inputShapes)) {
      if (r < 0)
        return 1;
    } else if (a.is("-h") || a.is("--help")) {
      usage(llvm::outs());
      return 0;
    } else if (int rc = cuts::cli::positional(a, model, "import", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "import: no model given (cuts import MODEL.onnx)");

  mlir::MLIRContext ctx;
  auto module = loadModel(ctx, model, opts, runPasses);
  if (!module)
    return 1;
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec);
  if (ec)
    return error(output, "cannot write (" + ec.message() + ")");
  os << moduleText(*module, printWeights) << "\n";
  return 0;
}

// Parses --top-percent T / --min-keep K / --max-keep M (the pruning of
// explain, compile and validate) at the current argument; returns 0 when it
// is neither, 1 when handled, -1 on error (printed).
int parsePruneOption(ArgList &a, cuts::PruneOptions &prune) {
  if (a.is("--top-percent")) {
    if (!a.number(prune.topPercent, 1e-6, 100)) {
      error("", "--top-percent needs a number in (0, 100]");
      return -1;
    }
    return 1;
  }
  if (a.is("--min-keep")) {
    if (!a.integer(prune.minKeep, 1, 1000000)) {
      error("", "--min-keep needs a count >= 1");
      return -1;
    }
    return 1;
  }
  if (a.is("--max-keep")) {
    if (!a.integer(prune.maxKeep, 1, 1000000000)) {
      error("", "--max-keep needs a count >= 1");
      return -1;
    }
    return 1;
  }
  return 0;
}

/// --precision fp32|tf32|fp16|bf16 and --io-precision fp16|bf16 (explain
/// and compile). tf32 keeps fp32 tensors (its products' math is the
/// libraries').
/// --layout auto|nchw: auto runs 16-bit convs channels-last where the
/// tensor cores take them (cuts-channels-last).
/// --split-k auto|off: auto splits long products over few tiles along K
/// (cuts-split-k); off keeps every product whole, for comparison.
/// --tensor-parallel-check N: the tensor-parallel split of N ranks, every
/// rank's ops in one graph and their all-reduces as additions
/// (cuts-tensor-parallel simulate): what the ranks compute, on one device.
struct Precision {
  std::string storage = "fp32", io;
  std::string layout = "auto";
  std::string splitK = "auto";
  int64_t tensorParallelCheck = 0;
  /// --tensor-parallel N: the plan of rank tensorParallelRank of N.
  int64_t tensorParallel = 0, tensorParallelRank = 0;
};

// Parses --precision / --io-precision / --layout / --split-k at the current
// argument; returns 0 when it is none of them, 1 when handled, -1 on error
// (printed).
int parsePrecisionOption(ArgList &a, Precision &p) {
  if (a.is("--tensor-parallel")) {
    if (!a.integer(p.tensorParallel, 2, 64)) {
      error("", "--tensor-parallel needs a rank count from 2 to 64");
      return -1;
    }
    return 1;
  }
  if (a.is("--tensor-parallel-check")) {
    if (!a.integer(p.tensorParallelCheck, 2, 64)) {
      error("", "--tensor-parallel-check needs a rank count from 2 to 64");
      return -1;
    }
    return 1;
  }
  if (a.is("--layout")) {
    if (!a.value(p.layout) || (p.layout != "auto" && p.layout != "nchw")) {
      error("", "--layout needs auto or nchw");
      return -1;
    }
    return 1;
  }
  if (a.is("--split-k")) {
    if (!a.value(p.splitK) || (p.splitK != "auto" && p.splitK != "off")) {
      error("", "--split-k needs auto or off");
      return -1;
    }
    return 1;
  }
  bool io = a.is("--io-precision");
  if (!io && !a.is("--precision"))
    return 0;
  std::string v;
  const char *known = io ? "fp16, bf16" : "fp32, tf32, fp16, bf16";
  if (!a.value(v) ||
      (v != "fp16" && v != "bf16" && (io || (v != "fp32" && v != "tf32")))) {
    error("", std::string(io ? "--io-precision" : "--precision") +
                  " needs one of " + known);
    return -1;
  }
  (io ? p.io : p.storage) = v;
  return 1;
}

// Converts the module's tensors to p (cuts-convert-precision), splits
// products for their slices where the parts fill the GPU
// (cuts-split-products) and along K where they fill too little of it
// (cuts-split-k), splits sliced Q|K|V into heads before slicing
// (cuts-slice-heads), stores tensor-core matmul weights transposed
// (cuts-transpose-weights) and, where
// `arch` has tensor cores and p.layout allows, runs 16-bit convs
// channels-last (cuts-channels-last) with a block's last conv and its
// shortcut as one (cuts-fuse-conv-sum); on failure prints the error (the
// pass names the op) and returns false.
bool applyPrecision(mlir::MLIRContext &ctx, mlir::ModuleOp module,
                    const Precision &p, const cuts::GpuArch &arch,
                    const std::string &model) {
  if (!p.io.empty() && p.io != p.storage) {
    error("", "--io-precision " + p.io + " needs --precision " + p.io);
    return false;
  }
  mlir::PassManager pm(&ctx);
  auto &fn = pm.nest<mlir::func::FuncOp>();
  if (p.tensorParallelCheck > 1 || p.tensorParallel > 1) {
    cuts::TensorParallelOptions tp;
    tp.ranks = std::max(p.tensorParallelCheck, p.tensorParallel);
    tp.rank = p.tensorParallelRank;
    tp.simulate = p.tensorParallelCheck > 1;
    fn.addPass(cuts::createTensorParallel(tp));
  }
  if (p.storage == "fp16" || p.storage == "bf16" || p.storage == "tf32") {
    cuts::ConvertPrecisionOptions o;
    o.precision = p.storage;
    o.ioPrecision = p.io;
    fn.addPass(cuts::createConvertPrecision(o));
  }
  // A product split for its slices' sake only where each part fills a
  // wave of 128 x 128 tiles (cuts-split-products).
  cuts::SplitProductsOptions split;
  split.minElements = int64_t(arch.numSM) * 128 * 128;
  fn.addPass(cuts::createSplitProducts(split));
  cuts::SplitKOptions splitK;
  splitK.numSM = p.splitK == "auto" ? int64_t(arch.numSM) : 0;
  fn.addPass(cuts::createSplitK(splitK));
  fn.addPass(cuts::createSliceHeads());
  fn.addPass(cuts::createFoldConstants());
  fn.addPass(cuts::createDeadCode());
  fn.addPass(cuts::createTransposeWeights());
  if (p.layout == "auto" && cuts::hasMmaSync(arch)) {
    fn.addPass(cuts::createChannelsLast());
    // Fused where it saves DRAM time: below the precision's balance point.
    cuts::FuseConvSumOptions sum;
    if (arch.bwGlobal > 0)
      sum.balance =
          (p.storage == "tf32" ? 0.5 : 1.0) * arch.perfPeakFp16 / arch.bwGlobal;
    fn.addPass(cuts::createFuseConvSum(sum));
    fn.addPass(cuts::createFoldConstants());
    fn.addPass(cuts::createDeadCode());
  }
  std::string diag;
  if (!runPassesOn(pm, module, diag)) {
    error(model, diag);
    return false;
  }
  return true;
}

/// What --arch takes, for error messages: the built-in names, or a file.
std::string archList() {
  std::string s;
  for (const auto &a : cuts::knownArchs())
    s += (s.empty() ? "" : ", ") + a.aliases.front();
  return s + ", or a descriptor FILE.json";
}

/// --arch: a built-in descriptor's name or alias, or the path of a
/// descriptor file (what `cuts arch --probe -o FILE.json` writes). On
/// failure prints the error (naming the file) and returns nullopt.
std::optional<cuts::GpuArch> resolveArch(const std::string &name) {
  if (!llvm::StringRef(name).ends_with(".json")) {
    if (auto arch = cuts::findArch(name))
      return arch;
    error("", "unknown --arch '" + name + "' (known: " + archList() + ")");
    return std::nullopt;
  }
  auto buf = llvm::MemoryBuffer::getFile(name);
  if (!buf) {
    error(name,
          "cannot read the GPU descriptor (" + buf.getError().message() + ")");
    return std::nullopt;
  }
  std::string why;
  auto arch = cuts::parseArchJson((*buf)->getBuffer().str(), why);
  if (!arch)
    error(name, "not a GPU descriptor: " + why);
  return arch;
}

void printSync(const cuts::driver::CompileResult &r);

int cmdExplain(const std::vector<std::string> &args) {
  std::string model, archName, tuningCache;
  bool json = false, mlir = false, sync = false;
  cuts::ImportOptions opts;
  cuts::ExplainOptions eopts;
  Precision precision;
  for (ArgList a(args); a.next();) {
    if (a.is("--arch")) {
      if (!a.value(archName))
        return error("", "--arch needs a GPU name (" + archList() + ")");
    } else if (a.is("--json")) {
      json = true;
    } else if (a.is("--mlir")) {
      mlir = true;
    } else if (a.is("--sync")) {
      sync = true;
    } else if (a.is("--tuning")) {
      if (!a.value(tuningCache))
        return error("", "--tuning needs a cache file (JSON)");
    } else if (a.is("--no-fusion")) {
      eopts.fusion = false;
    } else if (int r = parsePruneOption(a, eopts.prune)) {
      if (r < 0)
        return 1;
    } else if (int r = parsePrecisionOption(a, precision)) {
      if (r < 0)
        return 1;
    } else if (int r = cuts::cli::parseInputShape(a, opts.inputShapes)) {
      if (r < 0)
        return 1;
    } else if (int rc = cuts::cli::positional(a, model, "explain", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "explain: no model given (cuts explain MODEL.onnx "
                     "--arch h100)");
  if (archName.empty())
    return error("", "explain: --arch is required (" + archList() + ")");
  auto arch = resolveArch(archName);
  if (!arch)
    return 1;
  mlir::MLIRContext ctx;
  auto module = loadModel(ctx, model, opts, /*runPasses=*/true);
  if (!module || !applyPrecision(ctx, *module, precision, *arch, model))
    return 1;
  eopts.precision = precision.storage;
  eopts.canFuse = cuts::driver::canGenerateGroup; // the groups compile makes
  eopts.cost = cuts::driver::boundCost;           // at the costs it uses
  auto func = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::string err;
  auto report = cuts::explainFunction(func, *arch, eopts, err);
  if (!report)
    return error(model, err);
  if (mlir) {
    if (!cuts::groupRegions(*report, err))
      return error(model, err);
    llvm::outs() << moduleText(*module, /*printWeights=*/false) << "\n";
    return 0;
  }
  if (!sync) {
    llvm::outs() << (json ? cuts::explainJson(*report)
                          : cuts::explainTable(*report));
    return 0;
  }
  // --sync: the pairs a compile would make, planned as it plans them (the
  // kernels built, not compiled; measured times from --tuning CACHE).
  cuts::driver::CompileOptions copts;
  copts.arch = *arch;
  copts.archs = copts.arch.targets = {arch->computeArch};
  copts.prune = eopts.prune;
  copts.fusion = eopts.fusion;
  copts.precision = precision.storage;
  copts.buildKernels = false;
  copts.tuningCache = tuningCache;
  if (!tuningCache.empty())
    copts.cost = cuts::driver::CostSource::Cache;
  auto planned = cuts::driver::compileModule(*module, copts, err);
  if (!planned)
    return error(model, err);
  if (json) {
    auto j = nlohmann::json::parse(cuts::explainJson(*report));
    j["sync"] = nlohmann::json::parse(cuts::driver::syncJson(planned->syncs));
    llvm::outs() << j.dump(1) << "\n";
    return 0;
  }
  llvm::outs() << cuts::explainTable(*report);
  if (planned->syncs.empty())
    llvm::outs() << "cuSync: no pair of generated kernels to consider\n";
  printSync(*planned);
  return 0;
}

// A program built next to cuts (build tree: ../NAME/NAME; installed: the
// same directory), else on PATH; empty if none.
std::string siblingProgram(const char *argv0, const std::string &name) {
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&siblingProgram));
  llvm::StringRef dir = llvm::sys::path::parent_path(self);
  llvm::SmallString<256> build(dir), installed(dir);
  llvm::sys::path::append(build, "..", name, name);
  llvm::sys::path::append(installed, name);
  for (const auto &p : {build, installed})
    if (llvm::sys::fs::can_execute(p))
      return p.str().str();
  if (auto found = llvm::sys::findProgramByName(name))
    return *found;
  return "";
}

int cmdRunner(const std::string &cmd, const std::vector<std::string> &args,
              const char *argv0) {
  std::string exe = siblingProgram(argv0, "cuts-run");
  if (exe.empty())
    return error("", cmd + " needs the cuts-run program, built next to cuts");
  std::vector<llvm::StringRef> argvRun{exe, cmd};
  argvRun.insert(argvRun.end(), args.begin(), args.end());
  return llvm::sys::ExecuteAndWait(exe, argvRun);
}

bool writeText(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return bool(f);
}

// DIR/kernels/: every distinct kernel's CUDA source (with ptxas's report)
// and HIP source; an earlier compile's are removed first.
int writeKernelSources(const std::string &outDir,
                       const std::vector<cuts::driver::KernelSource> &sources) {
  std::string dir = outDir + "/kernels";
  if (auto ec = llvm::sys::fs::create_directories(dir))
    return error(dir, "cannot create (" + ec.message() + ")");
  // An earlier compile's kernels would pass for this one's.
  std::error_code ec;
  std::vector<std::string> stale;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef p = it->path();
    if (p.ends_with(".cu") || p.ends_with(".hip.cpp"))
      stale.push_back(p.str());
  }
  for (const std::string &p : stale)
    if (llvm::sys::fs::remove(p))
      return error(p, "cannot remove an earlier compile's kernel source");
  for (const auto &s : sources) {
    std::string text = s.source;
    if (!s.ptxas.empty()) {
      std::string report = "// ptxas:\n";
      llvm::SmallVector<llvm::StringRef> lines;
      llvm::StringRef(s.ptxas).split(lines, '\n', -1, false);
      for (llvm::StringRef l : lines)
        report += "//   " + l.str() + "\n";
      text = report + text;
    }
    if (!writeText(dir + "/" + s.name + ".cu", text) ||
        !writeText(dir + "/" + s.name + ".hip.cpp", s.hip))
      return error(dir, "cannot write the kernel sources");
  }
  return 0;
}

// What a tuned compile measured and chose, and where its time went.
// The cuSync pairs made, with the model's estimate for each.
void printSync(const cuts::driver::CompileResult &r) {
  size_t chosen = 0;
  for (const cuts::driver::SyncDecision &d : r.syncs)
    chosen += d.chosen;
  if (r.syncs.empty())
    return;
  llvm::outs() << "  cuSync: " << chosen << " of " << r.syncs.size()
               << " kernel pairs synchronised tile by tile\n";
  std::map<std::string, int> why; // the others, by reason
  for (const cuts::driver::SyncDecision &d : r.syncs)
    if (!d.chosen)
      ++why[d.why];
  for (const auto &[reason, n] : why)
    llvm::outs() << "    not " << n << ": " << reason << "\n";
  // Each pair made, and each the tuner timed: its times in every way.
  for (const cuts::driver::SyncDecision &d : r.syncs) {
    if (!d.chosen && !d.measured)
      continue;
    char line[384];
    int n = std::snprintf(
        line, sizeof line,
        "    %s %s -> %s (%s%s%s%s): %.1f us -> %.1f us predicted",
        d.chosen ? "made" : "kept apart", d.producer.c_str(),
        d.consumer.c_str(), d.policy.c_str(), d.overPdl ? " over PDL" : "",
        d.order.empty() ? "" : ", tiles ", d.order.c_str(), d.streamUs,
        d.syncUs);
    if (d.measured && n > 0 && size_t(n) < sizeof line)
      std::snprintf(line + n, sizeof line - size_t(n),
                    "; measured %.1f us in stream order, %.1f us with PDL, "
                    "%.1f us synchronised",
                    d.measuredStreamUs, d.measuredPdlUs, d.measuredSyncUs);
    llvm::outs() << line << "\n";
  }
}

void printTuning(const cuts::driver::CompileResult &r, double tuneSeconds) {
  char times[512];
  std::snprintf(times, sizeof times,
                "  tuning: %d round(s), %d candidates measured now, %d of "
                "%d kernels chosen by measured time (%d of them library "
                "calls: cuDNN or cuBLASLt; "
                "%.1f us measured, %.1f us bound), %d candidates "
                "unmeasured, %.1f s\n",
                r.tuneRounds, r.measured, r.chosenByTime, r.kernels,
                r.libraryKernels, r.measuredUs, r.predictedUs, r.unmeasured,
                r.tuneSeconds);
  llvm::outs() << times;
  const cuts::tune::MeasureStats &ms = r.measureStats;
  if (r.measured > 0) {
    std::snprintf(times, sizeof times,
                  "  measuring: %.1f s waiting for NVRTC, %.1f s set-up "
                  "(library plans, modules), %.1f s launches, %.1f s "
                  "finishing compiles; slowest candidate %.2f s (%s)\n",
                  ms.waitNvrtc, ms.setup, ms.timing, ms.finish, ms.slowest,
                  ms.slowestName.c_str());
    llvm::outs() << times;
  }
  if (r.tuneBudgetSpent)
    llvm::outs() << "  tuning stopped at --tune-seconds "
                 << llvm::format("%.0f", tuneSeconds) << "\n";
  if (r.unmeasuredPricedAt > 0)
    llvm::outs() << "  groups left unmeasured were priced at "
                 << llvm::format("%.3g", 100 * r.unmeasuredPricedAt)
                 << "% of their bound (the worst a measured group "
                    "achieved)\n";
}

// The runtime's static library and headers that libNAME.so is built
// against: an installed cuts's (../lib, ../include next to it), else the
// build tree's.
std::pair<std::string, std::string> runtimeFiles(const char *argv0) {
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&runtimeFiles));
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(self));
  llvm::SmallString<256> instLib(dir), instInc(dir);
  llvm::sys::path::append(instLib, "..", "lib", "libcuts_runtime.a");
  llvm::sys::path::append(instInc, "..", "include");
  if (llvm::sys::fs::exists(instLib))
    return {instLib.str().str(), instInc.str().str()};
  return {CUTS_RUNTIME_LIB, CUTS_RUNTIME_INCLUDE};
}

// --batch 1,8,32: sizes in increasing order, each once.
bool parseBatches(const std::string &list, std::vector<int64_t> &batches) {
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(list).split(items, ',');
  batches.clear();
  for (llvm::StringRef item : items) {
    unsigned long long v = 0;
    if (item.getAsInteger(10, v) || v < 1 || v > (1ull << 31))
      return false;
    batches.push_back(int64_t(v));
  }
  std::sort(batches.begin(), batches.end());
  return std::adjacent_find(batches.begin(), batches.end()) == batches.end();
}

int cmdCompile(const std::vector<std::string> &args, const char *argv0) {
  std::string model, outDir, archNames, name = "model";
  bool emitSource = false, weightCodecs = false;
  cuts::ImportOptions opts;
  cuts::driver::CompileOptions copts;
  Precision precision;
  std::vector<int64_t> batches; // --batch: the profiles' (none: one plan)
  for (ArgList a(args); a.next();) {
    if (a.is("--arch")) {
      if (!a.value(archNames))
        return error("", "--arch needs a GPU (" + archList() + ")");
    } else if (a.is("--batch")) {
      std::string list;
      if (!a.value(list) || !parseBatches(list, batches))
        return error("", "--batch needs batch sizes, e.g. 1,8,32 (each "
                         "1 to 2^31, no size twice)");
    } else if (a.is("-o")) {
      if (!a.value(outDir))
        return error("", "-o needs a directory");
    } else if (a.is("--name")) {
      if (!a.value(name) || name.empty() ||
          name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
              std::string::npos ||
          std::isdigit(static_cast<unsigned char>(name[0])))
        return error("", "--name needs a C identifier (letters, digits, _)");
    } else if (a.is("-h") || a.is("--help")) {
      usage(llvm::outs());
      return 0;
    } else if (a.is("--emit-source")) {
      emitSource = true;
    } else if (a.is("--no-fusion")) {
      copts.fusion = false;
    } else if (int r = parsePruneOption(a, copts.prune)) {
      if (r < 0)
        return 1;
    } else if (a.is("--jobs")) {
      if (!a.integer(copts.jobs, 1, 1024))
        return error("", "--jobs needs a count >= 1");
    } else if (a.is("--tune")) {
      copts.cost = cuts::driver::CostSource::Measure;
      copts.nvrtcWorker = cuts::tune::nvrtcWorkerExecutable();
    } else if (a.is("--tuning")) {
      if (!a.value(copts.tuningCache))
        return error("", "--tuning needs a cache file (JSON)");
    } else if (a.is("--tune-candidates")) {
      if (!a.integer(copts.tuneCandidates, 1, 1000))
        return error("", "--tune-candidates needs a count >= 1");
    } else if (a.is("--tune-seconds")) {
      if (!a.number(copts.tuneSeconds, 0, 1e7))
        return error("", "--tune-seconds needs a number of seconds >= 0");
    } else if (a.is("--candidates")) {
      if (!a.value(copts.candidatesOut))
        return error("", "--candidates needs a file name");
    } else if (a.is("--no-library")) {
      copts.library = false;
    } else if (a.is("--weight-codecs")) {
      weightCodecs = true;
    } else if (a.is("--no-sync")) {
      copts.sync = cuts::driver::CompileOptions::Sync::Off;
    } else if (a.is("--sync-all")) {
      copts.sync = cuts::driver::CompileOptions::Sync::All;
    } else if (int r = parsePrecisionOption(a, precision)) {
      if (r < 0)
        return 1;
    } else if (int r = cuts::cli::parseInputShape(a, opts.inputShapes)) {
      if (r < 0)
        return 1;
    } else if (int rc = cuts::cli::positional(a, model, "compile", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "compile: no model given (cuts compile MODEL.onnx --arch "
                     "sm_90 -o out/)");
  if (archNames.empty())
    return error("", "compile: --arch is required (" + archList() + ")");
  if (outDir.empty())
    return error("", "compile: -o DIR is required");
  // A tuned compile writes its report to DIR/tuning.json: a cache there
  // would be overwritten by it.
  if (!copts.tuningCache.empty() &&
      llvm::sys::path::filename(copts.tuningCache) == "tuning.json" &&
      llvm::sys::fs::equivalent(llvm::sys::path::parent_path(copts.tuningCache),
                                outDir))
    return error(copts.tuningCache,
                 "--tuning: DIR/tuning.json is the tuned compile's report; "
                 "keep the cache under another name");
  // Each --arch entry names a descriptor; its compute arch gets a CUBIN.
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(archNames).split(names, ',');
  for (llvm::StringRef n : names) {
    auto arch = resolveArch(n.str());
    if (!arch)
      return 1;
    if (arch->vendor != "nvidia")
      return error("", "--arch " + n.str() +
                           ": artifacts for AMD GPUs are not built yet "
                           "(the HIP sources are: cuts-unit-tests checks them "
                           "with hipcc)");
    if (copts.archs.empty())
      copts.arch = *arch;
    if (std::find(copts.archs.begin(), copts.archs.end(), arch->computeArch) ==
        copts.archs.end())
      copts.archs.push_back(arch->computeArch);
  }
  // Kernels must build for every CUBIN target (wgmma only where all are
  // sm_90).
  copts.arch.targets = copts.archs;

  if (copts.cost == cuts::driver::CostSource::Model &&
      (!copts.tuningCache.empty() || !copts.candidatesOut.empty()))
    copts.cost = cuts::driver::CostSource::Cache;
  copts.progress = cuts::tune::stderrProgress();
  auto start = std::chrono::steady_clock::now();
  mlir::MLIRContext ctx;
  if (auto ec = llvm::sys::fs::create_directories(outDir))
    return error(outDir, "cannot create (" + ec.message() + ")");
  // One compile per batch profile (or the one), each module kept: the
  // results' weights point into its constants until the artifact is
  // written.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<cuts::driver::CompileResult> results;
  double importSeconds = 0;
  std::string err, mixesRows, lostRows;
  // One compile per batch profile, or per tensor-parallel rank, or the one.
  const int64_t ranks = precision.tensorParallel;
  std::vector<int64_t> jobs =
      batches.empty() ? std::vector<int64_t>{0} : batches;
  if (ranks > 1) {
    if (!batches.empty() || precision.tensorParallelCheck > 0)
      return error("", "--tensor-parallel takes neither --batch nor "
                       "--tensor-parallel-check (yet)");
    jobs.assign(size_t(ranks), 0);
  }
  for (size_t job = 0; job < jobs.size(); ++job) {
    const int64_t b = jobs[job];
    precision.tensorParallelRank = ranks > 1 ? int64_t(job) : 0;
    auto importStart = std::chrono::steady_clock::now();
    opts.batch = b;
    auto module = loadModel(ctx, model, opts, /*runPasses=*/true);
    if (!module)
      return 1;
    // Rows are followed where a profile has more than one (before the
    // shape-dependent passes).
    if (b > 1 && mixesRows.empty() && lostRows.empty()) {
      cuts::driver::RowMixing rm = cuts::driver::rowMixing(
          *module->getOps<mlir::func::FuncOp>().begin());
      mixesRows = rm.mixes, lostRows = rm.lost;
    }
    if (!applyPrecision(ctx, *module, precision, copts.arch, model))
      return 1;
    copts.precision = precision.storage;
    importSeconds += cuts::driver::secondsSince(importStart);
    if (b > 0 && batches.size() > 1)
      llvm::errs() << "cuts: compiling batch profile " << b << "\n";
    if (ranks > 1)
      llvm::errs() << "cuts: compiling rank " << job << " of " << ranks << "\n";
    auto result = cuts::driver::compileModule(*module, copts, err);
    if (!result)
      return error(model,
                   (b > 0 ? "batch " + std::to_string(b) + ": " : "") + err);
    modules.push_back(std::move(module));
    results.push_back(std::move(*result));
  }
  if (mixesRows.empty() && !lostRows.empty())
    llvm::errs() << "cuts: note: the batch axis is not followed past "
                 << lostRows
                 << ": padded batches and device-list splits assume each "
                    "row's results depend on that row alone\n";
  if (!mixesRows.empty()) {
    llvm::errs() << "cuts: warning: " << mixesRows
                 << ": a batch runs whole, at a profile's own size, on one "
                    "device (no padding, no split across a device list)\n";
    for (cuts::driver::CompileResult &r : results)
      r.contents.manifest.mixesRows = mixesRows;
  }
  std::vector<const cuts::driver::CompileResult *> resultList;
  for (const cuts::driver::CompileResult &r : results)
    resultList.push_back(&r);
  // Written by name below: the timings and sources before the merge moves
  // the contents.
  if (copts.cost != cuts::driver::CostSource::Model) {
    // Each group's fastest generated kernel next to its fastest library call.
    std::string path = outDir + "/tuning.json";
    if (!writeText(path, cuts::driver::timingsJson(resultList, batches,
                                                   copts.arch.name)))
      return error(path, "cannot write");
  }
  if (emitSource)
    for (size_t p = 0; p < results.size(); ++p)
      if (int rc = writeKernelSources(
              ranks > 1 ? outDir + "/rank" + std::to_string(p)
              : batches.empty()
                  ? outDir
                  : outDir + "/batch" + std::to_string(batches[p]),
              results[p].sources))
        return rc;
  cuts::rt::ArtifactContents merged;
  if (!batches.empty() &&
      !cuts::driver::mergeProfiles(results, batches, merged, err))
    return error(model, "--batch: " + err);
  if (ranks > 1 && !cuts::driver::mergeRanks(results, merged, err))
    return error(model, "--tensor-parallel: " + err);
  cuts::rt::ArtifactContents &contents =
      batches.empty() && ranks < 2 ? results[0].contents : merged;
  if (weightCodecs &&
      !cuts::driver::addWeightCodecs(contents, copts.archs, err))
    return error(model, err);
  if (ranks > 1 &&
      !cuts::driver::addCollectiveKernels(contents, copts.archs, err))
    return error(model, err);
  std::string artifact = outDir + "/" + name + ".cuts";
  uint64_t artifactBytes = 0;
  auto writeStart = std::chrono::steady_clock::now();
  if (!cuts::rt::writeArtifact(artifact, contents, &artifactBytes, err))
    return error(artifact, err);
  // Read back as the runtime will (its weights left in the file): an
  // artifact the runtime would refuse is the compiler's bug, reported now
  // rather than at the first load.
  if (!cuts::rt::readArtifactWithoutWeights(artifact, err,
                                            cuts::rt::kLeaveWeightsFrom,
                                            /*verify=*/false)) {
    std::remove(artifact.c_str());
    return error(artifact, "the compiler wrote an artifact the runtime "
                           "refuses (a compiler bug): " +
                               err);
  }
  const double writeSeconds = cuts::driver::secondsSince(writeStart);
  // The header and library bind the largest profile's shapes.
  const cuts::rt::Manifest &m = contents.profiles.empty()
                                    ? contents.manifest
                                    : contents.profiles.back().manifest;
  std::string header = outDir + "/" + name + ".h";
  if (!writeText(header, cuts::driver::modelHeader(m, name)))
    return error(header, "cannot write");

  // libNAME.so: the artifact embedded, the runtime linked in statically.
  std::string lib = outDir + "/lib" + name + ".so";
  auto t0 = std::chrono::steady_clock::now();
  auto [runtimeLib, runtimeInc] = runtimeFiles(argv0);
  if (!cuts::driver::buildModelLibrary(m, name, artifact, outDir, lib,
                                       runtimeLib, runtimeInc, err))
    return error("", err);
  const double libSeconds = cuts::driver::secondsSince(t0),
               total = cuts::driver::secondsSince(start);
  uint64_t weightBytes = contents.weightBytes();
  for (size_t p = 0; p < results.size(); ++p) {
    const cuts::driver::CompileResult &r = results[p];
    llvm::outs() << "compiled " << model;
    if (!batches.empty())
      llvm::outs() << " at batch " << batches[p];
    llvm::outs() << " for " << copts.arch.name << " (" << archNames
                 << "): " << r.kernels << " kernels (" << r.sources.size()
                 << " distinct) from " << r.groups << " groups, " << r.views
                 << " views\n";
  }
  llvm::outs() << "  " << artifact << " (" << artifactBytes / 1024
               << " KiB, weights " << weightBytes / 1024 << " KiB), " << header
               << ", " << lib << "\n";
  double search = 0, codegen = 0, nvrtc = 0;
  for (const cuts::driver::CompileResult &r : results)
    search += r.searchSeconds, codegen += r.codegenSeconds,
        nvrtc += r.nvrtcSeconds;
  char times[512];
  std::snprintf(times, sizeof times,
                "  time %.2f s: import %.2f s, search %.2f s, codegen %.2f s, "
                "NVRTC %.2f s, write %.2f s, library %.2f s\n",
                total, importSeconds, search, codegen, nvrtc, writeSeconds,
                libSeconds);
  llvm::outs() << times;
  for (const cuts::driver::CompileResult &r : results) {
    printSync(r);
    if (copts.cost != cuts::driver::CostSource::Model)
      printTuning(r, copts.tuneSeconds);
  }
  return 0;
}

// --kinds: op families of the model (opKindName), "depthwise" for short.
bool parseKinds(const std::string &list, std::vector<cuts::OpKind> &kinds) {
  static const std::pair<const char *, cuts::OpKind> known[] = {
      {"conv", cuts::OpKind::Conv},
      {"depthwise", cuts::OpKind::DepthwiseConv},
      {"matmul", cuts::OpKind::MatMul},
      {"pool", cuts::OpKind::Pool},
      {"batch_norm", cuts::OpKind::BatchNorm},
      {"elementwise", cuts::OpKind::Elementwise},
      {"reduction", cuts::OpKind::Reduction}};
  kinds.clear();
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(list).split(names, ',');
  for (llvm::StringRef n : names) {
    auto it = std::find_if(std::begin(known), std::end(known),
                           [&](const auto &k) { return n == k.first; });
    if (it == std::end(known))
      return false;
    kinds.push_back(it->second);
  }
  return true;
}

int cmdValidate(const std::vector<std::string> &args) {
  std::string model, outDir, archName;
  int samples = 200;
  cuts::ImportOptions opts;
  cuts::PruneOptions prune;
  std::vector<std::string> ops; // node-name substrings (--ops)
  std::vector<cuts::OpKind> kinds{
      cuts::OpKind::Conv, cuts::OpKind::DepthwiseConv, cuts::OpKind::MatMul};
  for (ArgList a(args); a.next();) {
    std::string list;
    if (a.is("--arch")) {
      if (!a.value(archName))
        return error("", "--arch needs a GPU name (" + archList() + ")");
    } else if (a.is("-o")) {
      if (!a.value(outDir))
        return error("", "-o needs a directory");
    } else if (a.is("--samples")) {
      if (!a.integer(samples, 1, 100000))
        return error("", "--samples needs a count >= 1");
    } else if (a.is("--kinds")) {
      if (!a.value(list) || !parseKinds(list, kinds))
        return error("", "--kinds takes conv, depthwise, matmul, pool, "
                         "batch_norm, elementwise, reduction");
    } else if (a.is("--ops")) {
      if (!a.value(list))
        return error("", "--ops needs node names (NAME,...)");
      llvm::SmallVector<llvm::StringRef> names;
      llvm::StringRef(list).split(names, ',', -1, false);
      for (llvm::StringRef n : names)
        ops.push_back(n.str());
    } else if (int r = parsePruneOption(a, prune)) {
      if (r < 0)
        return 1;
    } else if (int r = cuts::cli::parseInputShape(a, opts.inputShapes)) {
      if (r < 0)
        return 1;
    } else if (int rc = cuts::cli::positional(a, model, "validate", "model")) {
      return rc;
    }
  }
  if (model.empty() || outDir.empty() || archName.empty())
    return error("", "validate: usage: cuts validate MODEL.onnx --arch ARCH "
                     "-o DIR [--samples N] [--kinds conv,depthwise,matmul,...] "
                     "[--ops NAME,...]");
  auto arch = resolveArch(archName);
  if (!arch)
    return 1;
  mlir::MLIRContext ctx;
  auto module = loadModel(ctx, model, opts, /*runPasses=*/true);
  if (!module)
    return 1;
  std::string err;
  auto s = cuts::driver::sampleForValidation(*module, *arch, arch->computeArch,
                                             prune, samples, kinds, ops, err);
  if (!s)
    return error(model, err);
  if (auto ec = llvm::sys::fs::create_directories(outDir))
    return error(outDir, "cannot create (" + ec.message() + ")");
  std::vector<cuts::tune::Candidate> cands;
  for (const auto &x : *s)
    cands.push_back(x.candidate);
  if (!writeText(outDir + "/candidates.json",
                 cuts::tune::candidatesToJson(cands, arch->computeArch)) ||
      !writeText(outDir + "/validation.json",
                 cuts::driver::validationJson(*s, arch->name)))
    return error(outDir, "cannot write");
  llvm::outs() << s->size() << " parameter sets sampled; time them with cuts "
               << "tune " << outDir << " --cache " << outDir
               << "/cache.json, then scripts/validate_report.py " << outDir
               << "\n";
  return 0;
}

int cmdArch(const std::vector<std::string> &args, const char *argv0) {
  bool json = false, probe = false;
  std::vector<llvm::StringRef> probeArgs;
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k] == "--json")
      json = true;
    else if (args[k] == "--probe")
      probe = true;
    else if (probe)
      probeArgs.push_back(args[k]);
    else
      return error("", "arch: unknown option '" + args[k] + "'");
  }
  if (probe) {
    // The probe is a separate CUDA program (no MLIR), built next to cuts.
    std::string exe = siblingProgram(argv0, "cuts-probe");
    if (exe.empty())
      return error("", "arch --probe needs the cuts-probe program (built "
                       "with the CUDA toolkit; scripts/probe_gpu.sh builds "
                       "it alone)");
    std::vector<llvm::StringRef> argvProbe{exe};
    argvProbe.insert(argvProbe.end(), probeArgs.begin(), probeArgs.end());
    return llvm::sys::ExecuteAndWait(exe, argvProbe);
  }
  if (json) {
    llvm::outs() << "[\n";
    const auto &archs = cuts::knownArchs();
    for (size_t i = 0; i < archs.size(); ++i)
      llvm::outs() << cuts::archToJson(archs[i])
                   << (i + 1 < archs.size() ? ",\n" : "\n");
    llvm::outs() << "]\n";
    return 0;
  }
  llvm::outs() << "name        aliases              SMs  FP32 TFLOP/s  "
                  "BW GB/s  ridge FLOP/B  smem/block  L2 MiB\n";
  for (const auto &a : cuts::knownArchs()) {
    std::string aliases;
    for (const auto &al : a.aliases)
      aliases += (aliases.empty() ? "" : ",") + al;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-11s %-20s %4d  %12.1f  %7.0f  %12.1f  %10d  %6.0f\n",
                  a.name.c_str(), aliases.c_str(), a.numSM,
                  a.perfPeakFp32 / 1e12, a.bwGlobal / 1e9, a.ridgePoint(),
                  a.maxSharedPerBlock, double(a.l2Bytes) / (1 << 20));
    llvm::outs() << line;
  }
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
  if (cmd == cuts::tune::kNvrtcWorkerArg) // the tuner's compile processes
    return cuts::tune::nvrtcWorkerMain();
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
  if (cmd == "explain")
    return cmdExplain(args);
  if (cmd == "arch")
    return cmdArch(args, argv[0]);
  if (cmd == "plan")
    return cuts::cli::cmdPlan(args);
  if (cmd == "compile")
    return cmdCompile(args, argv[0]);
  if (cmd == "validate")
    return cmdValidate(args);
  if (cmd == "run" || cmd == "bench" || cmd == "tune" || cmd == "compress" ||
      cmd == "collectives" || cmd == "c3")
    return cmdRunner(cmd, args, argv[0]);
  usage(llvm::errs());
  return error("", "unknown command '" + cmd + "'");
}
