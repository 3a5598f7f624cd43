//===- Package.cpp - chosen groups to an artifact -------------------------===//
#include "compiler/driver/Package.h"

#include "codegen/emit/Collective.h"
#include "codegen/emit/Compress.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "cuts/rt/Checksum.h"
#include "perfmodel/Describe.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>

namespace cuts::driver {
namespace {

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

/// The constant's bytes where its storage is already what the GPU reads
/// (a resource blob of the dtype's size: fp32, fp16, bf16, the integers),
/// else empty.
llvm::ArrayRef<char> storedBytes(ConstantOp c, size_t bytes) {
  mlir::Type et = c.getType().getElementType();
  auto r = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(c.getValue());
  if (!r || et.isInteger(1))
    return {};
  mlir::AsmResourceBlob *blob = r.getRawHandle().getBlob();
  if (!blob || blob->getData().size() != bytes)
    return {};
  return blob->getData();
}

/// The constant's elements as the GPU reads them: little-endian, packed,
/// of the manifest dtype's size (bool: one byte, 0 or 1), converted from
/// its attribute. `what` names the constant in errors.
bool convertedBytes(ConstantOp c, const std::string &what, size_t eb,
                    std::vector<uint8_t> &out, std::string &error) {
  auto type = llvm::cast<mlir::RankedTensorType>(c.getType());
  mlir::Type et = type.getElementType();
  size_t n = size_t(type.getNumElements());
  auto h = toHost(c.getValue());
  if (!h || size_t(h->numel()) != n) {
    error = what + " (" + typeText(type) + "): its data cannot be read";
    return false;
  }
  out.assign(n * eb, 0);
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

/// "conv(name) + relu(name)": a group's ops as plan steps and tuning.json
/// name them.
std::string groupOps(const GroupReport &g) {
  std::string ops;
  for (size_t i = 0; i < g.ops.size(); ++i)
    ops += (i ? " + " : "") + g.ops[i].substr(g.ops[i].find('.') + 1) +
           (g.names[i].empty() ? "" : "(" + g.names[i] + ")");
  return ops;
}

std::vector<int64_t> shapeOf(mlir::Value v) {
  auto s = llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
  return std::vector<int64_t>(s.begin(), s.end());
}

} // namespace

Packager::Packager(mlir::ModuleOp module, const CompileOptions &opts,
                   CandidateTable *candidates, tune::Cache &cache,
                   CompileResult &res)
    : func(module.lookupSymbol<mlir::func::FuncOp>("main")), opts(opts),
      candidates(candidates), cache(cache), res(res), m(res.contents.manifest) {
  if (auto n = module->getAttrOfType<mlir::StringAttr>("cuts.graph_name"))
    m.model = n.str();
  m.producer = "cuts 0.1.0";
  m.archs = opts.archs;
  m.target = opts.arch.name;
  // The units the precision's products run on: the tensor cores for
  // 16-bit tensors and tf32, else the FP32 SIMT units.
  const bool half = opts.precision == "fp16" || opts.precision == "bf16";
  const bool tf32 = opts.precision == "tf32";
  m.peakFlops = opts.arch.perfPeakFp16 <= 0 ? opts.arch.perfPeakFp32
                : half                      ? opts.arch.perfPeakFp16
                : tf32 ? opts.arch.perfPeakFp16 * cuts::GpuArch::kTf32PerFp16
                       : opts.arch.perfPeakFp32;
  m.bandwidth = opts.arch.bwGlobal;
  m.precision = opts.precision;
}

int Packager::addTensor(mlir::Value v, rt::TensorKind kind,
                        const std::string &name, const std::string &what,
                        std::string &error) {
  mlir::Type et =
      llvm::cast<mlir::RankedTensorType>(v.getType()).getElementType();
  auto dtype = dtypeOf(et);
  if (!dtype) {
    error = what + " has element type " + typeText(et) +
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
}

bool Packager::addInputs(std::string &error) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    mlir::Value a = func.getArgument(i);
    auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "cuts.name");
    std::string name = n ? n.str() : "input" + std::to_string(i);
    int t =
        addTensor(a, rt::TensorKind::Input, name,
                  "input " + std::to_string(i) + " (\"" + name + "\")", error);
    if (t < 0)
      return false;
    m.tensors[t].index = int(i);
    m.inputs.push_back(t);
  }
  return true;
}

