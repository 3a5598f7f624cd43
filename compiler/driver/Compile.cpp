//===- Compile.cpp - the compile pipeline: graph to artifact --------------===//
#include "compiler/driver/Compile.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "compiler/driver/Lower.h"
#include "compiler/driver/Tuner.h"
#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"
#include "runtime/Library.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace cuts::driver {
namespace {

/// The predecessor's parameters of a shared-memory-level estimate's i-th
/// ranked set; null for other groups.
const TileParams *predecessorOf(const GroupEstimate &e, size_t i) {
  return e.predecessor && i < e.rankedPredecessor.size()
             ? &e.rankedPredecessor[i].params
             : nullptr;
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

std::string opName(mlir::Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto n = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    s += " (node " + n.getName().str() + ")";
  return s;
}

/// The manifest dtype of an element type ("float32", "int64", "bool", ...);
/// nullopt for one the artifact has no name for (unsigned wider than 8
/// bits, complex, ...).
std::optional<std::string> dtypeOf(mlir::Type t) {
  if (t.isF32())
    return "float32";
  if (t.isF16())
    return "float16";
  if (t.isBF16())
    return "bfloat16";
  if (t.isF64())
    return "float64";
  if (t.isInteger(1))
    return "bool";
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(t)) {
    if (i.isUnsigned())
      return i.getWidth() == 8 ? std::optional<std::string>("uint8")
                               : std::nullopt;
    switch (i.getWidth()) {
    case 8:
      return "int8";
    case 16:
      return "int16";
    case 32:
      return "int32";
    case 64:
      return "int64";
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::string typeText(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return os.str();
}

/// The constant's elements as the GPU reads them: little-endian, packed, of
/// the manifest dtype's size (bool: one byte, 0 or 1). `what` names the
/// constant in errors.
bool constantBytes(ConstantOp c, const std::string &what,
                   std::vector<uint8_t> &out, std::string &error) {
  auto type = llvm::cast<mlir::RankedTensorType>(c.getType());
  mlir::Type et = type.getElementType();
  auto dtype = dtypeOf(et);
  if (!dtype) {
    error = what + " has element type " + typeText(et) +
            ", which an artifact cannot hold";
    return false;
  }
  size_t eb = size_t(rt::dtypeBytes(*dtype));
  size_t n = size_t(type.getNumElements());
  size_t bytes = n * eb;
  mlir::Attribute attr = c.getValue();
  // fp32 weights (the bulk of a model) are copied as they are.
  if (et.isF32())
    if (auto r = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(attr)) {
      mlir::AsmResourceBlob *blob = r.getRawHandle().getBlob();
      if (!blob || blob->getData().size() != bytes) {
        error = what + ": its data is missing";
        return false;
      }
      auto d = blob->getData();
      out.assign(d.begin(), d.end());
      return true;
    }
  auto h = toHost(attr);
  if (!h || size_t(h->numel()) != n) {
    error = what + " (" + typeText(type) + "): its data cannot be read";
    return false;
  }
  out.assign(bytes, 0);
  for (size_t i = 0; i < n; ++i) {
    uint8_t *p = out.data() + i * eb;
    if (llvm::isa<mlir::FloatType>(et)) {
      double v = h->getF(int64_t(i));
      if (et.isF64()) {
        std::memcpy(p, &v, 8);
      } else if (et.isF32()) {
        float f = float(v);
        std::memcpy(p, &f, 4);
      } else {
        // f16 / bf16: round to the element type, store its bit pattern.
        llvm::APFloat f(v);
        bool lost = false;
        f.convert(llvm::cast<mlir::FloatType>(et).getFloatSemantics(),
                  llvm::APFloat::rmNearestTiesToEven, &lost);
        uint16_t bits = uint16_t(f.bitcastToAPInt().getZExtValue());
        std::memcpy(p, &bits, 2);
      }
      continue;
    }
    int64_t v = h->getI(int64_t(i));
    if (et.isInteger(1))
      v = v != 0;
    // Little-endian: the low eb bytes of the two's complement value.
    for (size_t b = 0; b < eb; ++b)
      p[b] = uint8_t(uint64_t(v) >> (8 * b));
  }
  return true;
}

/// Bytes of v's elements in the artifact (0 for a type it cannot hold).
uint64_t valueBytes(mlir::Value v) {
  auto type = llvm::cast<mlir::ShapedType>(v.getType());
  auto dtype = dtypeOf(type.getElementType());
  return dtype ? uint64_t(rt::dtypeBytes(*dtype)) *
                     uint64_t(type.getNumElements())
               : 0;
}

/// The least work of a kernel computing `ops` with parameters `args`: the
/// ops' FLOPs (the performance model's COMP totals) and the bytes of each
/// arg moved once. A gather's table and a slice's source count only what
/// the ops read of them (their results' bytes), not the whole tensor.
std::pair<double, uint64_t> kernelWork(llvm::ArrayRef<mlir::Operation *> ops,
                                       llvm::ArrayRef<mlir::Value> args) {
  double flops = 0;
  for (mlir::Operation *op : ops)
    if (auto d = describeOp(op))
      flops += d->totalComp();
  llvm::SmallPtrSet<mlir::Operation *, 16> group(ops.begin(), ops.end());
  uint64_t bytes = 0;
  llvm::SmallDenseSet<mlir::Value, 16> seen;
  for (mlir::Value v : args) {
    if (!seen.insert(v).second)
      continue;
    uint64_t whole = valueBytes(v), partial = 0;
    bool onlyPartial = false;
    for (mlir::OpOperand &use : v.getUses()) {
      mlir::Operation *user = use.getOwner();
      if (!group.contains(user))
        continue;
      bool part =
          use.getOperandNumber() == 0 &&
          llvm::isa<GatherOp, GatherElementsOp, GatherNDOp, SliceOp>(user);
      if (!part) {
        onlyPartial = false;
        break;
      }
      onlyPartial = true;
      partial += valueBytes(user->getResult(0));
    }
    bytes += onlyPartial ? std::min(whole, partial) : whole;
  }
  return {flops, bytes};
}

/// Runs fn(i) for i in [0, n) on `jobs` threads.
template <typename Fn> void parallelFor(size_t n, int jobs, Fn fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  int t = std::max(1, std::min<int>(jobs, int(n)));
  for (int k = 0; k < t; ++k)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;)
        fn(i);
    });
  for (std::thread &th : pool)
    th.join();
}

} // namespace

