//===- Explain.cpp - partition a cuts graph and report why ----------------===//
#include "perfmodel/Explain.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

namespace cuts {
namespace {

std::string nodeName(mlir::Operation *op) {
  if (auto n = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    return n.getName().str();
  return "";
}

std::string fmt(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

} // namespace

std::optional<ExplainReport> explainFunction(mlir::func::FuncOp func,
                                             const GpuArch &arch,
                                             const ExplainOptions &opts,
                                             std::string &error) {
  auto start = std::chrono::steady_clock::now();
  ExplainReport r;
  r.arch = arch.name;
  r.options = opts;

  // Nodes: every op but constants and the return, in program order (a
  // topological order); edges: def-use between them.
  std::vector<mlir::Operation *> nodes;
  llvm::DenseMap<mlir::Operation *, int> index;
  for (mlir::Operation &op : func.getBody().front()) {
    if (llvm::isa<ConstantOp, mlir::func::ReturnOp>(op))
      continue;
    if (op.getDialect() == nullptr ||
        op.getDialect()->getNamespace() != "cuts") {
      error = "op " + op.getName().getStringRef().str() + " is not a cuts op";
      return std::nullopt;
    }
    index[&op] = int(nodes.size());
    nodes.push_back(&op);
  }
  PartitionGraph graph;
  graph.numNodes = int(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (mlir::Value v : nodes[i]->getOperands())
      if (auto *def = v.getDefiningOp()) {
        auto it = index.find(def);
        if (it != index.end())
          graph.edges.push_back({it->second, int(i)});
      }
  r.numOps = graph.numNodes;

  std::optional<FusionModel> own;
  if (!opts.model)
    own.emplace(arch, opts.prune, opts.fusion);
  FusionModel &model = opts.model ? *opts.model : *own;
  // Every op's own parameter search, in parallel: the bulk of the work.
  std::vector<OpDesc> descs;
  for (mlir::Operation *op : nodes)
    if (auto d = describeOp(op))
      descs.push_back(*d);
  model.searchAll(descs,
                  opts.jobs > 0
                      ? opts.jobs
                      : int(std::max(1u, std::thread::hardware_concurrency())));
  std::map<NodeSet, GroupEstimate> estimates;
  SubsetCost cost = [&](const NodeSet &s) -> std::optional<double> {
    std::vector<mlir::Operation *> ops;
    for (int n : s)
      ops.push_back(nodes[n]);
    if (ops.size() > 1 && opts.canFuse && !opts.canFuse(ops))
      return std::nullopt;
    auto e = model.estimate(ops);
    if (!e)
      return std::nullopt;
    estimates[s] = *e;
    if (opts.cost && e->fusion != "view")
      return opts.cost(ops, *e);
    return e->time;
  };
  auto result = partitionGraph(graph, cost, opts.partition);
  if (!result) {
    error = "the partition search found an op without a cost";
    return std::nullopt;
  }
  r.evaluations = result->evaluations;
  r.candidateSubsets = result->subsetsKept;
  r.truncated = result->truncated;
  for (const NodeSet &s : result->groups) {
    GroupReport g;
    for (int n : s) {
      g.ops.push_back(nodes[n]->getName().getStringRef().str());
      g.names.push_back(nodeName(nodes[n]));
      g.operations.push_back(nodes[n]);
    }
    g.estimate = estimates.at(s);
    g.cost = opts.cost && g.estimate.fusion != "view"
                 ? opts.cost(g.operations, g.estimate)
                 : g.estimate.time;
    r.totalTime += g.estimate.time;
    r.groups.push_back(std::move(g));
  }
  r.searchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return r;
}

std::string explainTable(const ExplainReport &r) {
  std::ostringstream os;
  os << "target " << r.arch << ", top " << r.options.prune.topPercent
     << " % (at least " << r.options.prune.minKeep << ", at most "
     << r.options.prune.maxKeep << ") of parameter sets"
     << (r.options.fusion ? "" : ", no fusion") << ", tensors in "
     << (r.options.precision == "tf32"   ? "fp32, products in tf32"
         : r.options.precision == "fp32" ? "the model's types"
                                         : r.options.precision)
     << " (kernels compute in fp32); PUL of the FP32 peak, or of the "
        "tensor-core peak where marked [tc]\n";
  os << "  #  fusion    enum     kept   PUL     GM     SM     WB     COEF_r  "
        "t_lb(us)  ops\n";
  int k = 0;
  for (const GroupReport &g : r.groups) {
    const GroupEstimate &e = g.estimate;
    const Bound &b = e.best.bound;
    std::string ops;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      std::string op = g.ops[i].substr(g.ops[i].find('.') + 1);
      ops += (i ? " + " : "") + op;
      if (!g.names[i].empty())
        ops += "(" + g.names[i] + ")";
    }
    char line[256];
    if (e.fusion == "view")
      std::snprintf(line, sizeof line,
                    "%3d  %-8s  %-7s  %-6s %-6s  %-6s %-6s %-6s %-7s %9s  ",
                    k++, "view", "-", "-", "-", "-", "-", "-", "-", "0");
    else
      std::snprintf(line, sizeof line,
                    "%3d  %-8s  %-7lld  %-6lld %.4f  %.4f %.4f %.4f %-7.0f "
                    "%9.2f  ",
                    k++, e.fusion.c_str(), (long long)e.enumerated,
                    (long long)e.kept, b.pul, b.gmRatio, b.smRatio, b.wbRatio,
                    b.coefR, e.time * 1e6);
    if (e.fusion != "view" && e.best.params.tensorCore())
      ops += e.best.params.instr == MatrixInstr::Wgmma ? " [tc: wgmma]"
                                                       : " [tc: mma.sync]";
    os << line << ops << "\n";
  }
  size_t kernels = 0;
  for (const GroupReport &g : r.groups)
    kernels += g.estimate.fusion != "view";
  os << "total: " << kernels << " kernels for " << r.numOps
     << " ops, predicted lower bound " << fmt("%.2f", r.totalTime * 1e6)
     << " us; " << r.evaluations << " subsets evaluated, " << r.candidateSubsets
     << " kept" << (r.truncated ? " (truncated)" : "") << "; search "
     << fmt("%.3f", r.searchSeconds) << " s\n";
  return os.str();
}

std::string explainJson(const ExplainReport &r) {
  using nlohmann::json;
  json groups = json::array();
  for (const GroupReport &g : r.groups) {
    const GroupEstimate &e = g.estimate;
    json ops = json::array();
    for (size_t i = 0; i < g.ops.size(); ++i)
      ops.push_back({{"op", g.ops[i]}, {"name", g.names[i]}});
    json entry = {{"ops", ops},
                  {"fusion", e.fusion},
                  {"enumerated", e.enumerated},
                  {"kept", e.kept},
                  {"timeLowerBoundUs", e.time * 1e6}};
    auto paramsJson = [](const TileParams &p) {
      json j{{"Nb", p.Nb},      {"Kb", p.Kb},
             {"Hb", p.Hb},      {"Wb", p.Wb},
             {"Nt", p.Nt},      {"Kt", p.Kt},
             {"Ht", p.Ht},      {"Wt", p.Wt},
             {"Cinput", p.Cin}, {"formatShared", formatName(p.format)}};
      if (p.tensorCore()) {
        j["instr"] = p.instr == MatrixInstr::Wgmma ? "wgmma" : "mma.sync";
        j["warpsM"] = p.warpsM, j["warpsN"] = p.warpsN;
        j["stages"] = p.stages;
        j["warpSpecialized"] = p.warpSpecialized;
      }
      return j;
    };
    if (e.predecessor) {
      const Bound &b = e.predecessorBest.bound;
      entry["predecessor"] = {{"anchor", opKindName(e.predecessorDesc.kind)},
                              {"pul", b.pul},
                              {"gmRatio", b.gmRatio},
                              {"smRatio", b.smRatio},
                              {"roundEfficiency", b.wbRatio},
                              {"sharedBytes", b.sharedBytes},
                              {"params", paramsJson(e.predecessorBest.params)}};
    }
    if (e.fusion != "view") {
      const TileParams &p = e.best.params;
      const Bound &b = e.best.bound;
      entry["anchor"] = opKindName(e.anchorDesc.kind);
      entry["best"] = {{"pul", b.pul},
                       {"gmRatio", b.gmRatio},
                       {"smRatio", b.smRatio},
                       {"wbRatio", b.wbRatio},
                       {"coefR", b.coefR},
                       {"latRatio", b.latRatio},
                       {"peak", b.peak},
                       {"coefBc", b.coefBc},
                       {"oiTB", b.oiTB},
                       {"blocks", b.numBlocks},
                       {"threads", p.threads()},
                       {"blocksPerSM", b.blocksPerSM},
                       {"sharedBytes", b.sharedBytes},
                       {"params", paramsJson(p)}};
    }
    groups.push_back(entry);
  }
  json out = {{"arch", r.arch},
              {"topPercent", r.options.prune.topPercent},
              {"minKeep", r.options.prune.minKeep},
              {"maxKeep", r.options.prune.maxKeep},
              {"fusion", r.options.fusion},
              {"precision", r.options.precision},
              {"groups", groups},
              {"totals",
               {{"kernels", std::count_if(r.groups.begin(), r.groups.end(),
                                          [](const GroupReport &g) {
                                            return g.estimate.fusion != "view";
                                          })},
                {"ops", r.numOps},
                {"timeLowerBoundUs", r.totalTime * 1e6},
                {"subsetsEvaluated", r.evaluations},
                {"candidateSubsets", r.candidateSubsets},
                {"truncated", r.truncated},
                {"searchSeconds", r.searchSeconds}}}};
  return out.dump(1) + "\n";
}

} // namespace cuts

namespace cuts {
namespace {

// The values of `ops` that something outside them reads.
llvm::SmallVector<mlir::Value>
escaping(llvm::ArrayRef<mlir::Operation *> ops,
         const llvm::SmallPtrSetImpl<mlir::Operation *> &inside) {
  llvm::SmallVector<mlir::Value> out;
  for (mlir::Operation *op : ops)
    for (mlir::Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](mlir::Operation *u) { return !inside.contains(u); }))
        out.push_back(r);
  return out;
}

} // namespace

bool groupRegions(const ExplainReport &r, std::string &error) {
  for (const GroupReport &g : r.groups) {
    llvm::SmallPtrSet<mlir::Operation *, 8> inside(g.operations.begin(),
                                                   g.operations.end());
    llvm::SmallVector<mlir::Value> results = escaping(g.operations, inside);
    // The group op stands where its last op stood: every value its ops read
    // is defined before that, and everything that reads its results comes
    // after (a group is convex).
    mlir::Operation *last = g.operations.back();
    for (mlir::Value v : results)
      for (mlir::Operation *u : v.getUsers())
        if (!inside.contains(u) && u->isBeforeInBlock(last)) {
          error =
              "a group is not convex: " + u->getName().getStringRef().str() +
              " reads its result before its last op";
          return false;
        }
    mlir::OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    const GroupEstimate &e = g.estimate;
    bool view = e.fusion == "view";
    llvm::SmallVector<mlir::Type> types;
    for (mlir::Value v : results)
      types.push_back(v.getType());
    auto group = b.create<GroupOp>(
        last->getLoc(), types, b.getStringAttr(e.fusion),
        view ? nullptr : b.getStringAttr(opKindName(e.anchorDesc.kind)),
        view ? nullptr : b.getStringAttr(paramsText(e.best.params)),
        b.getF64FloatAttr(e.best.bound.pul), b.getF64FloatAttr(e.time * 1e6),
        b.getI64IntegerAttr(e.kept), b.getI64IntegerAttr(e.enumerated));
    mlir::Block *body = b.createBlock(&group.getBody());
    for (mlir::Operation *op : g.operations)
      op->moveBefore(body, body->end());
    b.setInsertionPointToEnd(body);
    b.create<YieldOp>(last->getLoc(), results);
    for (size_t i = 0; i < results.size(); ++i)
      results[i].replaceUsesWithIf(group.getResult(i), [&](mlir::OpOperand &u) {
        return !group->isAncestor(u.getOwner());
      });
  }
  return true;
}

} // namespace cuts