int Packager::addWeight(mlir::Value v, const std::string &name,
                        std::string &error) {
  std::string what = "constant \"" + name + "\"";
  auto c = v.getDefiningOp<ConstantOp>();
  auto dtype = dtypeOf(c.getType().getElementType());
  if (!dtype) {
    error = what + " has element type " +
            typeText(c.getType().getElementType()) +
            ", which an artifact cannot hold";
    return -1;
  }
  const size_t eb = size_t(rt::dtypeBytes(*dtype));
  const size_t bytes = eb * size_t(c.getType().getNumElements());
  llvm::ArrayRef<char> data = storedBytes(c, bytes);
  if (data.empty() && bytes > 0) {
    std::vector<uint8_t> converted;
    if (!convertedBytes(c, what, eb, converted, error))
      return -1;
    res.convertedWeights.push_back(std::move(converted));
    const std::vector<uint8_t> &kept = res.convertedWeights.back();
    data = {reinterpret_cast<const char *>(kept.data()), kept.size()};
  }
  int t = addTensor(v, rt::TensorKind::Weight,
                    "weight" + std::to_string(m.tensors.size()), what, error);
  if (t < 0)
    return -1;
  // Bytes the artifact already holds are pointed at, not stored again.
  const auto *p = reinterpret_cast<const uint8_t *>(data.data());
  std::vector<rt::WeightSpan> &same =
      storedWeights[{bytes, rt::xxh64(p, bytes)}];
  for (const rt::WeightSpan &w : same)
    if (bytes == 0 || std::memcmp(w.data, p, bytes) == 0) {
      m.tensors[t].weightOffset = w.offset;
      return t;
    }
  rt::ArtifactContents &a = res.contents;
  const uint64_t offset = (a.weightBytes() + 255) / 256 * 256;
  m.tensors[t].weightOffset = offset;
  a.weightSpans.push_back({offset, p, bytes});
  same.push_back(a.weightSpans.back());
  return t;
}

int Packager::tensorFor(mlir::Value v, std::string &error) {
  auto it = tensorOf.find(v);
  if (it != tensorOf.end())
    return it->second;
  mlir::Operation *def = v.getDefiningOp();
  std::string name = "t" + std::to_string(m.tensors.size());
  if (auto n = llvm::dyn_cast_or_null<mlir::NameLoc>(def->getLoc()))
    name = n.getName().str();
  if (llvm::isa<ConstantOp>(def))
    return addWeight(v, name, error);
  // An all-reduce sums its operand in place: its result is a view of it.
  if (isViewOp(def) || llvm::isa<AllReduceOp>(def)) {
    int root = tensorFor(def->getOperand(0), error);
    if (root < 0)
      return -1;
    int t = addTensor(v, rt::TensorKind::View, name,
                      "\"" + name + "\" (" + opName(def) + ")", error);
    if (t >= 0)
      m.tensors[t].viewOf = root;
    return t;
  }
  return addTensor(v, rt::TensorKind::Intermediate, name,
                   "\"" + name + "\" (" + opName(def) + ")", error);
}

int Packager::addKernel(rt::KernelLaunch launch,
                        llvm::ArrayRef<mlir::Value> args,
                        const std::vector<bool> &outputs, std::string &error) {
  for (size_t i = 0; i < args.size(); ++i) {
    int t = tensorFor(args[i], error);
    if (t < 0)
      return -1;
    launch.args.push_back(t);
    if (outputs[i])
      launch.outputs.push_back(t);
  }
  kernelUs.push_back(launch.pulTimeUs);
  uniqueOfKernel.push_back(-1);
  m.kernels.push_back(std::move(launch));
  res.contents.sources.push_back(""); // a generated kernel's: compileKernels
  return int(m.kernels.size()) - 1;
}