bool notCoveredYet(const std::string &error) {
  return error.find(" cannot be compiled yet: ") != std::string::npos ||
         error.find(", which an artifact cannot hold") != std::string::npos;
}

std::string timingsJson(const CompileResult &r, const std::string &arch) {
  nlohmann::json groups = nlohmann::json::array();
  auto us = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nullptr;
  };
  for (const GroupTiming &t : r.timings)
    groups.push_back({{"ops", t.ops},
                      {"fusion", t.fusion},
                      {"boundUs", us(t.boundUs)},
                      {"generatedUs", us(t.generatedUs)},
                      {"libraryUs", us(t.libraryUs)},
                      {"library", t.library},
                      {"chosen", t.chosenLibrary ? "library" : "generated"}});
  return nlohmann::json({{"arch", arch}, {"groups", groups}}).dump(1) + "\n";
}

std::string cIdentifier(const std::string &name) {
  std::string s;
  for (char c : name)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "m_" + s;
  return s;
}

std::optional<CompileResult> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts,
                                           std::string &error) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!func) {
    error = "the module has no @main function";
    return std::nullopt;
  }
  CompileResult res;

  // Every op must be one the code generator can make a kernel of on its own.
  for (mlir::Operation &op : func.getBody().front()) {
    if (llvm::isa<ConstantOp, mlir::func::ReturnOp>(op) || isViewOp(&op))
      continue;
    std::string why;
    if (!canGenerate({&op}, &why)) {
      error = opName(&op) + " cannot be compiled yet: " + why;
      return std::nullopt;
    }
  }

  ExplainOptions eo;
  eo.prune = opts.prune;
  eo.fusion = opts.fusion;
  eo.jobs = opts.jobs;
  // The rounds of search below share one model: the parameter searches do
  // not depend on the costs (at batch 64 they are most of a search).
  FusionModel model(opts.arch, opts.prune, opts.fusion);
  eo.model = &model;
  eo.canFuse = [](llvm::ArrayRef<mlir::Operation *> ops) {
    return canGenerate(ops);
  };

  // The candidates of a group: its best-bound parameter sets, each in the
  // normal and (for looped kernels) the prefetching variant, lowered once.
  std::string arch0 = opts.archs.empty() ? "sm_90" : opts.archs.front();
  std::string toolkit = nvrtcVersion();
  struct GroupCandidate {
    GroupKernel kernel; // a generated kernel, or (library) the graph values
    tune::Candidate tc; // of the library call's args in GroupKernel::args
  };
  std::map<std::vector<mlir::Operation *>, std::vector<GroupCandidate>> memo;
  auto candidatesOf =
      [&](llvm::ArrayRef<mlir::Operation *> ops,
          const GroupEstimate &e) -> const std::vector<GroupCandidate> & {
    std::vector<mlir::Operation *> key(ops.begin(), ops.end());
    auto it = memo.find(key);
    if (it != memo.end())
      return it->second;
    std::vector<GroupCandidate> list;
    const int group = int(memo.size());
    // One set of each tiling before a second format of any.
    std::vector<size_t> order = distinctTilingsFirst(
        e.ranked, size_t(std::max(0, opts.tuneCandidates)));
    for (int l = 0; l < int(order.size()); ++l)
      for (bool prefetch : {false, true}) {
        std::string why;
        size_t i = order[size_t(l)];
        auto gk = lowerGroup(ops, e.ranked[i].params, "cuts_kernel", why,
                             predecessorOf(e, i));
        if (!gk || (prefetch && gk->kernel.loopExtent <= 0))
          continue;
        gk->kernel.prefetch = prefetch;
        // The prefetching variant doubles the tiles; the bound checked one.
        if (opts.arch.maxSharedPerBlock > 0 &&
            codegen::launchShape(gk->kernel).sharedBytes >
                opts.arch.maxSharedPerBlock)
          continue;
        tune::Candidate tc = tuneCandidate(gk->kernel, arch0, toolkit);
        tc.group = group;
        tc.level = 2 * l + prefetch;
        list.push_back({std::move(*gk), std::move(tc)});
      }
    // A library call as a candidate: its graph values, its params, and the
    // bytes of its args (the output last).
    std::vector<mlir::Value> libArgs;
    auto library = [&](const char *lib, const char *family,
                       std::vector<int64_t> params,
                       std::vector<uint64_t> argBytes) {
      GroupCandidate c;
      c.kernel.args = libArgs;
      c.kernel.family = family;
      c.tc.library = lib;
      c.tc.libraryParams = std::move(params);
      c.tc.key =
          tune::librarySignature(c.tc.library, c.tc.libraryParams, arch0);
      c.tc.name = std::string(family) +
                  (c.tc.library == rt::kCublasGemm ? "_gemm" : "_conv");
      c.tc.argBytes = std::move(argBytes);
      c.tc.argOutput.assign(c.tc.argBytes.size(), false);
      c.tc.argOutput.back() = true;
      c.tc.group = group; // level 0: no NVRTC, and often the fastest
      list.push_back(std::move(c));
    };
    // Each present one of the optional args (bias, residual).
    auto optional = [](std::vector<uint64_t> bytes, bool bias,
                       uint64_t biasBytes, bool residual, uint64_t zBytes,
                       uint64_t yBytes) {
      if (bias)
        bytes.push_back(biasBytes);
      if (residual)
        bytes.push_back(zBytes);
      bytes.push_back(yBytes);
      return bytes;
    };
    // cuDNN's fused convolution, once per forward algorithm.
    auto spec = opts.library ? cudnnConv(ops, libArgs) : std::nullopt;
    for (int algo :
         spec ? rt::CudnnConv::forwardAlgorithms() : std::vector<int>{}) {
      rt::ConvSpec sp = *spec;
      sp.algo = algo;
      std::string why;
      if (rt::checkConvSpec(sp, why))
        library(rt::kCudnnConv, "cudnn", rt::encodeConvSpec(sp),
                optional({sp.xBytes(), sp.wBytes()}, sp.bias, sp.biasBytes(),
                         sp.residual, sp.yBytes(), sp.yBytes()));
    }
    // cuBLASLt's product, once per algorithm its heuristic offers.
    auto gemm = opts.library ? cublasGemm(ops, libArgs) : std::nullopt;
    for (int algo = 0; gemm && algo < rt::kMaxGemmAlgos; ++algo) {
      rt::GemmSpec sp = *gemm;
      sp.algo = algo;
      library(rt::kCublasGemm, "cublaslt", rt::encodeGemmSpec(sp),
              optional({sp.aBytes(), sp.bBytes()}, sp.bias, sp.biasBytes(),
                       sp.residual, sp.zBytes(), sp.yBytes()));
    }
    return memo.emplace(key, std::move(list)).first->second;
  };
  tune::Cache cache;
  if (!opts.tuningCache.empty() && !cache.load(opts.tuningCache, error))
    return std::nullopt;
  // The fastest measured candidate of a group (index), if any is measured.
  auto fastest = [&](const std::vector<GroupCandidate> &list,
                     double &us) -> int {
    int best = -1;
    us = INFINITY;
    for (size_t i = 0; i < list.size(); ++i)
      if (const tune::Cache::Entry *en = cache.find(list[i].tc.key))
        if (en->us && *en->us < us) {
          us = *en->us;
          best = int(i);
        }
    return best;
  };
  std::vector<tune::Candidate> pending;
  std::map<std::string, bool> pendingKeys;
  if (opts.cost == CostSource::Model)
    // The lower bound; a shared-memory-level pair only where its best sets
    // line up as one kernel (the model checks shapes, not tile layouts).
    eo.cost = [](llvm::ArrayRef<mlir::Operation *> ops,
                 const GroupEstimate &e) -> double {
      std::string why;
      if (e.predecessor && !lowerGroup(ops, e.best.params, "cuts_kernel", why,
                                       &e.predecessorBest.params))
        return INFINITY;
      return e.time;
    };
  // The smallest fraction of its bound a measured group achieved in the
  // current search; unmeasured groups are priced by `pricedAt` (a fraction
  // of the bound), or at the bound when it is 0.
  double worstAchieved = INFINITY, pricedAt = 0;
  // Both scale the work above a kernel's launch, which is known: the
  // launch is added back, not scaled.
  const double launch = opts.arch.launchSeconds;
  if (opts.cost != CostSource::Model)
    eo.cost = [&](llvm::ArrayRef<mlir::Operation *> ops,
                  const GroupEstimate &e) -> double {
      const auto &list = candidatesOf(ops, e);
      bool any = false;
      for (const GroupCandidate &c : list) {
        if (cache.find(c.tc.key))
          any = true;
        else if (pendingKeys.emplace(c.tc.key, true).second)
          pending.push_back(c.tc);
      }
      if (!any)
        // Nothing measured: the lower bound, which sends the group to be
        // measured next round; when no round follows, the bound scaled
        // as if the group did as badly as the worst measured one, so an
        // unmeasured fusion (a ResNet-50 b64 3x3+1x1 pair: bound 323 us,
        // measured later 3815 us) does not displace measured kernels
        // merely for being unknown.
        return pricedAt > 0 ? launch + (e.time - launch) / pricedAt : e.time;
      double us;
      fastest(list, us);
      if (std::isfinite(us) && us * 1e-6 > launch)
        worstAchieved =
            std::min(worstAchieved, (e.time - launch) / (us * 1e-6 - launch));
      return us * 1e-6; // +inf if every candidate failed
    };

  // Search, measure what the search looked at, search again with the
  // measured costs, until every group it considers is measured.
  auto tuneStart = std::chrono::steady_clock::now();
  std::optional<ExplainReport> report;
  // The report used is always one whose pending candidates were not
  // measured after it, so a compile from the saved cache (one search, no
  // measuring) sees the same costs and makes the same choices.
  const int maxRounds = 5;
  for (int round = 0; round < maxRounds; ++round) {
    // The last search: nothing it leaves unmeasured will be measured.
    if (opts.tuneSeconds > 0 && opts.tuneSeconds - secondsSince(tuneStart) <= 0)
      res.tuneBudgetSpent = true;
    bool last = opts.cost != CostSource::Measure || round + 1 == maxRounds ||
                res.tuneBudgetSpent;
    auto search = [&]() -> bool {
      pending.clear();
      pendingKeys.clear();
      worstAchieved = INFINITY;
      report = explainFunction(func, opts.arch, eo, error);
      if (!report)
        return false;
      res.searchSeconds += report->searchSeconds;
      return true;
    };
    if (!search())
      return std::nullopt;
    // A last search that left groups unmeasured is redone with them priced
    // pessimistically (by what the first pass measured: the same cache
    // gives the same price, so a compile from the cache chooses the same).
    if (last && !pending.empty() && std::isfinite(worstAchieved)) {
      pricedAt = worstAchieved;
      if (!search())
        return std::nullopt;
      res.unmeasuredPricedAt = pricedAt;
      pricedAt = 0;
    }
    res.tuneRounds = round + 1;
    if (pending.empty() || last)
      break;
    tune::MeasureOptions mo;
    mo.jobs = opts.jobs;
    mo.nvrtcWorker = opts.nvrtcWorker;
    mo.progress = opts.progress;
    mo.stats = &res.measureStats;
    if (opts.tuneSeconds > 0)
      mo.maxSeconds = opts.tuneSeconds - secondsSince(tuneStart);
    if (opts.progress)
      std::fprintf(stderr, "tuning round %d: %zu candidates\n", round + 1,
                   pending.size());
    if (!tune::measure(pending, arch0, cache, mo, error))
      return std::nullopt;
    int measured = 0;
    for (const tune::Candidate &c : pending)
      measured += cache.find(c.key) != nullptr;
    res.measured += measured;
    if (measured < int(pending.size()))
      res.tuneBudgetSpent = true; // measure() stopped at maxSeconds
    if (!opts.tuningCache.empty() && !cache.save(opts.tuningCache, error))
      return std::nullopt;
  }
  res.unmeasured = int(pending.size());
  if (!opts.candidatesOut.empty()) {
    std::ofstream f(opts.candidatesOut);
    f << tune::candidatesToJson(pending, arch0);
    if (!f) {
      error = opts.candidatesOut + ": cannot write";
      return std::nullopt;
    }
  }
  res.tuneSeconds = secondsSince(tuneStart) - res.searchSeconds;
  auto codegenStart = std::chrono::steady_clock::now();

  rt::Manifest &m = res.contents.manifest;
  if (auto n = module->getAttrOfType<mlir::StringAttr>("cuts.graph_name"))
    m.model = n.str();
  m.producer = "cuts 0.1.0";
  m.archs = opts.archs;
  m.target = opts.arch.name;
  m.peakFlops = opts.arch.perfPeakFp32;
  m.bandwidth = opts.arch.bwGlobal;

  // Tensors: inputs, then every value a kernel or the plan touches.
  llvm::DenseMap<mlir::Value, int> tensorOf;
  auto shapeOf = [](mlir::Value v) {
    auto s = llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
    return std::vector<int64_t>(s.begin(), s.end());
  };
  auto elementOf = [](mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType()).getElementType();
  };
  // A tensor of v's shape and dtype; -1 (with `error`) for an element type
  // the artifact has no dtype for. `what` names v in that error.
  auto addTensor = [&](mlir::Value v, rt::TensorKind kind,
                       const std::string &name, const std::string &what) {
    auto dtype = dtypeOf(elementOf(v));
    if (!dtype) {
      error = what + " has element type " + typeText(elementOf(v)) +
              ", which an artifact cannot hold (float32, float16, bfloat16, "
              "float64, int8, uint8, int16, int32, int64, bool)";
      return -1;
    }
    rt::Tensor t;
    t.name = name;
    t.shape = shapeOf(v);
    t.dtype = *dtype;
    t.kind = kind;
    m.tensors.push_back(t);
    tensorOf[v] = int(m.tensors.size() - 1);
    return int(m.tensors.size() - 1);
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    mlir::Value a = func.getArgument(i);
    auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "cuts.name");
    std::string name = n ? n.str() : "input" + std::to_string(i);
    int t = addTensor(a, rt::TensorKind::Input, name,
                      "input " + std::to_string(i) + " (\"" + name + "\")");
    if (t < 0)
      return std::nullopt;
    m.tensors[t].index = int(i);
    m.inputs.push_back(t);
  }
  std::vector<uint8_t> &weights = res.contents.weights;
  std::function<int(mlir::Value)> tensorFor = [&](mlir::Value v) -> int {
    auto it = tensorOf.find(v);
    if (it != tensorOf.end())
      return it->second;
    mlir::Operation *def = v.getDefiningOp();
    std::string name = "t" + std::to_string(m.tensors.size());
    if (auto n = llvm::dyn_cast_or_null<mlir::NameLoc>(def->getLoc()))
      name = n.getName().str();
    if (auto c = llvm::dyn_cast<ConstantOp>(def)) {
      std::string what = "constant \"" + name + "\"";
      std::vector<uint8_t> bytes;
      if (!constantBytes(c, what, bytes, error))
        return -1;
      int t = addTensor(v, rt::TensorKind::Weight,
                        "weight" + std::to_string(m.tensors.size()), what);
      if (t < 0)
        return -1;
      weights.resize((weights.size() + 255) / 256 * 256);
      m.tensors[t].weightOffset = weights.size();
      weights.insert(weights.end(), bytes.begin(), bytes.end());
      return t;
    }
    if (isViewOp(def)) {
      int root = tensorFor(def->getOperand(0));
      if (root < 0)
        return -1;
      int t = addTensor(v, rt::TensorKind::View, name,
                        "\"" + name + "\" (" + opName(def) + ")");
      if (t >= 0)
        m.tensors[t].viewOf = root;
      return t;
    }
    return addTensor(v, rt::TensorKind::Intermediate, name,
                     "\"" + name + "\" (" + opName(def) + ")");
  };

  // Lower every group; identical kernels (same source up to the name) are
  // compiled once.
  std::map<std::string, int> uniqueOf; // source with a neutral name -> index
  std::vector<codegen::Kernel> unique;
  for (const GroupReport &g : report->groups) {
    ++res.groups;
    if (g.estimate.fusion == "view") {
      ++res.views;
      continue;
    }
    // An empty result (a slice past the end, a reduction keeping an empty
    // axis) has nothing to compute: no kernel.
    if (llvm::cast<mlir::ShapedType>(
            g.operations.back()->getResult(0).getType())
            .getNumElements() == 0)
      continue;
    // The fastest measured candidate; else the best parameter set by the
    // bound, then the anchor's other kept sets, in case the generator
    // refuses a set the model allows.
    std::string why;
    std::optional<GroupKernel> gk;
    double us = INFINITY;
    std::string ops;
    for (size_t i = 0; i < g.ops.size(); ++i)
      ops += (i ? " + " : "") + g.ops[i].substr(g.ops[i].find('.') + 1) +
             (g.names[i].empty() ? "" : "(" + g.names[i] + ")");
    if (opts.cost != CostSource::Model) {
      const auto &list = candidatesOf(g.operations, g.estimate);
      int best = fastest(list, us);
      GroupTiming gt;
      gt.ops = ops;
      gt.fusion = g.estimate.fusion;
      gt.boundUs = g.estimate.time * 1e6;
      for (const GroupCandidate &c : list)
        if (const tune::Cache::Entry *en = cache.find(c.tc.key); en && en->us) {
          if (c.tc.library.empty()) {
            gt.generatedUs = std::min(gt.generatedUs, *en->us);
          } else if (*en->us < gt.libraryUs) {
            gt.libraryUs = *en->us;
            gt.library = c.tc.library;
          }
        }
      gt.chosenLibrary = best >= 0 && !list[best].tc.library.empty();
      res.timings.push_back(gt);
      if (best >= 0 && !list[best].tc.library.empty()) {
        // cuDNN or cuBLASLt was faster: a library kernel, no source, no
        // CUBIN.
        const GroupCandidate &c = list[best];
        rt::KernelLaunch launch;
        launch.name = c.tc.name;
        launch.library = c.tc.library;
        launch.libraryParams = c.tc.libraryParams;
        std::string e;
        launch.summary = ops + ": " +
                         (c.tc.library == rt::kCublasGemm
                              ? rt::describeGemmSpec(
                                    *rt::decodeGemmSpec(c.tc.libraryParams, e))
                              : rt::describeConvSpec(*rt::decodeConvSpec(
                                    c.tc.libraryParams, e)));
        launch.pulTimeUs = g.estimate.time * 1e6;
        std::tie(launch.flops, launch.bytes) =
            kernelWork(g.operations, c.kernel.args);
        for (mlir::Value v : c.kernel.args) {
          int t = tensorFor(v);
          if (t < 0)
            return std::nullopt;
          launch.args.push_back(t);
        }
        launch.outputs = {launch.args.back()};
        m.steps.push_back({int(m.kernels.size()), -1, -1});
        m.kernels.push_back(launch);
        res.contents.sources.push_back("");
        ++res.kernels;
        ++res.chosenByTime;
        ++res.libraryKernels;
        res.measuredUs += us;
        res.predictedUs += g.estimate.time * 1e6;
        continue;
      }
      if (best >= 0) {
        gk = list[best].kernel;
        ++res.chosenByTime;
        res.measuredUs += us;
      }
    }
    // A shared-memory-level pair: its ranked (successor, predecessor) sets,
    // best first.
    for (size_t i = 0;
         !gk && g.estimate.predecessor && i < g.estimate.ranked.size(); ++i)
      gk = lowerGroup(g.operations, g.estimate.ranked[i].params, "cuts_kernel",
                      why, predecessorOf(g.estimate, i));
    if (!gk && !g.estimate.predecessor)
      gk = lowerGroup(g.operations, g.estimate.best.params, "cuts_kernel", why);
    if (!gk && !g.estimate.predecessor)
      for (const Candidate &c :
           searchParams(g.estimate.anchorDesc, opts.arch, opts.prune).kept)
        if ((gk = lowerGroup(g.operations, c.params, "cuts_kernel", why)))
          break;
    if (!gk) {
      error = "no kernel for " + opName(g.operations.front()) + ": " + why;
      return std::nullopt;
    }
    gk->kernel.pul = g.estimate.best.bound.pul;
    res.predictedUs += g.estimate.time * 1e6;
    gk->kernel.summary = ops + ": " + gk->kernel.summary;
    auto [it, fresh] = uniqueOf.emplace(
        kernelCode(codegen::emitSource(gk->kernel)), int(unique.size()));
    if (fresh) {
      gk->kernel.name = gk->family + "_" + std::to_string(unique.size());
      unique.push_back(gk->kernel);
    }
    const codegen::Kernel &k = unique[it->second];

    rt::KernelLaunch launch;
    launch.name = k.name;
    launch.summary = gk->kernel.summary;
    codegen::LaunchShape shape = codegen::launchShape(k);
    launch.grid = shape.blocks;
    launch.block = shape.threads;
    launch.sharedBytes = shape.sharedBytes;
    launch.pulTimeUs = g.estimate.time * 1e6;
    std::tie(launch.flops, launch.bytes) = kernelWork(g.operations, gk->args);
    for (size_t i = 0; i < gk->args.size(); ++i) {
      int t = tensorFor(gk->args[i]);
      if (t < 0) {
        error = opName(g.operations.front()) + ": " + error;
        return std::nullopt;
      }
      launch.args.push_back(t);
      if (gk->kernel.tensors[i].output)
        launch.outputs.push_back(t);
    }
    m.steps.push_back({int(m.kernels.size()), -1, -1});
    m.kernels.push_back(launch);
    res.contents.sources.push_back(""); // filled below, per kernel
    ++res.kernels;
  }

  // Outputs: a kernel writes straight into the caller's buffer where it can;
  // otherwise (an input, a weight, a value returned twice) a copy.
  auto ret =
      llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    mlir::Value v = ret.getOperand(i);
    int t = tensorFor(v);
    if (t < 0)
      return std::nullopt;
    auto n = func.getResultAttrOfType<mlir::StringAttr>(i, "cuts.name");
    std::string name = n ? n.str() : "output" + std::to_string(i);
    int root = rt::rootTensor(m, t);
    if (m.tensors[root].kind == rt::TensorKind::Intermediate) {
      m.tensors[root].kind = rt::TensorKind::Output;
      m.tensors[root].index = int(i);
      m.tensors[t].name = name;
      m.outputs.push_back(t);
      continue;
    }
    rt::Tensor out;
    out.name = name;
    out.shape = shapeOf(v);
    out.dtype = m.tensors[t].dtype;
    out.kind = rt::TensorKind::Output;
    out.index = int(i);
    m.tensors.push_back(out);
    int o = int(m.tensors.size() - 1);
    m.steps.push_back({-1, t, o});
    m.outputs.push_back(o);
  }
  res.codegenSeconds = secondsSince(codegenStart);

  // CUDA sources, HIP sources, and NVRTC per distinct kernel and arch.
  auto nvrtcStart = std::chrono::steady_clock::now();
  res.sources.resize(unique.size());
  std::vector<std::map<std::string, std::vector<char>>> cubins(unique.size());
  std::vector<std::string> errors(unique.size());
  int jobs = opts.jobs > 0
                 ? opts.jobs
                 : int(std::max(1u, std::thread::hardware_concurrency()));
  parallelFor(unique.size(), jobs, [&](size_t i) {
    KernelSource &s = res.sources[i];
    s.name = unique[i].name;
    s.source = codegen::emitSource(unique[i]);
    s.hip = codegen::emitSource(unique[i], codegen::Target::Hip);
    for (const std::string &arch : opts.archs) {
      std::string bin = tune::signature(s.source, arch, toolkit);
      if (const std::vector<char> *b = cache.binary(bin)) {
        cubins[i][arch] = *b; // the binary shipped when this was tuned
        s.ptxas += arch + ": from the tuning cache\n";
        continue;
      }
      std::string err;
      NvrtcOptions no;
      no.sourceName = s.name + ".cu";
      auto r = compileWithNvrtc(s.source, arch, err, no);
      if (!r) {
        errors[i] = "kernel " + s.name + " for " + arch + ": " + err;
        return;
      }
      cubins[i][arch] = std::move(r->cubin);
      if (const KernelResources *kr = r->find(s.name)) {
        std::ostringstream os;
        os << arch << ": " << kr->registers << " registers, "
           << kr->spillStoreBytes << " B spill stores, " << kr->spillLoadBytes
           << " B spill loads, " << kr->sharedBytes << " B static shared\n";
        s.ptxas += os.str();
      }
    }
  });
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return std::nullopt;
    }
  // A compile with a cache records the binaries it ships there, so the
  // next compile from that cache ships the same bytes.
  if (opts.cost != CostSource::Model && !opts.tuningCache.empty()) {
    for (size_t i = 0; i < unique.size(); ++i)
      for (const auto &[arch, bin] : cubins[i])
        cache.putBinary(tune::signature(res.sources[i].source, arch, toolkit),
                        bin);
    if (!cache.save(opts.tuningCache, error))
      return std::nullopt;
  }
  std::map<std::string, int> byName;
  for (size_t i = 0; i < unique.size(); ++i)
    byName[unique[i].name] = int(i);
  res.contents.cubins.resize(m.kernels.size());
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    if (m.kernels[k].isLibrary())
      continue;
    int u = byName.at(m.kernels[k].name);
    res.contents.sources[k] = res.sources[u].source;
    res.contents.cubins[k] = cubins[u];
  }
  res.nvrtcSeconds = secondsSince(nvrtcStart);
  return res;
}

