//===- Fusion.cpp - the PUL of a group of fused ops -----------------------===//
#include "perfmodel/Fusion.h"

#include "perfmodel/Describe.h"

#include "cuts/Dialect/Cuts/CutsOps.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <queue>
#include <thread>

namespace cuts {
namespace {

int64_t resultElements(mlir::Operation *op) {
  return llvm::cast<mlir::ShapedType>(op->getResult(0).getType())
      .getNumElements();
}

// True if `to` is reachable from `from` through ops of the group.
bool reaches(mlir::Operation *from, mlir::Operation *to,
             const llvm::SmallPtrSetImpl<mlir::Operation *> &group) {
  llvm::SmallVector<mlir::Operation *> stack{from};
  llvm::SmallPtrSet<mlir::Operation *, 8> seen;
  while (!stack.empty()) {
    mlir::Operation *op = stack.pop_back_val();
    if (op == to)
      return true;
    if (!seen.insert(op).second)
      continue;
    for (mlir::Operation *user : op->getUsers())
      if (group.contains(user))
        stack.push_back(user);
  }
  return false;
}

// Which successors take their input tile from a predecessor block: a
// window of an NCHW tile, or whole rows.
bool windowedSuccessor(OpKind k) {
  return k == OpKind::Conv || k == OpKind::DepthwiseConv || k == OpKind::Pool;
}

// The operands of S computed in `group`, or -1 where another op reads one
// too: a hand-over between two anchors stays on chip.
int onChipOperands(mlir::Operation *S,
                   const llvm::SmallPtrSetImpl<mlir::Operation *> &group) {
  int n = 0;
  for (mlir::Value v : S->getOperands())
    if (auto *def = v.getDefiningOp(); def && group.contains(def)) {
      ++n;
      for (mlir::Operation *user : v.getUsers())
        if (user != S)
          return -1;
    }
  return n;
}

// Whether an op of `ops` after the anchor reads a tensor from outside the
// group as large as the anchor's result (a residual): the code generator
// stages it with the output tile, which a pooled kernel then cannot pool.
bool readsResidual(llvm::ArrayRef<mlir::Operation *> ops,
                   mlir::Operation *anchor,
                   const llvm::SmallPtrSetImpl<mlir::Operation *> &group) {
  auto after = llvm::find(ops, anchor);
  for (mlir::Operation *op :
       llvm::make_range(after + (after != ops.end()), ops.end()))
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation *def = v.getDefiningOp();
      auto t = llvm::dyn_cast<mlir::ShapedType>(v.getType());
      if ((!def || !group.contains(def)) && t && t.hasStaticShape() &&
          t.getNumElements() == resultElements(anchor))
        return true;
    }
  return false;
}

// g with its ranked sets best bound first, the first `keep` of them kept,
// the best its bound; nullopt where none is ranked.
std::optional<GroupEstimate> bestFirst(GroupEstimate g, size_t keep) {
  if (g.ranked.empty())
    return std::nullopt;
  std::stable_sort(g.ranked.begin(), g.ranked.end(),
                   [](const Candidate &x, const Candidate &y) {
                     return x.bound.timeLowerBound < y.bound.timeLowerBound;
                   });
  g.ranked.resize(std::min(g.ranked.size(), keep));
  g.kept = int64_t(g.ranked.size());
  g.best = g.ranked.front();
  g.time = g.best.bound.timeLowerBound;
  return g;
}

} // namespace

const SearchResult &FusionModel::searchOnChip(const OpDesc &d) {
  std::string key = d.key();
  auto it = memoOnChip.find(key);
  if (it != memoOnChip.end())
    return it->second;
  // The predecessor block a set asks for (as estimateShared derives it).
  bool windowed = windowedSuccessor(d.kind);
  auto blockKey = [&](const TileParams &q) -> BlockKey {
    if (windowed)
      return {q.Nb, d.kind == OpKind::Conv ? 0 : q.Kb, q.Hb, q.Wb, q.threads()};
    return {q.Nb, 0, 0, 0, q.threads()};
  };
  SearchResult r;
  r.kept = bestPerBlockKey(d, arch, InputFrom::SharedMemory, blockKey,
                           &r.enumerated);
  return memoOnChip.emplace(key, std::move(r)).first->second;
}