bool Packager::addStep(rt::KernelLaunch launch,
                       llvm::ArrayRef<mlir::Value> args,
                       const std::vector<bool> &outputs, std::string &error) {
  int k = addKernel(std::move(launch), args, outputs, error);
  if (k < 0)
    return false;
  m.steps.push_back({k, -1, -1});
  ++res.kernels;
  return true;
}

bool Packager::addLibraryStep(const GroupReport &g, const GroupCandidate &c,
                              const std::string &ops, std::string &error) {
  // cuDNN or cuBLASLt was faster: a library kernel, no source, no CUBIN.
  rt::KernelLaunch launch;
  launch.name = c.tc.name;
  launch.library = c.tc.library;
  launch.libraryParams = c.tc.libraryParams;
  std::string e;
  launch.summary =
      ops + ": " +
      (c.tc.library == rt::kCublasGemm
           ? rt::describeGemmSpec(*rt::decodeGemmSpec(c.tc.libraryParams, e))
           : rt::describeConvSpec(*rt::decodeConvSpec(c.tc.libraryParams, e)));
  launch.pulTimeUs = g.estimate.time * 1e6;
  std::tie(launch.flops, launch.bytes) =
      kernelWork(g.operations, c.kernel.args);
  std::vector<bool> outputs(c.kernel.args.size(), false);
  outputs.back() = true;
  ++res.libraryKernels;
  return addStep(std::move(launch), c.kernel.args, outputs, error);
}

namespace {
// GroupTiming::variant of a generated kernel.
std::string variantName(const codegen::Kernel &k) {
  if (k.persistentBlocks)
    return codegen::keepsB(k) ? "persistent, B resident" : "persistent";
  if (k.patchA)
    return "patch";
  if (codegen::splitKWorkspace(k).counters > 0)
    return "split-K " + std::to_string(k.splitK);
  return k.prefetch ? "prefetch" : "";
}
} // namespace

std::optional<GroupKernel> Packager::measuredChoice(const GroupReport &g,
                                                    const std::string &ops,
                                                    bool &library, double &us,
                                                    std::string &error) {
  library = false;
  const auto &list = candidates->of(g.operations, g.estimate);
  int best = fastestMeasured(list, cache, us);
  GroupTiming gt;
  gt.ops = ops;
  gt.fusion = g.estimate.fusion;
  gt.boundUs = g.estimate.time * 1e6;
  for (const GroupCandidate &c : list)
    if (const tune::Cache::Entry *en = cache.find(c.tc.key); en && en->us) {
      if (c.tc.library.empty()) {
        if (*en->us < gt.generatedUs)
          gt.variant = variantName(c.kernel.kernel);
        gt.generatedUs = std::min(gt.generatedUs, *en->us);
      } else if (*en->us < gt.libraryUs) {
        gt.libraryUs = *en->us;
        gt.library = c.tc.library;
      }
    }
  gt.chosenLibrary = best >= 0 && !list[best].tc.library.empty();
  res.timings.push_back(gt);
  if (best < 0)
    return std::nullopt;
  ++res.chosenByTime;
  res.measuredUs += us;
  if (gt.chosenLibrary) {
    library = true;
    res.predictedUs += g.estimate.time * 1e6;
    if (!addLibraryStep(g, list[best], ops, error))
      return std::nullopt;
    return list[best].kernel;
  }
  return list[best].kernel;
}

