//===- Candidates.cpp - what each group's kernel is chosen from -----------===//
#include "compiler/driver/Candidates.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/SharedFusion.h"
#include "perfmodel/Roofline.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace cuts::driver {

const TileParams *predecessorOf(const GroupEstimate &e, size_t i) {
  return e.predecessor && i < e.rankedPredecessor.size()
             ? &e.rankedPredecessor[i].params
             : nullptr;
}

CandidateTable::CandidateTable(const CompileOptions &opts)
    : opts(opts), arch0(opts.archs.empty() ? "sm_90" : opts.archs.front()),
      nvrtc(nvrtcVersion()) {}

const std::vector<GroupCandidate> &
CandidateTable::of(llvm::ArrayRef<mlir::Operation *> ops,
                   const GroupEstimate &e) {
  std::vector<mlir::Operation *> key(ops.begin(), ops.end());
  auto it = memo.find(key);
  if (it != memo.end())
    return it->second;
  const int group = int(memo.size());
  std::vector<GroupCandidate> list;
  addGenerated(ops, e, group, list);
  addLibrary(ops, group, list);
  return memo.emplace(key, std::move(list)).first->second;
}

void CandidateTable::addGenerated(llvm::ArrayRef<mlir::Operation *> ops,
                                  const GroupEstimate &e, int group,
                                  std::vector<GroupCandidate> &list) const {
  // One set of each tiling before a second format of any.
  std::vector<size_t> order =
      distinctTilingsFirst(e.ranked, size_t(std::max(0, opts.tuneCandidates)));
  std::set<size_t> timed(order.begin(), order.end());
  // The prefetching variant doubles a SIMT loop's tiles and adds a
  // tensor-core loop's residual tile; the bound checked neither.
  auto add = [&](GroupKernel gk, int level) {
    // A planar input is read through a patch alone (lowerPooled's).
    if (gk.kernel.desc.planarC && !gk.kernel.patchA)
      return;
    if (opts.arch.maxSharedPerBlock > 0 &&
        codegen::launchShape(gk.kernel).sharedBytes >
            opts.arch.maxSharedPerBlock)
      return;
    tune::Candidate tc = tuneCandidate(gk.kernel, arch0, nvrtc);
    tc.group = group;
    tc.level = level;
    list.push_back({std::move(gk), std::move(tc)});
  };
  for (int l = 0; l < int(order.size()); ++l)
    for (bool second : {false, true}) {
      std::string why;
      size_t i = order[size_t(l)];
      // A set's second variant: a SIMT loop prefetching its next slice into
      // registers; for tensor cores (which pipeline already) the tiling
      // with its pipeline run another way, unless that set is timed anyway.
      const bool tensorCore = e.ranked[i].params.tensorCore();
      if (second && tensorCore) {
        std::optional<size_t> alt = pipelineAlternative(e.ranked, i);
        if (!alt || !timed.insert(*alt).second)
          continue;
        i = *alt;
      }
      const bool prefetch = second && !tensorCore;
      auto gk = lowerGroup(ops, e.ranked[i].params, "cuts_kernel", why,
                           predecessorOf(e, i));
      if (!gk || (prefetch && gk->kernel.loopExtent <= 0))
        continue;
      gk->kernel.prefetch = prefetch;
      // A tensor-core set's third: its residual prefetched at the start.
      std::optional<GroupKernel> early;
      if (!second && tensorCore && codegen::prefetchesOperand(gk->kernel)) {
        early = *gk;
        early->kernel.prefetch = true;
      }
      // Its persistent variants and shallow pipelines.
      std::vector<GroupKernel> variants;
      if (!second && tensorCore) {
        for (bool keepB : {false, true})
          if (auto v =
                  persistentVariant(ops, *gk, e.ranked[i].params, i, e, keepB))
            variants.push_back(std::move(*v));
        for (GroupKernel &v : shallowVariants(ops, e, i))
          variants.push_back(std::move(v));
        for (GroupKernel &v : splitKVariants(*gk))
          variants.push_back(std::move(v));
        if (auto v = patchVariant(ops, e, i)) {
          if (auto pv = persistentPatchVariant(*v))
            variants.push_back(std::move(*pv));
          variants.push_back(std::move(*v));
        }
      }
      add(std::move(*gk), 3 * l + second);
      if (early)
        add(std::move(*early), 3 * l + 2);
      for (GroupKernel &v : variants)
        add(std::move(v), 3 * l + 2);
    }
}