std::optional<GroupEstimate>
FusionModel::estimateShared(llvm::ArrayRef<mlir::Operation *> ops,
                            llvm::ArrayRef<mlir::Operation *> real,
                            llvm::ArrayRef<OpDesc> descs, int pred, int succ) {
  mlir::Operation *P = real[pred], *S = real[succ];
  const OpDesc &dp = descs[pred], &ds = descs[succ];
  llvm::SmallPtrSet<mlir::Operation *, 8> group(ops.begin(), ops.end());
  // A chain: S reads P's result (through register-fused elementwise ops and
  // views), every other op of the group follows P, and S has no other
  // operand computed in the group.
  if (!reaches(P, S, group))
    return std::nullopt;
  if (onChipOperands(S, group) != 1)
    return std::nullopt;
  for (mlir::Operation *op : real)
    if (op != P && !reaches(P, op, group))
      return std::nullopt; // a prologue of P: not modelled
  // Which successors can take their input tile from a predecessor block.
  bool windowed = windowedSuccessor(ds.kind);
  bool rows = ds.kind == OpKind::MatMul || ds.kind == OpKind::Reduction;
  bool predNCHW = dp.kind == OpKind::Conv || dp.kind == OpKind::DepthwiseConv ||
                  dp.kind == OpKind::Pool || dp.kind == OpKind::BatchNorm;
  if (!(windowed && predNCHW) && !(rows && dp.kind == OpKind::MatMul))
    return std::nullopt;
  if (ds.kind == OpKind::Conv && ds.batch != 1)
    return std::nullopt; // grouped successors read channel slices
  if (ds.im2col || dp.im2col || ds.channelsLast || dp.channelsLast)
    return std::nullopt; // implicit GEMMs fetch through their windows
  if (dp.elementBytes != 4)
    return std::nullopt; // fp32 tiles; 16-bit ones chain (estimateChain)

  const SearchResult &sr = searchOnChip(ds);
  GroupEstimate g;
  g.fusion = "shared";
  g.anchor = S;
  g.anchorDesc = ds;
  g.predecessor = P;
  g.predecessorDesc = dp;
  g.enumerated = sr.enumerated;
  // The predecessor's block for a successor set: its input tile.
  auto blockFor = [&](const TileParams &q) {
    TileParams block;
    if (windowed) {
      block.Nb = q.Nb;
      block.Kb = ds.kind == OpKind::Conv ? dp.K : q.Kb; // C_input = C
      // All of the tile, also where it overhangs the image (those
      // positions hold the padding): the block computes what the
      // successor's fetch would read.
      block.Hb = (q.Hb - 1) * ds.SH + (ds.FH - 1) * ds.DH + 1;
      block.Wb = (q.Wb - 1) * ds.SW + (ds.FW - 1) * ds.DW + 1;
    } else {
      block.Nb = q.Nb;
      block.Kb = dp.K; // whole rows
    }
    return block;
  };
  // Branch and bound over the successor's sets (one per block): a pair
  // takes at least the successor's time plus the predecessor's block work
  // on the successor's grid at PUL = GMRatio x WBRatio (both fixed by the
  // block and the grid; SMRatio and the rounds' efficiency are <= 1), so
  // sets are fused in the order of that bound until it cannot enter the
  // best k pairs (the top T % of the blocks, at least K).
  struct Item {
    double lowerBound;
    const Candidate *c;
    TileParams block;
  };
  std::vector<Item> items;
  const int trans = std::max(1, arch.transGlobalElements(dp.elementBytes));
  for (const Candidate &c : sr.kept) {
    TileParams block = blockFor(c.params);
    if ((windowed && block.Kb > dp.K) || block.Nb > dp.N ||
        c.bound.wbRatio <= 0)
      continue;
    // Its GMRatio is the block's own (its loads come from global memory).
    double comp = compBlock(dp, block);
    double predPulMax =
        gmRatio(oiTB(dp, comp, numTrans(dp, block, trans), trans),
                arch.ridgePoint()) *
        c.bound.wbRatio;
    items.push_back(
        {comp * double(c.bound.numBlocks) / (predPulMax * arch.perfPeakFp32) +
             c.bound.timeLowerBound,
         &c, block});
  }
  std::stable_sort(
      items.begin(), items.end(),
      [](const Item &a, const Item &b) { return a.lowerBound < b.lowerBound; });
  const size_t k = size_t(keepCount(int64_t(items.size()), prune));
  std::priority_queue<double> worstKept; // the k best pair times so far
  for (const Item &item : items) {
    if (worstKept.size() == k && item.lowerBound >= worstKept.top())
      break;
    const Candidate &c = *item.c;
    const TileParams &q = c.params;
    const TileParams &block = item.block;
    std::string key =
        dp.key() + "|" + std::to_string(block.Nb) + "," +
        std::to_string(block.Kb) + "," + std::to_string(block.Hb) + "," +
        std::to_string(block.Wb) + "/" + std::to_string(q.threads());
    auto it = memoBlock.find(key);
    if (it == memoBlock.end())
      it = memoBlock.emplace(key, bestForBlock(dp, arch, block, q.threads()))
               .first;
    if (!it->second || it->second->bound.pul <= 0)
      continue;
    const Candidate &pc = *it->second;
    // One kernel holds both phases' shared memory.
    if (pc.bound.sharedBytes + c.bound.sharedBytes > arch.maxSharedPerBlock)
      continue;
    // The predecessor runs on the successor's grid, halos included.
    double predWork = pc.bound.compBlock * double(c.bound.numBlocks);
    double predPul = pc.bound.pul * c.bound.wbRatio;
    double t =
        predWork / (predPul * arch.perfPeakFp32) + c.bound.timeLowerBound;
    Candidate fused = c;
    fused.bound.timeLowerBound = t;
    g.ranked.push_back(fused);
    g.rankedPredecessor.push_back(pc);
    worstKept.push(t);
    if (worstKept.size() > k)
      worstKept.pop();
  }
  if (g.ranked.empty())
    return std::nullopt;
  // Best first, the predecessors kept alongside.
  std::vector<size_t> order(g.ranked.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return g.ranked[x].bound.timeLowerBound < g.ranked[y].bound.timeLowerBound;
  });
  std::vector<Candidate> ranked, preds;
  for (size_t i : order) {
    ranked.push_back(g.ranked[i]);
    preds.push_back(g.rankedPredecessor[i]);
  }
  // The best k pairs.
  ranked.resize(std::min(ranked.size(), k));
  preds.resize(ranked.size());
  g.ranked = std::move(ranked);
  g.rankedPredecessor = std::move(preds);
  g.kept = int64_t(g.ranked.size());
  g.best = g.ranked.front();
  g.predecessorBest = g.rankedPredecessor.front();
  g.time = g.best.bound.timeLowerBound;
  return g;
}