std::optional<GroupKernel> Packager::boundChoice(const GroupReport &g,
                                                 std::string &why) const {
  const GroupEstimate &e = g.estimate;
  std::optional<GroupKernel> gk;
  // A shared-memory-level pair: its ranked (successor, predecessor) sets,
  // best first.
  for (size_t i = 0; !gk && e.predecessor && i < e.ranked.size(); ++i)
    gk = lowerGroup(g.operations, e.ranked[i].params, "cuts_kernel", why,
                    predecessorOf(e, i));
  if (e.predecessor)
    return gk;
  // The best set by the bound, then the anchor's other kept sets, in case
  // the generator refuses a set the model allows.
  if ((gk = lowerGroup(g.operations, e.best.params, "cuts_kernel", why)))
    return gk;
  for (const Candidate &c :
       searchParams(e.anchorDesc, opts.arch, opts.prune).kept)
    if ((gk = lowerGroup(g.operations, c.params, "cuts_kernel", why)))
      break;
  return gk;
}

bool Packager::addGroup(const GroupReport &g, std::string &error) {
  ++res.groups;
  if (g.estimate.fusion == "view") {
    // The search leaves an all-reduce alone (no kernel reads across it):
    // a collective step between its operand's producer and its readers.
    for (mlir::Operation *op : g.operations)
      if (auto ar = llvm::dyn_cast<AllReduceOp>(op)) {
        rt::Step s;
        s.from = tensorFor(ar.getX(), error);
        s.to = tensorFor(ar.getY(), error);
        if (s.from < 0 || s.to < 0)
          return false;
        s.collective = "all-reduce";
        // Below the measured crossover NCCL's latency wins (ConCCL §V);
        // past the rank count it was measured on, NCCL at every size.
        const double maxRanks = opts.arch.collectiveCopyEngineRanks;
        if (double(m.tensors[size_t(s.from)].bytes()) <
                opts.arch.collectiveCrossoverBytes ||
            (maxRanks > 0 && double(ar.getRanks()) > maxRanks))
          s.engine = "nccl";
        m.steps.push_back(s);
      }
    ++res.views;
    return true;
  }
  // An empty result (a slice past the end, a reduction keeping an empty
  // axis) has nothing to compute: no kernel.
  if (llvm::cast<mlir::ShapedType>(g.operations.back()->getResult(0).getType())
          .getNumElements() == 0)
    return true;
  std::string ops = groupOps(g), why;
  std::optional<GroupKernel> gk;
  double measured = 0;
  if (opts.cost != CostSource::Model) {
    bool library = false;
    gk = measuredChoice(g, ops, library, measured, error);
    if (library)
      return gk && addHostAlternative(g, *gk, ops, error);
    if (!gk)
      measured = 0;
  }
  // No set fits the GPU (its registers or shared memory): its kernel would
  // be a pathological one (a row walked by one thread), so none is made.
  if (!gk && !std::isfinite(g.estimate.time)) {
    error = "no tile of " + ops + " fits " + opts.arch.name +
            " (each needs more registers or shared memory than a block has)";
    return false;
  }
  if (!gk && !(gk = boundChoice(g, why))) {
    error = "no kernel for " + opName(g.operations.front()) + ": " + why;
    return false;
  }
  res.predictedUs += g.estimate.time * 1e6;
  if (addGenerated(g, *gk, ops, measured, error) < 0) {
    error = opName(g.operations.front()) + ": " + error;
    return false;
  }
  m.steps.push_back({int(m.kernels.size()) - 1, -1, -1});
  ++res.kernels;
  return true;
}