namespace {

// The C parameter name of each input, then each output: the tensor's name
// as an identifier, made unique ("x", "x_1") where two names map to one.
std::vector<std::string> parameterNames(const rt::Manifest &m) {
  std::vector<std::string> names;
  std::set<std::string> used{"session"};
  auto add = [&](const std::string &tensor) {
    std::string base = cIdentifier(tensor), n = base;
    for (int k = 1; !used.insert(n).second; ++k)
      n = base + "_" + std::to_string(k);
    names.push_back(n);
  };
  for (int t : m.inputs)
    add(m.tensors[t].name);
  for (int t : m.outputs)
    add(m.tensors[t].name);
  return names;
}

// The C element type (model.h is C and C++) and the cuts_dtype enumerator
// of a manifest dtype. float16 and bfloat16 are passed as their bit
// patterns.
struct CDtype {
  const char *type, *enumerator;
};
CDtype cDtype(const std::string &dtype) {
  static const std::map<std::string, CDtype> table = {
      {"float32", {"float", "CUTS_FLOAT32"}},
      {"float16", {"uint16_t", "CUTS_FLOAT16"}},
      {"bfloat16", {"uint16_t", "CUTS_BFLOAT16"}},
      {"float64", {"double", "CUTS_FLOAT64"}},
      {"int8", {"int8_t", "CUTS_INT8"}},
      {"uint8", {"uint8_t", "CUTS_UINT8"}},
      {"int16", {"int16_t", "CUTS_INT16"}},
      {"int32", {"int32_t", "CUTS_INT32"}},
      {"int64", {"int64_t", "CUTS_INT64"}},
      {"bool", {"bool", "CUTS_BOOL"}}};
  auto it = table.find(dtype);
  // The driver writes no other dtype; a manifest built by hand with one
  // still gives a header that compiles.
  return it == table.end() ? CDtype{"void", "CUTS_FLOAT32"} : it->second;
}

// The run function's parameter list after the session: "const T *in", ...,
// "T *out", ...
std::string runParameters(const rt::Manifest &m,
                          const std::vector<std::string> &param) {
  std::string s;
  size_t ni = m.inputs.size();
  for (size_t i = 0; i < ni; ++i)
    s += std::string(", const ") + cDtype(m.tensors[m.inputs[i]].dtype).type +
         " *" + param[i];
  for (size_t i = 0; i < m.outputs.size(); ++i)
    s += std::string(", ") + cDtype(m.tensors[m.outputs[i]].dtype).type + " *" +
         param[ni + i];
  return s;
}

// Text for inside a C comment: a "*/" would end it.
std::string commentText(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '*' && i + 1 < s.size() && s[i + 1] == '/')
      out += ' ';
  }
  return out;
}