const SearchResult &FusionModel::search(const OpDesc &d) {
  std::string key = d.key();
  auto it = memo.find(key);
  if (it != memo.end())
    return it->second;
  return memo.emplace(key, searchParams(d, arch, prune)).first->second;
}

void FusionModel::searchAll(const std::vector<OpDesc> &ops, int jobs) {
  std::vector<std::pair<std::string, const OpDesc *>> todo;
  for (const OpDesc &d : ops) {
    std::string key = d.key();
    if (!memo.count(key) &&
        std::none_of(todo.begin(), todo.end(),
                     [&](const auto &t) { return t.first == key; }))
      todo.push_back({key, &d});
  }
  std::vector<SearchResult> results(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < todo.size();)
      results[i] = searchParams(*todo[i].second, arch, prune);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(jobs, int(todo.size())); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  for (size_t i = 0; i < todo.size(); ++i)
    memo.emplace(todo[i].first, std::move(results[i]));
}

std::optional<GroupEstimate>
FusionModel::estimateChain(llvm::ArrayRef<mlir::Operation *> ops,
                           llvm::ArrayRef<mlir::Operation *> real,
                           llvm::ArrayRef<OpDesc> descs, int pred, int succ) {
  mlir::Operation *P = real[pred], *S = real[succ];
  const OpDesc &dp = descs[pred], &ds = descs[succ];
  llvm::SmallPtrSet<mlir::Operation *, 8> group(ops.begin(), ops.end());
  // The second reads the first's output pixel by pixel (a 1 x 1 conv) or
  // row by row, its B N x K (a conv's or Linear layer's weight).
  const bool pointwise =
      !ds.im2col || (ds.FH == 1 && ds.FW == 1 && ds.SH == 1 && ds.SW == 1 &&
                     ds.PH == 0 && ds.PW == 0 && !ds.IC2);
  if (dp.kind != OpKind::MatMul || ds.kind != OpKind::MatMul || dp.batch != 1 ||
      ds.batch != 1 || dp.elementBytes != 2 || ds.elementBytes != 2 ||
      ds.N != dp.N || ds.C != dp.K || !pointwise || !ds.transB || ds.transA ||
      !reaches(P, S, group))
    return std::nullopt;
  // The first product's group (S and what follows it are the chain's),
  // ranked over every tensor-core set whose blocks span its columns, on a
  // multistage loop (the anchor's pruning keeps few of those), whose staged
  // tile the chained product reads.
  std::vector<TileParams> spanning;
  forEachTensorCoreParams(dp, arch, [&](const TileParams &q) {
    if (q.Kb == dp.K && !q.warpSpecialized && q.Nb % 16 == 0)
      spanning.push_back(q);
  });
  const size_t split = size_t(llvm::find(ops, S) - ops.begin());
  std::optional<GroupEstimate> first =
      estimateKernel(ops.take_front(split), &spanning);
  if (!first || first->anchor != P)
    return std::nullopt;
  // After each block's exit, the chained product: its products on
  // mma.sync, its output's stores (its A never leaves the chip) and its
  // warps' ldmatrix reads of the staged tile and of B, at their rooflines.
  // Added whole: on an H200 the chained kernels ran latency-bound (12-18 %
  // occupancy) and their chained part overlapped nothing.
  const double peak =
      arch.perfPeakMmaSync > 0 ? arch.perfPeakMmaSync : arch.perfPeakFp16;
  const double sharedBandwidth =
      double(arch.numSM) * arch.sharedBanks * 4 * arch.clockGHz * 1e9;
  auto chained = [&](const TileParams &q) {
    const int64_t warps = q.threads() / 32, tiles = (ds.N + q.Nb - 1) / q.Nb;
    const int64_t warpsM = std::max<int64_t>(1, std::min(warps, q.Nb / 16));
    const double reads =
        double(tiles) * double(warpsM * ds.K + q.Nb) * ds.C * ds.elementBytes;
    double t = std::max(2.0 * double(ds.N) * double(ds.C) * double(ds.K) / peak,
                        double(ds.N * ds.K) * ds.elementBytes / arch.bwGlobal);
    return sharedBandwidth > 0 ? std::max(t, reads / sharedBandwidth) : t;
  };
  GroupEstimate g = *first;
  g.fusion = "chain";
  g.ranked.clear();
  g.time = INFINITY;
  // The chain's accumulators, and its B and (at most) the staged tile
  // beside the first product's tiles, must fit.
  const int64_t cols = (ds.K + 15) / 16 * 16;
  for (Candidate c : first->ranked) {
    const TileParams &q = c.params;
    if (!std::isfinite(c.bound.timeLowerBound) ||
        (arch.maxRegsPerThread > 0 &&
         tensorCoreRegisters(q) > arch.maxRegsPerThread))
      continue;
    const int64_t shared = tensorCoreSharedBytes(dp, q) +
                           (cols + q.Nb) * (ds.C + 8) * ds.elementBytes;
    if (q.Nb * cols / q.threads() > kChainAccumulators ||
        (arch.maxSharedPerBlock > 0 && shared > arch.maxSharedPerBlock))
      continue;
    c.bound.timeLowerBound += chained(q);
    g.ranked.push_back(c);
  }
  const size_t keep = g.ranked.size();
  return bestFirst(std::move(g), keep);
}