// A library step's generated alternative (rt::Step::hostKernel): its
// group's fastest measured generated kernel (else the bound's choice), for
// runs not replayed as a CUDA graph, where the call's host work would
// outlast its kernel.
bool Packager::addHostAlternative(const GroupReport &g,
                                  const GroupKernel &library,
                                  const std::string &ops, std::string &error) {
  const auto &list = candidates->of(g.operations, g.estimate);
  double us = 0;
  int best = fastestMeasured(list, cache, us, /*generatedOnly=*/true);
  std::string why;
  std::optional<GroupKernel> gk;
  if (best >= 0)
    gk = list[best].kernel;
  else if (!(gk = boundChoice(g, why)))
    return true; // the library call serves host runs too
  // The memory plan is the call's: the alternative may touch nothing else
  // but weights (the artifact checks the same), so no split-K workspace.
  if (gk->kernel.splitK > 1)
    gk->kernel.splitK = 0, best = -1;
  for (mlir::Value v : gk->args)
    if (!llvm::is_contained(library.args, v) &&
        !llvm::isa_and_nonnull<ConstantOp>(v.getDefiningOp()))
      return true;
  const int k = addGenerated(g, *gk, ops, best >= 0 ? us : 0, error);
  if (k < 0)
    return false;
  m.steps.back().hostKernel = k;
  return true;
}

// Generated kernel gk of group g as a kernel of the plan (no step), its
// code compiled once however many launches share it; its index, or -1.
int Packager::addGenerated(const GroupReport &g, GroupKernel &gk,
                           const std::string &ops, double measured,
                           std::string &error) {
  gk.kernel.pul = g.estimate.best.bound.pul;
  gk.kernel.summary = ops + ": " + gk.kernel.summary;
  // Identical kernels (the same code up to the name) are compiled once.
  auto [it, fresh] = uniqueOf.emplace(
      kernelCode(codegen::emitSource(gk.kernel)), int(unique.size()));
  if (fresh) {
    gk.kernel.name = gk.family + "_" + std::to_string(unique.size());
    unique.push_back(gk.kernel);
  }
  const codegen::Kernel &k = unique[it->second];
  rt::KernelLaunch launch;
  launch.name = k.name;
  launch.summary = gk.kernel.summary;
  codegen::LaunchShape shape = codegen::launchShape(k);
  launch.grid = shape.blocks;
  launch.block = shape.threads;
  launch.sharedBytes = shape.sharedBytes;
  launch.pulTimeUs = g.estimate.time * 1e6;
  std::tie(launch.flops, launch.bytes) = kernelWork(g.operations, gk.args);
  std::vector<bool> outputs;
  for (const codegen::TensorArg &t : gk.kernel.tensors)
    outputs.push_back(t.output);
  const int index = addKernel(std::move(launch), gk.args, outputs, error);
  if (index < 0)
    return -1;
  addSplitKWorkspace(size_t(index), k);
  uniqueOfKernel.back() = it->second;
  if (measured > 0)
    kernelUs.back() = measured;
  return index;
}

void Packager::addSplitKWorkspace(size_t kernel, const codegen::Kernel &k) {
  const codegen::SplitKWorkspace w = codegen::splitKWorkspace(k);
  if (w.counters == 0)
    return;
  // The partials live only while the kernel runs; the counters are state
  // (zero in a fresh session), which the kernel leaves zero.
  rt::KernelLaunch &launch = m.kernels[kernel];
  rt::Tensor t;
  t.name = launch.name + "_partials" + std::to_string(kernel);
  t.shape = {w.partialFloats};
  t.dtype = "float32";
  t.kind = rt::TensorKind::Intermediate;
  m.tensors.push_back(t);
  launch.args.push_back(int(m.tensors.size() - 1));
  launch.outputs.push_back(int(m.tensors.size() - 1));
  const int arrived = addStateTensor(
      launch.name + "_arrived" + std::to_string(kernel), w.counters);
  launch.args.push_back(arrived);
  launch.outputs.push_back(arrived);
}

bool Packager::addOutputs(std::string &error) {
  auto ret =
      llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    mlir::Value v = ret.getOperand(i);
    int t = tensorFor(v, error);
    if (t < 0)
      return false;
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
  return true;
}

