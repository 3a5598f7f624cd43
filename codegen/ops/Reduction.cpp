//===- Reduction.cpp - row reductions: softmax, layer norm, reduce --------===//
//
// The DFG of a row is its passes written out: softmax takes the max, then
// the sum of exp(x - max), then divides; layer normalisation the mean, the
// variance, then scales. A later pass re-reads the row from shared memory
// rather than keeping it in registers: its loads take the previous pass's
// result as a predecessor, so they are not merged with the first pass's
// (thesis Fig. 3.3 merges only loads without predecessors) and are emitted
// after it.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Reduction.h"

#include <algorithm>
#include <cmath>

namespace cuts::codegen {

namespace {

const char *rowOpName(RowOp op) {
  static const char *names[] = {"softmax", "layer norm", "reduce sum",
                                "reduce mean", "reduce max"};
  return names[int(op)];
}

/// Row i of a block's rows over G lanes, as DFG: a lane's elements t at
/// at(t) (plus l V for lane l), per of them, runs of V.
struct LaneRow {
  dfg::Graph &g;
  int64_t L, G, V, per;
  int x, y, scale, bias; // buffers (scale and bias -1 unless layer norm)

  int64_t at(int64_t t) const { return t / V * G * V + t % V; }
  bool ragged() const { return per * G != L; }
  void store(int64_t i, std::vector<int64_t> index, int v) {
    dfg::Node st(dfg::Op::Store, {v});
    st.buffer = y;
    st.index = std::move(index);
    st.out = {i, 0, 0, 0}; // all of them thread 0's
    g.add(st);
  }
  // e for element t, or `identity` where some lane's t (read by `load`) is
  // past the row.
  int masked(int e, int load, int64_t t, double identity) {
    if (!ragged() || at(t) + (G - 1) * V < L)
      return e;
    return g.op(dfg::Op::Where,
                {g.op(dfg::Op::InBounds, {load}), e, g.constant(identity)});
  }
  int fold(dfg::Op op, const std::vector<int> &v) {
    int acc = v[0];
    for (int64_t t = 1; t < per; ++t)
      acc = g.op(op, {acc, v[t]});
    return acc;
  }
  int lanes(dfg::Op op, int partial) { return g.op(op, {partial}, double(G)); }
  void build(int64_t i, const RowSpec &s);
};

void LaneRow::build(int64_t i, const RowSpec &s) {
  std::vector<int> x0, v; // this lane's elements of row i (0 past its end)
  for (int64_t t = 0; t < per; ++t)
    x0.push_back(g.load(x, {i, at(t)}));
  v = x0;
  switch (s.op) {
  case RowOp::ReduceSum:
  case RowOp::ReduceMean:
  case RowOp::ReduceMax: {
    bool max = s.op == RowOp::ReduceMax;
    if (max)
      for (int64_t t = 0; t < per; ++t)
        v[t] = masked(v[t], x0[t], t, -INFINITY);
    int r = lanes(max ? dfg::Op::LaneMax : dfg::Op::LaneSum,
                  fold(max ? dfg::Op::Max : dfg::Op::Add, v));
    if (s.op == RowOp::ReduceMean)
      r = g.op(dfg::Op::Div, {r, g.constant(double(L))});
    return store(i, {i}, r); // every lane writes the same value
  }
  case RowOp::Softmax: {
    for (int64_t t = 0; t < per; ++t) // exp(-inf - m) is 0: no mass
      v[t] = masked(v[t], x0[t], t, -INFINITY);
    int m = lanes(dfg::Op::LaneMax, fold(dfg::Op::Max, v));
    std::vector<int> e;
    for (int t : v)
      e.push_back(g.op(dfg::Op::Exp, {g.op(dfg::Op::Sub, {t, m})}));
    int inv =
        g.op(dfg::Op::Recip, {lanes(dfg::Op::LaneSum, fold(dfg::Op::Add, e))});
    for (int64_t t = 0; t < per; ++t)
      store(i, {i, at(t)}, g.op(dfg::Op::Mul, {e[t], inv}));
    return;
  }
  case RowOp::LayerNorm: {
    int invL = g.constant(1.0 / double(L));
    int mean = g.op(dfg::Op::Mul,
                    {lanes(dfg::Op::LaneSum, fold(dfg::Op::Add, v)), invL});
    std::vector<int> d;
    for (int64_t t = 0; t < per; ++t)
      d.push_back(masked(g.op(dfg::Op::Sub, {v[t], mean}), x0[t], t, 0));
    int sq = g.op(dfg::Op::Mul, {d[0], d[0]});
    for (int64_t t = 1; t < per; ++t)
      sq = g.op(dfg::Op::Fma, {d[t], d[t], sq});
    int var = g.op(dfg::Op::Mul, {lanes(dfg::Op::LaneSum, sq), invL});
    int rstd = g.op(dfg::Op::Recip,
                    {g.op(dfg::Op::Sqrt,
                          {g.op(dfg::Op::Add, {var, g.constant(s.epsilon)})})});
    for (int64_t t = 0; t < per; ++t) {
      int o = g.op(dfg::Op::Mul,
                   {g.op(dfg::Op::Mul, {d[t], rstd}), g.load(scale, {at(t)})});
      if (bias >= 0)
        o = g.op(dfg::Op::Add, {o, g.load(bias, {at(t)})});
      store(i, {i, at(t)}, o);
    }
    return;
  }
  }
}

/// Rows over lanes: G = p.Wb lanes of a warp share each row; lane l holds
/// runs of V consecutive elements, l V .. l V + V - 1, then G V further on
/// (the lanes' runs side by side: coalesced, and one 16-byte access a run
/// of 8 16-bit elements), in registers, straight from global memory;
/// LaneSum/LaneMax combine the lanes' partial results by shuffles. V is 8,
/// 4 or 2 where it divides a lane's share and the row, else 1; 1 from
/// shared memory, whose rows are padded for strided lanes. A lane's share
/// is ceil(L / G): where G does not divide L the last lanes overhang the
/// row, read 0 there and mask it out of maxima and deviations (InBounds),
/// and do not store it. Everything is loop-exit DFG: no shared memory, no
/// barrier.
std::optional<Kernel> buildRowOverLanes(const std::string &name,
                                        const OpDesc &d, const RowSpec &s,
                                        const TileParams &p,
                                        std::string &error) {
  const int64_t rows = d.N, L = d.C, G = p.Wb;
  const int64_t per = laneShare(L, G);
  if (p.Nt * per > kMaxRowElements) {
    error = "a row of " + std::to_string(L) + " over " + std::to_string(G) +
            " lanes, " + std::to_string(p.Nt) + " a thread, is more than " +
            std::to_string(kMaxRowElements) + " elements a thread holds";
    return std::nullopt;
  }
  if (p.Wt != 1 || (p.Nb / p.Nt * G) % 32) {
    error = "rows over lanes need Wt = 1 and whole warps";
    return std::nullopt;
  }
  bool rowsOut = s.op == RowOp::Softmax || s.op == RowOp::LayerNorm;
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = s.sharedInput ? 1 : 0;
  // From shared memory the row pass is the body of one fetch-and-compute
  // iteration; from global memory it is all loop exit.
  auto &g = s.sharedInput ? k.body : k.exit;
  int64_t V = 1;
  for (int64_t w : {8, 4, 2})
    if (V == 1 && !s.sharedInput && per % w == 0 && L % w == 0)
      V = w;
  const std::vector<dfg::DimMap> rowMap = {{dfg::DimN, 1}, {dfg::DimW, V}};
  k.tensors = {{"X", {rows, L}, false}};
  int x;
  if (s.sharedInput) {
    // The block's rows, each padded by G words when a row spans whole bank
    // cycles, so the 32 / G rows a warp reads fall in distinct banks.
    int64_t stride = L % 32 == 0 && G < 32 ? L + G : L;
    dfg::Buffer xs{"Xs", dfg::Space::Shared, {p.Nb, L}, {stride, 1}, rowMap};
    xs.guarded = L % G != 0; // the last lanes overhang the row
    x = g.addBuffer(xs);
    k.fetches.push_back(
        {0,
         x,
         {fetchDim(p.Nb, dfg::DimN, 1, 0, false, rows, L, stride),
          fetchDim(L, dfg::NoDim, 1, 0, false, L, 1, 1)}});
  } else {
    x = g.addBuffer({"X", dfg::Space::Global, {rows, L}, {L, 1}, rowMap});
  }
  int scale = -1, bias = -1;
  if (s.op == RowOp::LayerNorm) {
    scale =
        g.addBuffer({"scale", dfg::Space::Global, {L}, {1}, {{dfg::DimW, V}}});
    k.tensors.push_back({"scale", {L}, false});
    if (s.bias) {
      bias =
          g.addBuffer({"bias", dfg::Space::Global, {L}, {1}, {{dfg::DimW, V}}});
      k.tensors.push_back({"bias", {L}, false});
    }
  }
  int y = g.addBuffer(
      rowsOut ? dfg::Buffer{"Y", dfg::Space::Global, {rows, L}, {L, 1}, rowMap}
              : dfg::Buffer{
                    "Y", dfg::Space::Global, {rows}, {1}, {{dfg::DimN, 1}}});
  k.tensors.push_back(
      {"Y",
       rowsOut ? std::vector<int64_t>{rows, L} : std::vector<int64_t>{rows},
       true});
  LaneRow row{g, L, G, V, per, x, y, scale, bias};
  for (int64_t i = 0; i < p.Nt; ++i)
    row.build(i, s);
  k.summary = std::string(rowOpName(s.op)) + " over rows of " +
              std::to_string(L) + " (" + std::to_string(rows) + " rows, " +
              std::to_string(G) + " lanes a row" +
              (s.sharedInput ? ", through shared memory)" : ")");
  return k;
}

// Why p cannot tile whole rows a thread (empty where it can).
std::string threadRowsError(const OpDesc &d, const TileParams &p) {
  if (p.Nb % p.Nt || p.Kb != 1 || p.Hb != 1 || p.Wb != 1)
    return "row ops tile rows only (Kb = Hb = Wb = 1, Nb a multiple of Nt)";
  if (d.C > kMaxThreadRow)
    return "a row of " + std::to_string(d.C) + " is longer than one " +
           "thread walks (" + std::to_string(kMaxThreadRow) +
           "): lanes share it";
  if (p.Nt * d.C > kMaxRowElements)
    return std::to_string(p.Nt) + " rows of " + std::to_string(d.C) +
           " a thread are more than the " + std::to_string(kMaxRowElements) +
           " elements it holds";
  return "";
}

} // namespace

std::optional<Kernel> buildRowOp(const std::string &name, const OpDesc &d,
                                 const RowSpec &s, const TileParams &p,
                                 std::string &error) {
  if (d.kind != OpKind::Reduction || p.Cin != d.C) {
    error = "row ops take whole rows (C_input = the row's length)";
    return std::nullopt;
  }
  if (p.Wb > 1 && p.Nb % p.Nt == 0 && p.Kb == 1 && p.Hb == 1)
    return buildRowOverLanes(name, d, s, p, error);
  error = threadRowsError(d, p);
  if (!error.empty())
    return std::nullopt;
  bool rowsOut = s.op == RowOp::Softmax || s.op == RowOp::LayerNorm;
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = 1; // one fetch and one compute phase
  const int64_t rows = d.N, L = d.C;
  k.tensors = {{"X", {rows, L}, false}};

  // The block's rows in FORMAT_shared: rows (N) outer or columns (C) outer.
  const SharedFormat &f = sharedFormats()[p.format];
  // Rows of L words, or columns of Nb, padded as a matmul's tiles are.
  std::vector<int64_t> strides = tileStrides(f, 'N', 'C', p.Nb, L, p.Nt, L);
  int xs = k.body.addBuffer({"Xs",
                             dfg::Space::Shared,
                             {p.Nb, L},
                             strides,
                             {{dfg::DimN, 1}, {dfg::NoDim, 1}}});
  k.fetches.push_back(
      {0,
       xs,
       {fetchDim(p.Nb, dfg::DimN, 1, 0, false, rows, L, strides[0]),
        fetchDim(L, dfg::NoDim, 1, 0, false, L, 1, strides[1])}});

  int y = k.body.addBuffer(
      rowsOut ? dfg::Buffer{"Y",
                            dfg::Space::Global,
                            {rows, L},
                            {L, 1},
                            {{dfg::DimN, 1}, {dfg::NoDim, 1}}}
              : dfg::Buffer{
                    "Y", dfg::Space::Global, {rows}, {1}, {{dfg::DimN, 1}}});
  int scale = -1, bias = -1;
  if (s.op == RowOp::LayerNorm) {
    scale = k.body.addBuffer(
        {"scale", dfg::Space::Global, {L}, {1}, {{dfg::NoDim, 1}}});
    k.tensors.push_back({"scale", {L}, false});
    if (s.bias) {
      bias = k.body.addBuffer(
          {"bias", dfg::Space::Global, {L}, {1}, {{dfg::NoDim, 1}}});
      k.tensors.push_back({"bias", {L}, false});
    }
  }
  k.tensors.push_back(
      {"Y",
       rowsOut ? std::vector<int64_t>{rows, L} : std::vector<int64_t>{rows},
       true});

  auto &g = k.body;
  // A pass's loads of row i, ordered after `after` (-1: the first pass).
  auto load = [&](int64_t i, int64_t j, int after) {
    if (after < 0)
      return g.load(xs, {i, j});
    dfg::Node n(dfg::Op::Load, {after});
    n.buffer = xs;
    n.index = {i, j};
    return g.add(n);
  };
  auto chain = [&](dfg::Op op, int64_t i, int after, auto element) {
    int acc = element(load(i, 0, after), 0);
    for (int64_t j = 1; j < L; ++j)
      acc = g.op(op, {acc, element(load(i, j, after), j)});
    return acc;
  };
  auto id = [](int v, int64_t) { return v; };
  auto store = [&](int64_t i, std::vector<int64_t> index, int v) {
    dfg::Node st(dfg::Op::Store, {v});
    st.buffer = y;
    st.index = std::move(index);
    st.out = {i, 0, 0, 0};
    g.add(st);
  };
  for (int64_t i = 0; i < p.Nt; ++i) { // thread 0's rows (forEachChunkPosition)
    switch (s.op) {
    case RowOp::ReduceSum:
    case RowOp::ReduceMean:
    case RowOp::ReduceMax: {
      int r = chain(s.op == RowOp::ReduceMax ? dfg::Op::Max : dfg::Op::Add, i,
                    -1, id);
      if (s.op == RowOp::ReduceMean)
        r = g.op(dfg::Op::Div, {r, g.constant(double(L))});
      store(i, {i}, r);
      break;
    }
    case RowOp::Softmax: {
      int m = chain(dfg::Op::Max, i, -1, id);
      int sum = chain(dfg::Op::Add, i, m, [&](int v, int64_t) {
        return g.op(dfg::Op::Exp, {g.op(dfg::Op::Sub, {v, m})});
      });
      int inv = g.op(dfg::Op::Recip, {sum});
      for (int64_t j = 0; j < L; ++j) {
        int e = g.op(dfg::Op::Exp, {g.op(dfg::Op::Sub, {load(i, j, inv), m})});
        store(i, {i, j}, g.op(dfg::Op::Mul, {e, inv}));
      }
      break;
    }
    case RowOp::LayerNorm: {
      int invL = g.constant(1.0 / double(L));
      int mean = g.op(dfg::Op::Mul, {chain(dfg::Op::Add, i, -1, id), invL});
      int var =
          g.op(dfg::Op::Mul, {chain(dfg::Op::Add, i, mean,
                                    [&](int v, int64_t) {
                                      int d = g.op(dfg::Op::Sub, {v, mean});
                                      return g.op(dfg::Op::Mul, {d, d});
                                    }),
                              invL});
      int rstd =
          g.op(dfg::Op::Recip,
               {g.op(dfg::Op::Sqrt,
                     {g.op(dfg::Op::Add, {var, g.constant(s.epsilon)})})});
      for (int64_t j = 0; j < L; ++j) {
        int d = g.op(dfg::Op::Sub, {load(i, j, rstd), mean});
        int v = g.op(dfg::Op::Mul,
                     {g.op(dfg::Op::Mul, {d, rstd}), g.load(scale, {j})});
        if (bias >= 0)
          v = g.op(dfg::Op::Add, {v, g.load(bias, {j})});
        store(i, {i, j}, v);
      }
      break;
    }
    }
  }
  k.summary = std::string(rowOpName(s.op)) + " over rows of " +
              std::to_string(L) + " (" + std::to_string(rows) + " rows)";
  return k;
}

} // namespace cuts::codegen