std::optional<GroupEstimate>
FusionModel::estimatePooled(llvm::ArrayRef<mlir::Operation *> ops,
                            llvm::ArrayRef<mlir::Operation *> real,
                            llvm::ArrayRef<OpDesc> descs, int pred, int succ) {
  mlir::Operation *P = real[pred], *S = real[succ];
  const OpDesc &dp = descs[pred], &ds = descs[succ];
  llvm::SmallPtrSet<mlir::Operation *, 8> group(ops.begin(), ops.end());
  const bool average = llvm::isa<AveragePoolOp>(S);
  if (!dp.im2col || dp.IC2 || dp.elementBytes != 2 ||
      !(llvm::isa<MaxPoolOp>(S) || average) ||
      (average && !poolWindowsInside(ds)) || !ds.channelsLast ||
      ds.IH != dp.OH || ds.IW != dp.OW || !reaches(P, S, group) ||
      S != ops.back())
    return std::nullopt;
  if (onChipOperands(S, group) != 1)
    return std::nullopt; // the pooling alone reads the conv's result
  const size_t split = size_t(llvm::find(ops, S) - ops.begin());
  if (readsResidual(ops.take_front(split), P, group))
    return std::nullopt;
  // The conv's group, ranked over every tensor-core set whose staged tile
  // (rows padded by 16 bytes) lies in its stages and whose blocks hold a
  // pooled window: the rows a box recomputes change which sets are best.
  std::vector<TileParams> sets;
  forEachTensorCoreParams(dp, arch, [&](const TileParams &q) {
    if (poolBox(ds, q.Nb) &&
        q.Nb * (q.Kb + 8) * dp.elementBytes <= tensorCoreSharedBytes(dp, q))
      sets.push_back(q);
  });
  std::optional<GroupEstimate> first =
      estimateKernel(ops.take_front(split), &sets);
  if (!first || first->anchor != P)
    return std::nullopt;
  // Each set's blocks compute boxes of conv pixels, halos included
  // (poolBox): its bound scaled by the rows it then computes. The conv
  // output's stores it saves are not taken off, so the bound stays above
  // what the kernel can reach; pooling from shared memory is a few
  // loads a pixel.
  GroupEstimate g = *first;
  g.fusion = "pooled";
  g.ranked.clear();
  g.time = INFINITY;
  const int64_t images = dp.N / (dp.OH * dp.OW);
  for (Candidate c : first->ranked) {
    if (!std::isfinite(c.bound.timeLowerBound))
      continue;
    const PoolBox box = *poolBox(ds, c.params.Nb); // `sets` have one
    c.bound.timeLowerBound *=
        double(box.gemmRows(images, c.params.Nb)) / double(dp.N);
    g.ranked.push_back(c);
  }
  const size_t keep = size_t(keepCount(int64_t(g.ranked.size()), prune));
  return bestFirst(std::move(g), keep);
}