std::vector<GroupKernel>
CandidateTable::shallowVariants(llvm::ArrayRef<mlir::Operation *> ops,
                                const GroupEstimate &e, size_t i) const {
  // Where DRAM binds a tensor-core set, its block with 2 and 3 stages and
  // no producer warpgroup: less shared memory, more blocks an SM, whose
  // exits overlap the others' copies. The bound ties them with the deep
  // pipelines the ranking puts first; on an H200 they won ResNet-50's
  // memory-bound 1 x 1 convs at batch 64 (128 x 128 blocks: 18.4 us against
  // 23.2 for the deepest pipeline kept).
  const Candidate &c = e.ranked[i];
  std::vector<GroupKernel> out;
  if (!(c.bound.gmRatio < c.bound.smRatio * c.bound.wbRatio) ||
      !c.params.tensorCore())
    return out;
  for (int64_t stages : {2, 3}) {
    TileParams p = c.params;
    p.stages = stages, p.warpSpecialized = false;
    if (p.stages == c.params.stages && !c.params.warpSpecialized)
      continue;
    std::string why;
    if (auto v = lowerGroup(ops, p, "cuts_kernel", why, predecessorOf(e, i)))
      out.push_back(std::move(*v));
  }
  return out;
}

std::optional<GroupKernel>
CandidateTable::patchVariant(llvm::ArrayRef<mlir::Operation *> ops,
                             const GroupEstimate &e, size_t i) const {
  // A conv's im2col slices re-read each input pixel from L2 once for every
  // window position over it; where pixels are narrower than a copy (a
  // stem's 4 channels: two pixels a 16-byte copy, 14 re-reads of each in
  // ResNet-50's), the copies bound the loop, and a patch read once a block
  // removes them: on an H200 its pooled stem took 85.6 us patched against
  // 110. Wider pixels ran slower patched (its 3 x 3 convs 46 against 39 us
  // for layer 1's), so they keep their slices. A plain conv's blocks become
  // boxes of its pixels (a pooling of 1 x 1 windows) for the patch.
  TileParams p = e.ranked[i].params;
  if (!p.tensorCore())
    return std::nullopt;
  p.warpSpecialized = false;
  std::string why;
  auto v = lowerGroup(ops, p, "cuts_kernel", why, predecessorOf(e, i));
  if (!v || !v->kernel.desc.im2col ||
      v->kernel.desc.IC * v->kernel.desc.elementBytes >= 16)
    return std::nullopt;
  codegen::Kernel &k = v->kernel;
  if (!k.pooled) {
    const int64_t images = k.desc.N / (k.desc.OH * k.desc.OW);
    const std::vector<int64_t> y = {images, k.desc.K, k.desc.OH, k.desc.OW};
    auto boxed =
        codegen::poolsStagedTile(k)
            ? codegen::fusePooled(
                  k, describePool(y, y, {1, 1}, {{1, 1}, {0, 0, 0, 0}, {}}),
                  false, why)
            : std::nullopt;
    if (!boxed)
      return std::nullopt;
    k = std::move(*boxed);
  }
  if (!codegen::patchable(k, opts.arch.maxSharedPerBlock))
    return std::nullopt;
  k.patchA = true;
  return v;
}

namespace {
// The blocks of a kernel launched as `one` block that fit on an SM
// together, at least 1.
int64_t residentBlocks(const GpuArch &a, const codegen::LaunchShape &one,
                       const TileParams &p) {
  int64_t resident =
      std::min<int64_t>(a.maxBlocksPerSM, a.maxThreadsPerSM / one.threads);
  if (a.sharedPerSM > 0)
    resident =
        std::min<int64_t>(resident, a.sharedPerSM / (one.sharedBytes + 1024));
  if (a.regsPerSM > 0)
    resident = std::min<int64_t>(
        resident, a.regsPerSM / (one.threads * tensorCoreRegisters(p)));
  return std::max<int64_t>(1, resident);
}
} // namespace