// A C string literal's contents.
std::string cString(const std::string &s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += char(c);
    else if (c < 32 || c > 126) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else
      out += char(c);
  }
  return out;
}

} // namespace

std::string modelHeader(const rt::Manifest &m, const std::string &prefix) {
  std::ostringstream os;
  std::string P = prefix;
  for (char &c : P)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  os << "/* " << prefix << ".h: the compiled model \"" << m.model
     << "\", generated by " << m.producer << ".\n"
     << " * Link lib" << prefix
     << ".so (the artifact is embedded in it) and the CUDA driver. */\n"
     << "#ifndef " << P << "_H\n#define " << P << "_H\n\n"
     << "#include <cuts/cuts.h>\n\n#ifndef __cplusplus\n"
     << "#include <stdbool.h>\n#endif\n\n#ifdef __cplusplus\nextern \"C\" {\n"
     << "#endif\n\n";
  auto shape = [](const rt::Tensor &t) {
    std::string s;
    for (size_t d = 0; d < t.shape.size(); ++d)
      s += (d ? "x" : "") + std::to_string(t.shape[d]);
    return s.empty() ? std::string("scalar") : s;
  };
  std::vector<std::string> param = parameterNames(m);
  os << "/* Loads the embedded model (options may be NULL). */\n"
     << "cuts_status " << prefix
     << "_load(const cuts_load_options *options, cuts_model **model);\n\n"
     << "/* One run on the session's stream, device pointers:\n";
  size_t k = 0;
  for (const std::vector<int> *list : {&m.inputs, &m.outputs})
    for (int t : *list)
      os << " *   " << param[k++] << ": " << m.tensors[t].dtype << " "
         << shape(m.tensors[t]) << " ("
         << (list == &m.inputs ? "input" : "output") << " \""
         << commentText(m.tensors[t].name) << "\")\n";
  if (std::any_of(m.tensors.begin(), m.tensors.end(),
                  [](const rt::Tensor &t) { return t.dtype == "bool"; }))
    os << " * A bool element is one byte, 0 or 1.\n";
  os << " */\ncuts_status " << prefix << "_run(cuts_session *session"
     << runParameters(m, param) << ");\n\n#ifdef __cplusplus\n}\n#endif\n\n"
     << "#endif\n";
  return os.str();
}