namespace {

// NVRTC costs about 24 ms a program before any kernel (sm_90, one core), as
// much as a small SIMT kernel itself: small kernels compile in batches,
// each in a namespace of its own (their helpers repeat), the batch's CUBIN
// shared (the runtime loads a CUBIN once). A tensor-core kernel takes 400
// ms alone and gains nothing: it compiles alone. Fixed sizes, so that the
// artifact does not depend on the host's cores.
constexpr size_t kBatchKernels = 8, kBatchSource = 128 * 1024;

struct Batch {
  size_t arch;                 // index into CompileOptions::archs
  std::vector<size_t> kernels; // indices into `unique`
  size_t bytes = 0;            // their source
};

std::string batchSource(const std::vector<KernelSource> &sources,
                        const Batch &b) {
  if (b.kernels.size() == 1)
    return sources[b.kernels[0]].source;
  std::string s;
  for (size_t i : b.kernels)
    s += "namespace cuts_batch_" + std::to_string(i) + " {\n" +
         sources[i].source + "\n} // namespace cuts_batch_" +
         std::to_string(i) + "\n";
  return s;
}

} // namespace

void Packager::dropUnusedKernels() {
  std::set<std::string> used;
  for (const rt::KernelLaunch &k : m.kernels)
    if (!k.isLibrary())
      used.insert(k.name);
  std::vector<int> to(unique.size(), -1);
  std::vector<codegen::Kernel> kept;
  std::map<int, std::pair<std::string, std::string>> raw;
  for (size_t i = 0; i < unique.size(); ++i) {
    if (!used.count(unique[i].name))
      continue;
    to[i] = int(kept.size());
    if (auto r = rawSources.find(int(i)); r != rawSources.end())
      raw[to[i]] = r->second;
    kept.push_back(std::move(unique[i]));
  }
  unique = std::move(kept), rawSources = std::move(raw);
  for (int &u : uniqueOfKernel)
    u = u >= 0 ? to[size_t(u)] : u;
  for (auto it = uniqueOf.begin(); it != uniqueOf.end();)
    if (to[size_t(it->second)] < 0) {
      it = uniqueOf.erase(it);
    } else {
      it->second = to[size_t(it->second)];
      ++it;
    }
}