std::optional<GroupKernel> CandidateTable::persistentVariant(
    llvm::ArrayRef<mlir::Operation *> ops, const GroupKernel &gk, TileParams p,
    size_t i, const GroupEstimate &e, bool residentB) const {
  // Where a short K leaves each tile's exit as long as its loop, and the
  // tiles are several a block: the set's persistent variant, its pipeline
  // as deep as the shared memory beside the exit's tile allows.
  const codegen::Kernel &k = gk.kernel;
  const GpuArch &a = opts.arch;
  const int64_t slices = (k.desc.C + p.Cin - 1) / p.Cin;
  const int64_t tiles = codegen::launchShape(k).blocks;
  if (!k.mma || k.mma->warpSpecialized || k.pooled ||
      slices > kPersistentSlices || a.numSM <= 0 || a.maxSharedPerBlock <= 0 ||
      tiles < 2 * a.numSM)
    return std::nullopt;
  for (int64_t stages : {4, 3, 2}) {
    p.stages = stages;
    std::string why;
    auto v = lowerGroup(ops, p, "cuts_kernel", why, predecessorOf(e, i));
    if (!v)
      continue;
    v->kernel.persistentBlocks = 1; // for its shared memory's size
    v->kernel.residentB = residentB;
    if (residentB && !codegen::keepsB(v->kernel))
      return std::nullopt;
    const codegen::LaunchShape one = codegen::launchShape(v->kernel);
    if (one.sharedBytes > a.maxSharedPerBlock)
      continue;
    v->kernel.blocksPerSM = residentBlocks(a, one, p);
    v->kernel.persistentBlocks = a.numSM * v->kernel.blocksPerSM;
    return v;
  }
  return std::nullopt;
}

std::vector<GroupKernel>
CandidateTable::splitKVariants(const GroupKernel &gk) const {
  // Where a product's tiles fill half the GPU's resident blocks or less
  // (BERT's and GPT-2's 768-wide products at batch 1: 24-96 tiles, each
  // block reading a long K alone), its K in parts, a block each: the most
  // parts whose blocks still fit at once, and about half as many.
  const GpuArch &a = opts.arch;
  std::vector<GroupKernel> out;
  const codegen::LaunchShape one = codegen::launchShape(gk.kernel);
  if (a.numSM <= 0 || !gk.kernel.mma ||
      one.sharedBytes + 16 > a.maxSharedPerBlock)
    return out;
  const int64_t fit =
      a.numSM * residentBlocks(a, one, gk.kernel.params) / one.blocks;
  int64_t last = 0;
  for (int64_t parts = std::min<int64_t>(fit, kMaxSplitK); parts >= 2;
       --parts) {
    if (!codegen::canSplitK(gk.kernel, parts) || (last && 2 * parts > last + 1))
      continue;
    GroupKernel v = gk;
    v.kernel.splitK = parts;
    out.push_back(std::move(v));
    if (last)
      break;
    last = parts;
  }
  return out;
}

std::optional<GroupKernel>
CandidateTable::persistentPatchVariant(const GroupKernel &v) const {
  // Patched blocks each copy all of B and wait for their patch before their
  // first product; persistent ones copy B once and load the next tile's
  // patch while this one computes (wgmma only: emitPersistentPatchPipeline).
  GroupKernel p = v;
  p.kernel.persistentBlocks = 1; // for its shared memory's size
  const codegen::LaunchShape one = codegen::launchShape(p.kernel);
  if (opts.arch.numSM <= 0 ||
      !codegen::patchable(p.kernel, opts.arch.maxSharedPerBlock) ||
      codegen::launchShape(v.kernel).blocks < 2 * opts.arch.numSM)
    return std::nullopt;
  p.kernel.blocksPerSM = residentBlocks(opts.arch, one, p.kernel.params);
  p.kernel.persistentBlocks = opts.arch.numSM * p.kernel.blocksPerSM;
  return p;
}