std::string modelLibrarySource(const rt::Manifest &m, const std::string &prefix,
                               const std::string &artifactPath) {
  std::ostringstream os;
  std::vector<std::string> param = parameterNames(m);
  size_t ni = m.inputs.size();
  os << "// lib" << prefix << ".so: the artifact embedded, and " << prefix
     << ".h's functions.\n#include \"" << prefix << ".h\"\n\n"
     << "__asm__(\".section .rodata\\n.balign 256\\n"
     << ".global cuts_artifact_" << prefix << "\\n"
     << "cuts_artifact_" << prefix << ":\\n.incbin \\\"" << artifactPath
     << "\\\"\\n.global cuts_artifact_end_" << prefix << "\\n"
     << "cuts_artifact_end_" << prefix << ":\\n.previous\\n\");\n"
     << "extern \"C\" const char cuts_artifact_" << prefix
     << "[], cuts_artifact_end_" << prefix << "[];\n\n";
  os << "extern \"C\" cuts_status " << prefix
     << "_load(const cuts_load_options *options, cuts_model **model) {\n"
     << "  return cuts_model_load_memory(cuts_artifact_" << prefix
     << ", size_t(cuts_artifact_end_" << prefix << " - cuts_artifact_" << prefix
     << "), options, model);\n}\n\n";
  auto shapeArray = [](const rt::Tensor &t) {
    std::string s = "{";
    for (size_t d = 0; d < t.shape.size(); ++d)
      s += (d ? ", " : "") + std::to_string(t.shape[d]);
    return s + (t.shape.empty() ? "0}" : "}");
  };
  os << "extern \"C\" cuts_status " << prefix << "_run(cuts_session *session"
     << runParameters(m, param) << ") {\n";
  int k = 0;
  for (int t : m.inputs)
    os << "  static const int64_t s" << k++
       << "[] = " << shapeArray(m.tensors[t]) << ";\n";
  for (int t : m.outputs)
    os << "  static const int64_t s" << k++
       << "[] = " << shapeArray(m.tensors[t]) << ";\n";
  k = 0;
  auto binding = [&](const rt::Tensor &t, const std::string &param) {
    std::ostringstream b;
    b << "{\"" << cString(t.name) << "\", " << cDtype(t.dtype).enumerator
      << ", " << t.shape.size() << ", s" << k++ << ", (void *)" << param << "}";
    return b.str();
  };
  os << "  const cuts_binding in[] = {";
  for (size_t i = 0; i < m.inputs.size(); ++i)
    os << (i ? ", " : "") << binding(m.tensors[m.inputs[i]], param[i]);
  os << "};\n  const cuts_binding out[] = {";
  for (size_t i = 0; i < m.outputs.size(); ++i)
    os << (i ? ", " : "") << binding(m.tensors[m.outputs[i]], param[ni + i]);
  os << "};\n  return cuts_session_run(session, in, " << m.inputs.size()
     << ", out, " << m.outputs.size() << ");\n}\n";
  return os.str();
}

} // namespace cuts::driver