std::optional<GroupEstimate>
FusionModel::estimate(llvm::ArrayRef<mlir::Operation *> ops) {
  std::optional<GroupEstimate> g = estimateKernel(ops);
  // Each kernel takes at least the launch time of a graph node, even when
  // it does nothing (measured: launchSeconds); fusing two kernels saves
  // one. Views launch nothing.
  if (g && g->fusion != "view" && std::isfinite(g->time))
    g->time += arch.launchSeconds;
  return g;
}

std::optional<GroupEstimate>
FusionModel::estimateKernel(llvm::ArrayRef<mlir::Operation *> ops,
                            const std::vector<TileParams> *only) {
  llvm::SmallVector<mlir::Operation *> real;
  llvm::SmallVector<OpDesc> descs;
  for (mlir::Operation *op : ops)
    if (auto d = describeOp(op)) {
      real.push_back(op);
      descs.push_back(*d);
    }
  GroupEstimate g;
  if (real.empty()) {
    g.fusion = "view";
    g.time = 0;
    return g;
  }
  if (real.size() > 1 && !allowFusion)
    return std::nullopt;

  // The anchor: the one complex op, else the one op needing neighbours
  // (depthwise conv, pooling, normalisation, reductions), else the first
  // op of the largest result (a pad's, not its input's). A second complex
  // or neighbour op would need shared-memory-level fusion.
  int anchor = 0, complexOps = 0, neighbourOps = 0;
  for (size_t i = 0; i < real.size(); ++i) {
    if (resultElements(real[i]) > resultElements(real[anchor]) &&
        complexOps + neighbourOps == 0)
      anchor = int(i);
    if (isComplex(descs[i].kind)) {
      ++complexOps;
      anchor = int(i);
    } else if (descs[i].kind != OpKind::Elementwise) {
      ++neighbourOps;
      if (complexOps == 0)
        anchor = int(i);
    }
  }
  if (complexOps + neighbourOps > 2)
    return std::nullopt;
  if (complexOps + neighbourOps == 2) {
    int first = -1, second = -1;
    for (size_t i = 0; i < real.size(); ++i)
      if (descs[i].kind != OpKind::Elementwise)
        (first < 0 ? first : second) = int(i);
    if (auto shared = estimateShared(ops, real, descs, first, second))
      return shared;
    if (auto pooled = estimatePooled(ops, real, descs, first, second))
      return pooled;
    return estimateChain(ops, real, descs, first, second);
  }

  llvm::SmallPtrSet<mlir::Operation *, 8> group(real.begin(), real.end());
  for (mlir::Operation *op : ops)
    group.insert(op); // views take part in the data flow
  mlir::Operation *a = real[anchor];
  int64_t anchorOut = resultElements(a);

  // Register-level rules: epilogue ops (downstream of the anchor) compute
  // per output element, so they must not be larger than the anchor's
  // output; prologue ops transform the anchor's inputs on load, which only
  // works for ops that read their inputs (not for reductions of theirs).
  struct Fused {
    OpDesc d;
    int extern_;
    bool prologue;
  };
  llvm::SmallVector<Fused> fused;
  for (size_t i = 0; i < real.size(); ++i) {
    if (int(i) == anchor)
      continue;
    bool prologue = reaches(real[i], a, group);
    if (!prologue && resultElements(real[i]) > anchorOut)
      return std::nullopt;
    if (prologue && descs[anchor].kind == OpKind::Reduction)
      return std::nullopt;
    fused.push_back({descs[i], externalInputs(real[i], group), prologue});
  }

  const SearchResult &sr = search(descs[anchor]);
  g.anchor = a;
  g.anchorDesc = descs[anchor];
  g.enumerated = sr.enumerated;
  g.kept = int64_t(sr.kept.size());
  g.fusion = fused.empty() ? "none" : "register";
  if (sr.kept.empty()) {
    g.time = INFINITY;
    return g;
  }
  int T = std::max(1, arch.transGlobalElements(descs[anchor].elementBytes));
  g.time = INFINITY;
  // Re-rank the anchor's kept sets with the fused ops added (the fused ops
  // change COMP and NUM_trans little next to the anchor's, so the best fused
  // set is taken to be among the anchor's top T %).
  // A tensor-core main loop copies its operands into shared memory as
  // they are (cp.async): it applies no prologue, but reads a row-moving
  // transpose's input in place, which only it does.
  bool prologue = false, inPlace = true;
  for (size_t i = 0; i < real.size(); ++i)
    if (int(i) != anchor && reaches(real[i], a, group)) {
      prologue = true;
      inPlace = inPlace && readInPlace(real[i], a);
    }
  // A stem's planar input is read through a pooled kernel's patch on wgmma,
  // no warpgroup a producer: only the pooled and chained estimates pass
  // sets, and a chain's planar kernels are never built (lowerChained).
  const bool planar = prologue && inPlace && planarInput(a).has_value();
  if (planar && !only)
    return std::nullopt;
  std::vector<Candidate> given;
  if (only)
    for (const TileParams &q : *only)
      given.push_back({q, evaluateBound(descs[anchor], q, arch)});
  for (const Candidate &c : only ? given : sr.kept) {
    if ((prologue && c.params.tensorCore() != inPlace) ||
        (planar &&
         (c.params.instr != MatrixInstr::Wgmma || c.params.warpSpecialized)))
      continue;
    FusedExtra extra;
    double blocks =
        double(std::max<int64_t>(numBlocks(descs[anchor], c.params), 1));
    double threads = double(std::max<int64_t>(c.params.threads(), 1));
    for (const Fused &f : fused) {
      double total = f.d.totalComp();
      extra.compTotal += total;
      extra.compBlock += total / blocks;
      extra.compThread += total / (blocks * threads);
      // Operands from outside the group: one more full-size tensor each
      // (beyond the one a prologue op replaces the anchor's input with).
      int reads = f.prologue ? std::max(0, f.extern_ - 1) : f.extern_;
      double elemsPerBlock = double(resultElements(a)) / blocks;
      extra.numTrans += reads * std::ceil(elemsPerBlock / T);
      extra.elements += reads * double(resultElements(a));
      extra.nLoad += reads * elemsPerBlock / threads;
    }
    Bound b = evaluateBound(descs[anchor], c.params, arch, -1, &extra,
                            c.bound.coefBc);
    g.ranked.push_back({c.params, b});
    if (b.timeLowerBound < g.time) {
      g.time = b.timeLowerBound;
      g.best = {c.params, b};
    }
  }
  std::stable_sort(g.ranked.begin(), g.ranked.end(),
                   [](const Candidate &x, const Candidate &y) {
                     return x.bound.timeLowerBound < y.bound.timeLowerBound;
                   });
  return g;
}

} // namespace cuts