bool Packager::compileKernels(std::string &error) {
  dropUnusedKernels();
  const std::string toolkit = nvrtcVersion();
  const std::vector<std::string> &archs = opts.archs;
  res.sources.resize(unique.size());
  int jobs = opts.jobs > 0
                 ? opts.jobs
                 : int(std::max(1u, std::thread::hardware_concurrency()));
  parallelFor(unique.size(), jobs, [&](size_t i) {
    KernelSource &s = res.sources[i];
    s.name = unique[i].name;
    auto raw = rawSources.find(int(i));
    s.source = raw != rawSources.end() ? raw->second.first
                                       : codegen::emitSource(unique[i]);
    s.hip = raw != rawSources.end()
                ? raw->second.second
                : codegen::emitSource(unique[i], codegen::Target::Hip);
  });
  // Per kernel and arch: its CUBIN, ptxas line and error (batches of
  // different archs run at once, so each writes only its own slots).
  struct Slot {
    std::vector<char> cubin;
    std::string ptxas, error;
  };
  std::vector<std::vector<Slot>> slots(unique.size(),
                                       std::vector<Slot>(archs.size()));
  // A tuning cache records each kernel's own CUBIN: no batches there.
  const bool batched = opts.tuningCache.empty();
  std::vector<Batch> batches;
  for (size_t a = 0; a < archs.size(); ++a) {
    Batch fill{a, {}};
    for (size_t i = 0; i < unique.size(); ++i) {
      const std::string &src = res.sources[i].source;
      if (const std::vector<char> *b =
              cache.binary(tune::signature(src, archs[a], toolkit))) {
        slots[i][a].cubin = *b; // the binary shipped when this was tuned
        slots[i][a].ptxas = archs[a] + ": from the tuning cache\n";
        continue;
      }
      const bool alone = !batched || unique[i].mma;
      if (alone || fill.kernels.size() == kBatchKernels ||
          fill.bytes + src.size() > kBatchSource) {
        if (!fill.kernels.empty())
          batches.push_back(fill);
        fill = {a, {}};
      }
      if (alone) {
        batches.push_back({a, {i}, src.size()});
        continue;
      }
      fill.kernels.push_back(i);
      fill.bytes += src.size();
    }
    if (!fill.kernels.empty())
      batches.push_back(fill);
  }
  // The largest first, so that no large batch starts last.
  std::stable_sort(
      batches.begin(), batches.end(),
      [](const Batch &x, const Batch &y) { return x.bytes > y.bytes; });
  tune::Progress progress(opts.progress, "NVRTC", batches.size());
  std::atomic<size_t> compiled{0};
  // Compiles b, or each of its kernels alone where the batch fails (so that
  // an error names its kernel).
  std::function<void(const Batch &)> compile = [&](const Batch &b) {
    const std::string &arch = archs[b.arch];
    std::string err;
    NvrtcOptions no;
    no.sourceName = res.sources[b.kernels[0]].name + ".cu";
    auto r = compileWithNvrtc(batchSource(res.sources, b), arch, err, no);
    if (!r && b.kernels.size() > 1) {
      for (size_t i : b.kernels)
        compile({b.arch, {i}, res.sources[i].source.size()});
      return;
    }
    for (size_t i : b.kernels) {
      Slot &slot = slots[i][b.arch];
      if (!r) {
        slot.error =
            "kernel " + res.sources[i].name + " for " + arch + ": " + err;
        continue;
      }
      slot.cubin = r->cubin;
      if (const KernelResources *kr = r->find(res.sources[i].name)) {
        std::ostringstream os;
        os << arch << ": " << kr->registers << " registers, "
           << kr->spillStoreBytes << " B spill stores, " << kr->spillLoadBytes
           << " B spill loads, " << kr->sharedBytes << " B static shared\n";
        slot.ptxas = os.str();
      }
    }
  };
  parallelFor(batches.size(), jobs, [&](size_t b) {
    compile(batches[b]);
    progress.step(++compiled);
  });
  cubins.assign(unique.size(), {});
  for (size_t i = 0; i < unique.size(); ++i)
    for (size_t a = 0; a < archs.size(); ++a) {
      Slot &slot = slots[i][a];
      if (!slot.error.empty()) {
        error = slot.error;
        return false;
      }
      cubins[i][archs[a]] = std::move(slot.cubin);
      res.sources[i].ptxas += slot.ptxas;
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
  return true;
}

namespace {

/// `source` compiled for each arch into `out` (what: the module's name).
bool compileModule(const std::string &source, const std::string &what,
                   const std::vector<std::string> &archs,
                   std::map<std::string, std::vector<char>> &out,
                   std::string &error) {
  for (const std::string &arch : archs) {
    NvrtcOptions no;
    no.sourceName = what + ".cu";
    auto r = compileWithNvrtc(source, arch, error, no);
    if (!r) {
      error = "the " + what + " for " + arch + ": " + error;
      return false;
    }
    out[arch] = std::move(r->cubin);
  }
  return true;
}

} // namespace

bool addWeightCodecs(rt::ArtifactContents &c,
                     const std::vector<std::string> &archs,
                     std::string &error) {
  return compileModule(codegen::weightCodecSource(), "weight_codecs", archs,
                       c.codecs, error);
}

bool addCollectiveKernels(rt::ArtifactContents &c,
                          const std::vector<std::string> &archs,
                          std::string &error) {
  return compileModule(codegen::reduceChunksSource(), "collectives", archs,
                       c.collectives, error);
}

void Packager::recordBinaries(tune::Cache &c) const {
  const std::string toolkit = nvrtcVersion();
  for (size_t i = 0; i < unique.size(); ++i)
    for (const auto &[arch, bin] : cubins[i])
      c.putBinary(tune::signature(res.sources[i].source, arch, toolkit), bin);
}

} // namespace cuts::driver