namespace {

// The bytes of a library call's args: the operands, each present optional
// one (bias, residual), the output.
std::vector<uint64_t> argBytes(std::vector<uint64_t> bytes, bool bias,
                               uint64_t biasBytes, bool residual,
                               uint64_t zBytes, uint64_t yBytes) {
  if (bias)
    bytes.push_back(biasBytes);
  if (residual)
    bytes.push_back(zBytes);
  bytes.push_back(yBytes);
  return bytes;
}

GroupCandidate libraryCandidate(const std::vector<mlir::Value> &args,
                                const char *library, const char *family,
                                std::vector<int64_t> params,
                                std::vector<uint64_t> bytes,
                                const std::string &arch, int group) {
  GroupCandidate c;
  c.kernel.args = args;
  c.kernel.family = family;
  c.tc.library = library;
  c.tc.libraryParams = std::move(params);
  c.tc.key = tune::librarySignature(c.tc.library, c.tc.libraryParams, arch);
  c.tc.name = std::string(family) +
              (c.tc.library == rt::kCublasGemm ? "_gemm" : "_conv");
  c.tc.argBytes = std::move(bytes);
  c.tc.argOutput.assign(c.tc.argBytes.size(), false);
  c.tc.argOutput.back() = true;
  c.tc.group = group; // level 0: no NVRTC, and often the fastest
  return c;
}

} // namespace

void CandidateTable::addLibrary(llvm::ArrayRef<mlir::Operation *> ops,
                                int group,
                                std::vector<GroupCandidate> &list) const {
  if (!opts.library)
    return;
  std::vector<mlir::Value> args;
  // --precision tf32 keeps fp32 tensors and lets the libraries' tensor
  // cores round the operands to tf32 (PyTorch's default for convolutions).
  auto math = [&](rt::LibraryMath m) {
    return opts.precision == "tf32" && m == rt::LibraryMath::Fp32
               ? rt::LibraryMath::Tf32
               : m;
  };
  // cuDNN's fused convolution, once per forward algorithm.
  if (auto spec = cudnnConv(ops, args))
    for (int algo : rt::CudnnConv::forwardAlgorithms()) {
      rt::ConvSpec sp = *spec;
      sp.algo = algo;
      sp.math = math(sp.math);
      std::string why;
      if (rt::checkConvSpec(sp, why))
        list.push_back(libraryCandidate(
            args, rt::kCudnnConv, "cudnn", rt::encodeConvSpec(sp),
            argBytes({sp.xBytes(), sp.wBytes()}, sp.bias, sp.biasBytes(),
                     sp.residual, sp.yBytes(), sp.yBytes()),
            arch0, group));
    }
  // cuBLASLt's product, once per algorithm its heuristic offers.
  if (auto gemm = cublasGemm(ops, args))
    for (int algo = 0; algo < rt::kMaxGemmAlgos; ++algo) {
      rt::GemmSpec sp = *gemm;
      sp.algo = algo;
      sp.math = math(sp.math);
      list.push_back(libraryCandidate(
          args, rt::kCublasGemm, "cublaslt", rt::encodeGemmSpec(sp),
          argBytes({sp.aBytes(), sp.bBytes()}, sp.bias, sp.biasBytes(),
                   sp.residual, sp.zBytes(), sp.yBytes()),
          arch0, group));
    }
}

int fastestMeasured(const std::vector<GroupCandidate> &list,
                    const tune::Cache &cache, double &us, bool generatedOnly) {
  int best = -1;
  us = INFINITY;
  for (size_t i = 0; i < list.size(); ++i)
    if (generatedOnly && !list[i].tc.library.empty())
      continue;
    else if (const tune::Cache::Entry *en = cache.find(list[i].tc.key))
      if (en->us && *en->us < us) {
        us = *en->us;
        best = int(i);
      }
  return best;
}

} // namespace cuts::driver
