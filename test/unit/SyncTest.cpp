// cuSync's dependence analysis (codegen/sync): every consumer tile waits for
// exactly the producer tiles whose outputs it reads, checked against the
// elements the consumer's fetch touches, one by one.
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/MatMul.h"
#include "codegen/sync/TileSync.h"

#include "CodegenTestUtil.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

using namespace cuts;
using namespace cuts::codegen;
using namespace cuts::codegen::sync;

namespace {

TileParams params(int64_t nb, int64_t kb, int64_t hb, int64_t wb, int64_t cin,
                  int64_t nt = 1, int64_t kt = 1, int64_t ht = 1,
                  int64_t wt = 1) {
  TileParams p;
  p.Nb = nb, p.Kb = kb, p.Hb = hb, p.Wb = wb;
  p.Nt = nt, p.Kt = kt, p.Ht = ht, p.Wt = wt;
  p.Cin = cin;
  return p;
}

// The producer tiles consumer block `c` reads, element by element: every
// position its fetch touches over all iterations of its loop, each mapped to
// the producer block that stores it (position / block extent along the
// dimension the output axis follows).
std::set<std::array<int64_t, 4>> readTiles(const Kernel &producer,
                                           const Kernel &consumer, int fetch,
                                           const std::array<int64_t, 4> &c) {
  const Fetch f = *tiledFetch(consumer, fetch);
  const std::vector<int64_t> &shape = consumer.tensors[f.tensor].shape;
  const std::vector<int64_t> strides = denseStrides(shape);
  const TileGrid cg = tileGrid(consumer), pg = tileGrid(producer);
  // Per fetch dimension: the positions read and the tensor axis.
  std::vector<std::vector<int64_t>> pos(f.dims.size());
  std::vector<int> axis(f.dims.size(), -1);
  for (size_t i = 0; i < f.dims.size(); ++i) {
    const FetchDim &d = f.dims[i];
    for (size_t a = 0; a < shape.size(); ++a)
      if (shape[a] == d.globalExtent && strides[a] == d.globalStride)
        axis[i] = int(a);
    std::vector<int64_t> bases{0};
    if (d.fromLoop) {
      bases.clear();
      for (int64_t c0 = 0; c0 < consumer.loopExtent; c0 += consumer.params.Cin)
        bases.push_back(c0);
    } else if (d.outDim != dfg::NoDim) {
      bases = {c[d.outDim] * cg.extent[d.outDim] * d.scale};
    }
    for (int64_t b : bases)
      for (int64_t r = 0; r < d.extent; ++r) {
        int64_t g = b + d.offset + r;
        if (g >= 0 && g < d.globalExtent)
          pos[i].push_back(g);
      }
  }
  // The producer's store: which grid dimension each output axis follows.
  std::vector<int> dimOfAxis(shape.size(), -1);
  for (int id : producer.exit.nodesWith(dfg::Op::Store)) {
    const dfg::Buffer &b = producer.exit.buffer(producer.exit.node(id).buffer);
    for (size_t a = 0; a < b.map.size(); ++a)
      dimOfAxis[a] = b.map[a].outDim;
  }
  std::set<std::array<int64_t, 4>> tiles;
  std::vector<size_t> at(f.dims.size(), 0);
  for (const auto &p : pos)
    if (p.empty())
      return tiles;
  for (;;) {
    std::array<int64_t, 4> t{0, 0, 0, 0};
    for (size_t i = 0; i < f.dims.size(); ++i)
      if (axis[i] >= 0 && dimOfAxis[axis[i]] >= 0)
        t[dimOfAxis[axis[i]]] = pos[i][at[i]] / pg.extent[dimOfAxis[axis[i]]];
    tiles.insert(t);
    size_t i = 0;
    while (i < at.size() && ++at[i] == pos[i].size())
      at[i++] = 0;
    if (i == at.size())
      break;
  }
  return tiles;
}

// For every consumer block: the TileSync box is exactly the tiles it reads,
// and every policy's waits cover them (each semaphore reaching its count
// means every tile it counts has posted).
void checkPair(const Kernel &producer, const Kernel &consumer, int fetch) {
  std::string why;
  auto d = dependence(producer, consumer, fetch, why);
  INFO(why);
  REQUIRE(d);
  std::vector<Policy> ps = policies(*d);
  for (int64_t b = 0; b < d->consumer.blocks(); ++b) {
    std::array<int64_t, 4> c = d->consumer.coords(b);
    std::set<std::array<int64_t, 4>> want =
        readTiles(producer, consumer, fetch, c);
    Box box = d->box(c);
    std::set<std::array<int64_t, 4>> got;
    if (!box.empty())
      for (int64_t p = 0; p < d->producer.blocks(); ++p) {
        std::array<int64_t, 4> x = d->producer.coords(p);
        bool in = true;
        for (int k = 0; k < 4; ++k)
          in = in && x[k] >= box.lo[k] && x[k] <= box.hi[k];
        if (in)
          got.insert(x);
      }
    INFO("consumer block " << b);
    CHECK(got == want);
    for (const Policy &p : ps) {
      std::set<int64_t> waited;
      for (const Wait &w : waitsOf(*d, p, c)) {
        waited.insert(w.semaphore);
        CHECK(w.posts == p.postsPerSemaphore(d->producer));
        CHECK(w.semaphore < p.semaphores(d->producer));
      }
      for (const auto &t : want)
        CHECK(waited.count(p.semaphore(d->producer, t)) == 1);
    }
  }
}

// Y1 = X W1 (64 x 96, tiles 16 x 32), Y2 = Y1 W2 (tiles 32 x 16 over
// 96-wide slices of 16).
std::pair<Kernel, Kernel> gemmPair() {
  std::string err;
  auto p = buildMatMul("p", test::matmulDesc(64, 48, 96),
                       params(16, 32, 1, 1, 16, 4, 4), {}, err);
  auto c = buildMatMul("c", test::matmulDesc(64, 96, 48),
                       params(32, 16, 1, 1, 16, 4, 4), {}, err);
  INFO(err);
  REQUIRE(p);
  REQUIRE(c);
  return {*p, *c};
}

} // namespace

TEST_CASE("sync: a GEMM chain's consumer tile reads a row of producer tiles",
          "[sync]") {
  // The GEMM pair: each consumer tile reads two producer rows, all three
  // tiles of each. RowSync merges the producer's columns.
  auto [pk, ck] = gemmPair();
  const Kernel *p = &pk, *c = &ck;
  checkPair(*p, *c, 0);
  std::string why;
  auto d = dependence(*p, *c, 0, why);
  REQUIRE(d);
  std::vector<Policy> ps = policies(*d);
  REQUIRE(ps.size() == 2);
  CHECK(ps[1].name == "RowSync");
  CHECK(ps[1].merged == std::array<bool, 4>{false, true, false, false});
  CHECK(ps[1].semaphores(d->producer) == 4);
  CHECK(ps[1].postsPerSemaphore(d->producer) == 3);
  // The consumer's second row of tiles waits for producer rows 2 and 3.
  std::vector<Wait> w = waitsOf(*d, ps[1], {1, 0, 0, 0});
  REQUIRE(w.size() == 2);
  CHECK((w[0].semaphore == 2 && w[1].semaphore == 3 && w[0].posts == 3));
  // B's fetch reads weights, not the producer: another shape.
  CHECK_FALSE(dependence(*p, *c, 1, why));
}

TEST_CASE("sync: the consumer reads the producer transposed", "[sync]") {
  // Y2 = Y1^T W2: the consumer's A is the producer's output read K-major.
  std::string err;
  auto p = buildMatMul("p", test::matmulDesc(48, 32, 64),
                       params(16, 16, 1, 1, 16, 4, 4), {}, err);
  auto c = buildMatMul("c", test::matmulDesc(64, 48, 32, true),
                       params(16, 16, 1, 1, 16, 4, 4), {}, err);
  INFO(err);
  REQUIRE(p);
  REQUIRE(c);
  checkPair(*p, *c, 0);
}

TEST_CASE("sync: a conv chain waits for the halo's producer tiles", "[sync]") {
  // Producer 3x3 pad 1 over 16x16 in 4x8 tiles; consumers read it through
  // 3x3 pad 1 (8x4 tiles: the halo reaches the neighbours), 5x5 dilated by
  // 2 with pad 4 and stride 2, and 1x1 (no halo).
  std::string err;
  test::ConvCase s = test::convCase(1, 4, 16, 8, 3, 1, 1);
  auto p = buildConv("p", s.desc(), params(1, 4, 4, 8, 4, 1, 2, 2, 2), {}, err);
  INFO(err);
  REQUIRE(p);
  const test::ConvCase consumers[] = {test::convCase(1, 8, 16, 4, 3, 1, 1),
                                      test::convCase(1, 8, 16, 4, 5, 2, 4, 2),
                                      test::convCase(1, 8, 16, 4, 1, 1, 0)};
  for (const test::ConvCase &cs : consumers) {
    auto c =
        buildConv("c", cs.desc(), params(1, 4, 8, 4, 4, 1, 2, 2, 2), {}, err);
    INFO(err << " filter " << cs.FH << " stride " << cs.SH);
    REQUIRE(c);
    checkPair(*p, *c, 0);
  }
  // A 3x3 consumer tile in the middle waits for a 3 x 3 box of producer
  // tiles (rows of 4, columns of 8): the halo.
  auto c = buildConv("c", consumers[0].desc(),
                     params(1, 4, 4, 8, 4, 1, 2, 2, 2), {}, err);
  REQUIRE(c);
  std::string why;
  auto d = dependence(*p, *c, 0, why);
  REQUIRE(d);
  Box b = d->box({0, 0, 1, 0});
  CHECK((b.lo[2] == 0 && b.hi[2] == 2 && b.lo[3] == 0 && b.hi[3] == 1));
  CHECK(b.lo[1] == 0);
  CHECK(b.hi[1] == d->producer.tiles[1] - 1); // every channel, through C
}

namespace {

// x, the two filters and both outputs of a conv chain, as the kernels'
// tensors by name ("X", "Wt", "Y").
struct Chain {
  std::vector<float> x, w1, y1, w2, y2;
  std::map<std::string, void *> producer() {
    return {{"X", x.data()}, {"Wt", w1.data()}, {"Y", y1.data()}};
  }
  std::map<std::string, void *> consumer() {
    return {{"X", y1.data()}, {"Wt", w2.data()}, {"Y", y2.data()}};
  }
};

// The conv chain of the tests below (3x3 then 3x3, the consumer's halo
// crossing producer tiles), its stream-ordered outputs and its dependence.
struct ConvPair {
  std::optional<Kernel> p, c;
  Chain ref;
  std::optional<Dependence> d;
};

// A pair under `policy`: the producer posting, the consumer waiting through
// its fetch `fetch`, both compiled for the host (and checked to build for
// the GPU).
struct Synchronised {
  Kernel p, c;
  std::unique_ptr<HostKernel> hp, hc;
};
Synchronised synchronised(const Kernel &p, const Kernel &c, const Dependence &d,
                          const Policy &policy, int fetch,
                          std::optional<TileOrder> order = std::nullopt) {
  Synchronised s{p, c, nullptr, nullptr};
  s.p.name = "p_" + policy.name + (order ? "_ordered" : "");
  s.c.name = "c_" + policy.name;
  s.p.post = TilePost{d.producer, policy, order};
  s.c.waits = {TileWait{tiledFetch(c, fetch)->tensor, d, policy}};
  std::string err;
  s.hp = compileOnHost(s.p, err);
  s.hc = compileOnHost(s.c, err);
  INFO(err);
  REQUIRE(s.hp);
  REQUIRE(s.hc);
  REQUIRE(nvrtcAvailable());
  CHECK(compileWithNvrtc(emitSource(s.p), "sm_90", err));
  CHECK(compileWithNvrtc(emitSource(s.c), "sm_90", err));
  return s;
}

ConvPair convPair(uint32_t seed) {
  std::string err;
  test::ConvCase ps = test::convCase(1, 4, 16, 8, 3, 1, 1),
                 cs = test::convCase(1, 8, 16, 4, 3, 1, 1);
  ConvPair t;
  t.p = buildConv("p", ps.desc(), params(1, 4, 4, 8, 4, 1, 2, 2, 2), {}, err);
  t.c = buildConv("c", cs.desc(), params(1, 4, 8, 4, 4, 1, 2, 2, 2), {}, err);
  INFO(err);
  REQUIRE(t.p);
  REQUIRE(t.c);
  std::mt19937 rng(seed);
  t.ref = {test::randomVector(rng, 4 * 16 * 16),
           test::randomVector(rng, 8 * 4 * 9), test::poisoned(8 * 16 * 16),
           test::randomVector(rng, 4 * 8 * 9), test::poisoned(4 * 16 * 16)};
  REQUIRE(runOnHost(*t.p, t.ref.producer(), err));
  REQUIRE(runOnHost(*t.c, t.ref.consumer(), err));
  std::string why;
  t.d = dependence(*t.p, *t.c, 0, why);
  INFO(why);
  REQUIRE(t.d);
  return t;
}

} // namespace

TEST_CASE("sync: producer and consumer run at once, each consumer tile after "
          "the producer tiles it reads",
          "[sync]") {
  // The conv chain's producer and consumer, in modules of their own,
  // launched from two threads, the consumer first: its tiles spin until the
  // producer's post. The intermediate starts as NaN, so a tile read before it
  // is stored shows in the output, which must equal the stream-ordered one bit
  // for bit; the epoch kernel counts the run, and a second run reuses the
  // semaphores (epoch 1).
  // With T, the producer's blocks take their tiles from a slot counter in
  // another order (channel tiles fastest), which wraps back to 0 each run.
  auto [p, c, ref, d] = convPair(7);
  std::string err;
  REQUIRE(d->producer.tiles[1] == 2);
  const TileOrder channelsFirst{{1, 3, 2, 0}};
  REQUIRE_FALSE(channelsFirst.natural(d->producer));
  for (const Policy &policy : policies(*d))
    for (std::optional<TileOrder> order :
         {std::optional<TileOrder>(),
          std::optional<TileOrder>(channelsFirst)}) {
      INFO(policy.name << (order ? " ordered" : ""));
      auto [sp, sc, hp, hc] = synchronised(*p, *c, *d, policy, 0, order);
      CHECK((emitSource(sp).find("atomicInc(cuts_next") != std::string::npos) ==
            order.has_value());
      unsigned next = 0;
      // The semaphores, then the producer's count of runs started (its own
      // buffer; here the word after them), which the wait kernel (run before
      // the consumer, as on the GPU) waits for.
      const size_t n = size_t(policy.semaphores(d->producer));
      std::vector<unsigned> sems(n + 1, 0);
      KernelSignature ws{"cuts_sync_wait",
                         {{"started", "const unsigned *"},
                          {"cuts_epoch", "const unsigned *"}}};
      auto hw = compileForHost(syncWaitKernel(), ws, err);
      REQUIRE(hw);
      auto he = compileForHost(
          syncEpochKernel(),
          KernelSignature{"cuts_sync_epoch", {{"cuts_epoch", "unsigned *"}}},
          err);
      REQUIRE(he);
      unsigned epoch = 0;
      for (int r = 0; r < 2; ++r) {
        REQUIRE(epoch == unsigned(r));
        Chain run = ref;
        run.y1 = test::poisoned(run.y1.size());
        run.y2 = test::poisoned(run.y2.size());
        auto pb = run.producer(), cb = run.consumer();
        pb["cuts_posted"] = sems.data(), cb["cuts_ready0"] = sems.data();
        pb["cuts_started"] = &sems[n];
        pb["cuts_epoch"] = cb["cuts_epoch"] = &epoch;
        if (order)
          pb["cuts_next"] = &next;
        std::string cerr;
        bool consumed = false;
        std::thread consumer([&] {
          consumed = hw->launch({1, 1, 1}, {1, 1, 1},
                                {KernelArg::buffer(&sems[n]),
                                 KernelArg::buffer(&epoch)},
                                cerr) &&
                     launchOnHost(*hc, sc, cb, cerr);
        });
        bool produced = launchOnHost(*hp, sp, pb, err);
        consumer.join();
        INFO(err << cerr << " epoch " << epoch);
        CHECK(produced);
        CHECK(consumed);
        CHECK(std::memcmp(run.y2.data(), ref.y2.data(), ref.y2.size() * 4) ==
              0);
        for (size_t i = 0; i < n; ++i)
          CHECK(sems[i] == (epoch + 1) * policy.postsPerSemaphore(d->producer));
        CHECK(sems[n] == epoch + 1);
        CHECK(next == 0);
        REQUIRE(
            he->launch({1, 1, 1}, {1, 1, 1}, {KernelArg::buffer(&epoch)}, err));
      }
    }

  // No post: the consumer's first wait never ends, and says so.
  Kernel sc = *c;
  sc.name = "c_unposted";
  sc.waits = {TileWait{c->fetches[0].tensor, *d, policies(*d)[0]}};
  auto hc = compileOnHost(sc, err);
  REQUIRE(hc);
  Chain run = ref;
  std::vector<unsigned> sems(size_t(d->producer.blocks()), 0);
  unsigned epoch = 0;
  auto cb = run.consumer();
  cb["cuts_ready0"] = sems.data(), cb["cuts_epoch"] = &epoch;
  setenv("CUTS_HOST_SPIN_TIMEOUT_MS", "50", 1);
  CHECK_FALSE(launchOnHost(*hc, sc, cb, err));
  unsetenv("CUTS_HOST_SPIN_TIMEOUT_MS");
  CHECK(err.find("the flag it waits for is never set") != std::string::npos);
}

namespace {

// fp16 bits of values in [0.5, 1) and (-1, -0.5].
std::vector<uint16_t> halves(std::mt19937 &rng, size_t n) {
  std::vector<uint16_t> h(n);
  std::uniform_int_distribution<int> u(0, 2047);
  for (uint16_t &x : h)
    x = uint16_t(0x3800 + u(rng) % 1024 + (u(rng) % 2) * 0x8000);
  return h;
}

// Consumer c on a thread of its own, launched first, then producer p: the
// consumer's tiles spin until the producer's posts. Both must finish.
void runAtOnce(const HostKernel &hp, const Kernel &p,
               const std::map<std::string, void *> &pb, const HostKernel &hc,
               const Kernel &c, const std::map<std::string, void *> &cb) {
  std::string perr, cerr;
  bool consumed = false;
  std::thread consumer([&] { consumed = launchOnHost(hc, c, cb, cerr); });
  const bool produced = launchOnHost(hp, p, pb, perr);
  consumer.join();
  INFO(perr << cerr);
  CHECK(produced);
  CHECK(consumed);
}

} // namespace

TEST_CASE("sync: tensor-core products chain tile by tile", "[sync]") {
  // Y1 = X W1 (64 x 32 x 48, fp16 out), Y2 = Y1 W2 (64 x 48 x 32) on
  // mma.sync, 16 x 16 tiles: a consumer tile reads a row of producer tiles
  // through its A operand's copies. Run at once on two threads (consumer
  // first), each policy's output equals the stream-ordered one bit for bit.
  MmaLoop m;
  m.operand = dfg::Type::F16, m.warpsM = m.warpsN = 1, m.mi = 1, m.ni = 2;
  m.stages = 2;
  std::string err;
  auto p = buildMmaMatMul("p", test::matmulDesc(64, 32, 48), mmaParams(m, 16),
                          dfg::Type::F16, {}, err);
  auto c = buildMmaMatMul("c", test::matmulDesc(64, 48, 32), mmaParams(m, 16),
                          dfg::Type::F16, {}, err);
  INFO(err);
  REQUIRE(p);
  REQUIRE(c);
  setTensorType(*p, "Y", dfg::Type::F16);
  REQUIRE(p->tensors.back().type == dfg::Type::F16);
  checkPair(*p, *c, 0);
  std::string why;
  auto d = dependence(*p, *c, 0, why);
  REQUIRE(d);
  CHECK(d->producer.tiles == std::array<int64_t, 4>{4, 3, 1, 1});
  CHECK_FALSE(dependence(*p, *c, 1, why)); // B is W2, of another shape

  std::mt19937 rng(5);
  std::vector<uint16_t> x = halves(rng, 64 * 32), w1 = halves(rng, 32 * 48),
                        w2 = halves(rng, 48 * 32), y1(64 * 48, 0xffff);
  std::vector<float> ref = test::poisoned(64 * 32);
  REQUIRE(runOnHost(*p, {{"A", x.data()}, {"B", w1.data()}, {"Y", y1.data()}},
                    err));
  REQUIRE(runOnHost(*c, {{"A", y1.data()}, {"B", w2.data()}, {"Y", ref.data()}},
                    err));
  for (const Policy &policy : policies(*d)) {
    INFO(policy.name);
    auto [sp, sc, hp, hc] = synchronised(*p, *c, *d, policy, 0);
    // Either may run over PDL: the producer lets its dependent launch once
    // past its own griddepcontrol.wait; the consumer waits for its tiles
    // (its launch came after everything before the producer), and for the
    // producer's end only as it exits.
    const std::string ps = emitSource(sp), cs = emitSource(sc);
    const size_t trigger = ps.find("griddepcontrol.launch_dependents");
    REQUIRE(trigger != std::string::npos);
    CHECK(ps.find("griddepcontrol.wait") < trigger);
    // Its one griddepcontrol.wait comes after its tiles' waits and its
    // stores, at its end: a kernel after it never runs beside the producer.
    const size_t wait = cs.find("griddepcontrol.wait");
    CHECK(wait == cs.rfind("griddepcontrol.wait"));
    CHECK(wait > cs.rfind("cuts_ready0["));
    CHECK(wait > cs.rfind("Y["));
    CHECK(cs.find("griddepcontrol.launch_dependents") == std::string::npos);
    std::vector<unsigned> sems(size_t(policy.semaphores(d->producer)), 0);
    unsigned started = 0, epoch = 0;
    std::vector<uint16_t> mid(y1.size(), 0xffff); // NaN until stored
    std::vector<float> out = test::poisoned(ref.size());
    runAtOnce(*hp, sp,
              {{"A", x.data()},
               {"B", w1.data()},
               {"Y", mid.data()},
               {"cuts_posted", sems.data()},
               {"cuts_started", &started}},
              *hc, sc,
              {{"A", mid.data()},
               {"B", w2.data()},
               {"Y", out.data()},
               {"cuts_ready0", sems.data()},
               {"cuts_epoch", &epoch}});
    CHECK(std::memcmp(out.data(), ref.data(), ref.size() * 4) == 0);
    CHECK(started == 1);
  }
}

TEST_CASE("sync: the emitted waits are the semaphores of the producer tiles "
          "a consumer tile reads",
          "[sync]") {
  // Deterministic, for each consumer tile b, run alone (CUTS_HOST_BLOCK):
  // the semaphores of the producer tiles b reads (element by element) are
  // ready and those tiles stored, the rest of the intermediate NaN. Tile b
  // must finish with the stream-ordered outputs (it waits for nothing
  // more, reads nothing else); with any one of those semaphores not ready
  // it must time out (20 ms) instead (it waits for each).
  auto [p, c, ref, d] = convPair(11);
  std::string err;
  const TileGrid &g = d->producer, &cg = d->consumer;
  setenv("CUTS_HOST_SPIN_TIMEOUT_MS", "20", 1);
  for (const Policy &policy : policies(*d)) {
    Kernel sc = *c;
    sc.name = "c_alone_" + policy.name;
    sc.waits = {TileWait{c->fetches[0].tensor, *d, policy}};
    auto hc = compileOnHost(sc, err);
    INFO(policy.name << ": " << err);
    REQUIRE(hc);
    for (int64_t b = 0; b < cg.blocks(); ++b) {
      INFO("consumer tile " << b);
      std::array<int64_t, 4> cb = cg.coords(b);
      std::set<int64_t> needed;
      for (const auto &t : readTiles(*p, *c, 0, cb))
        needed.insert(policy.semaphore(g, t));
      // The intermediate: the needed semaphores' tiles, NaN elsewhere.
      Chain run = ref;
      for (int64_t k = 0; k < 8; ++k)
        for (int64_t h = 0; h < 16; ++h)
          for (int64_t w = 0; w < 16; ++w) {
            std::array<int64_t, 4> t{0, k / g.extent[1], h / g.extent[2],
                                     w / g.extent[3]};
            if (!needed.count(policy.semaphore(g, t)))
              run.y1[(k * 16 + h) * 16 + w] = NAN;
          }
      setenv("CUTS_HOST_BLOCK", std::to_string(b).c_str(), 1);
      std::vector<int64_t> withheld{-1}; // none, then each in turn
      withheld.insert(withheld.end(), needed.begin(), needed.end());
      for (int64_t held : withheld) {
        INFO("withheld semaphore " << held);
        run.y2 = test::poisoned(run.y2.size());
        std::vector<unsigned> sems(size_t(policy.semaphores(g)), 0);
        for (int64_t s : needed)
          if (s != held)
            sems[size_t(s)] = unsigned(policy.postsPerSemaphore(g));
        unsigned epoch = 0;
        auto m = run.consumer();
        m["cuts_ready0"] = sems.data(), m["cuts_epoch"] = &epoch;
        std::string lerr;
        bool ok = launchOnHost(*hc, sc, m, lerr);
        if (held >= 0) {
          CHECK_FALSE(ok);
          CHECK(lerr.find("never set") != std::string::npos);
          continue;
        }
        CHECK(ok);
        bool same = true;
        for (int64_t k = cb[1] * cg.extent[1]; k < (cb[1] + 1) * cg.extent[1];
             ++k)
          for (int64_t h = cb[2] * cg.extent[2]; h < (cb[2] + 1) * cg.extent[2];
               ++h)
            for (int64_t w = cb[3] * cg.extent[3];
                 w < (cb[3] + 1) * cg.extent[3]; ++w) {
              size_t i = size_t((k * 16 + h) * 16 + w);
              same = same && std::memcmp(&run.y2[i], &ref.y2[i], 4) == 0;
            }
        CHECK(same);
      }
      unsetenv("CUTS_HOST_BLOCK");
    }
  }
  unsetenv("CUTS_HOST_SPIN_TIMEOUT_MS");
}

TEST_CASE("sync: T orders a producer's tiles as its consumer needs them",
          "[sync]") {
  // Slots and tiles: an order is a permutation of the grid.
  TileGrid g;
  g.tiles = {2, 3, 1, 4};
  const TileOrder order{{1, 3, 0, 2}};
  std::set<int64_t> seen;
  for (int64_t s = 0; s < g.blocks(); ++s) {
    CHECK(order.position(g, order.coords(g, s)) == s);
    seen.insert(TileOrder{}.position(g, order.coords(g, s)));
  }
  CHECK(int64_t(seen.size()) == g.blocks());
  CHECK(order.text(g) == "K,W,N");
  CHECK(TileOrder{}.natural(g));
  CHECK_FALSE(TileOrder{{1, 3, 2, 0}}.natural(g));
  CHECK(TileOrder{{3, 1, 2, 0}}.natural(g)); // H has one tile
  CHECK(TileOrder{{3, 2, 1, 0}}.text(g) == "W,K,N");
  // The conv chain: the producer's 16 tiles (2 channel tiles of 4 x 2
  // pixel tiles) on 6 SMs, 12 done when its last wave starts (2 slots
  // idle). In blockIdx order channels are the slowest: the 12 are channel
  // tile 0's and half of tile 1's, and the consumer's first tile, whose
  // halo spans rows the second half holds, is not ready. Channel tiles
  // fastest, the first 12 are both channel tiles of 6 pixel tiles: two
  // consumer tiles fill the idle slots, and the other 6 take one wave, not
  // two. On a GEMM chain blockIdx order already runs a consumer row's
  // producer tiles first: no order is better.
  auto [p, c, ref, d] = convPair(3);
  REQUIRE(d->producer.blocks() == 16);
  REQUIRE(d->consumer.blocks() == 8);
  const Policy tile = policies(*d)[0];
  const KernelTiming tp{100, 1}, tc{100, 1};
  const int64_t sms = 6;
  const SyncEstimate natural = estimate(*d, tile, tp, tc, sms, 0);
  const TileOrder best = bestOrder(*d, tile, tp, tc, sms);
  const SyncEstimate ordered = estimate(*d, tile, tp, tc, sms, 0, best);
  INFO(best.text(d->producer));
  CHECK(natural.earlyTiles == 0);
  CHECK(natural.syncUs == Approx(200));
  CHECK(ordered.earlyTiles == 2);
  CHECK(ordered.syncUs == Approx(150));
  CHECK(best.text(d->producer).substr(0, 1) == "K"); // channel tiles first
  auto [gp, gc] = gemmPair();
  std::string why;
  auto gd = dependence(gp, gc, 0, why);
  REQUIRE(gd);
  for (const Policy &policy : policies(*gd))
    CHECK(bestOrder(*gd, policy, {300, 1}, {200, 1}, 5).natural(gd->producer));
  // One producer wave: nothing is done before the last, no order helps.
  CHECK(bestOrder(*d, tile, tp, tc, 64).natural(d->producer));
}

TEST_CASE("sync: the model's gain is the consumer tiles that fit the "
          "producer's last wave",
          "[sync]") {
  // The GEMM pair on 5 SMs, a block each: the producer's 12 tiles
  // run in 3 waves, the last with 3 empty slots; 10 producer tiles are done
  // when it starts, rows 0-2 and one of row 3, so the consumer's first row
  // (3 tiles, reading producer rows 0 and 1) runs in it: one consumer wave
  // of two saved, less the fixed cost.
  auto [p, c] = gemmPair();
  std::string why;
  auto d = dependence(p, c, 0, why);
  REQUIRE(d);
  for (const Policy &policy : policies(*d)) {
    SyncEstimate e = estimate(*d, policy, {300, 1}, {200, 1}, 5);
    CHECK(e.earlyTiles == 3);
    CHECK(e.streamUs == 500);
    CHECK(e.syncUs == Approx(300 + 100 + kSyncOverheadUs));
    CHECK(e.gain() == Approx(100 - kSyncOverheadUs));
  }
  // On 4 SMs the producer's 3 waves are whole: nothing to fill, a loss.
  SyncEstimate whole = estimate(*d, policies(*d)[0], {300, 1}, {200, 1}, 4);
  CHECK(whole.earlyTiles == 0);
  CHECK(whole.gain() == Approx(-kSyncOverheadUs));
  // On 6 SMs the 12 tiles fill 2 waves exactly, likewise; on 7 the last
  // wave has 2 empty slots and 7 producer tiles are done (rows 0-1 and one
  // of row 2): the consumer's first two tiles, which need rows 0-1, fit.
  CHECK(estimate(*d, policies(*d)[0], {300, 1}, {200, 1}, 6).earlyTiles == 0);
  CHECK(estimate(*d, policies(*d)[0], {300, 1}, {200, 1}, 7).earlyTiles == 2);
}

TEST_CASE("sync: the scores' product waits for Q and K of its head in a fused "
          "Q|K|V product (StridedSync)",
          "[sync]") {
  // GPT-2's attention, small: QKV = X W (32 x 16 x 192, fp16 out), read as
  // [32, 12, 16] (4 heads of 16 for each of Q, K and V); the scores of head
  // h, Q_h K_h^T, read Q at columns 16 h and K at 64 + 16 h in place (the
  // products' views), a dependence each. Q, K and V of a head are 64
  // columns apart: StridedSync's stride, 4 of the mma.sync producer's
  // 16-wide tiles, 1 of the warp-specialised wgmma one's 64-wide tiles (its
  // copying warpgroup returns before the post: the consumers post alone).
  const int64_t S = 32, E = 16, H = 4, D = 16;
  std::string err;
  MmaView q;
  q.shape = {S, 3 * H, D};
  q.batchExtents = {H}, q.batchStrides = {D}, q.rowStride = 3 * H * D;
  MmaView k = q;
  k.offset = H * D;
  MmaLoop cm;
  cm.operand = dfg::Type::F16, cm.warpsM = cm.warpsN = 1, cm.mi = 1, cm.ni = 2;
  cm.stages = 2;
  auto c = buildMmaMatMul("scores", test::matmulDesc(S, D, S, false, true, H),
                          mmaParams(cm, 16), dfg::Type::F16, {}, err, {q, k});
  INFO(err);
  REQUIRE(c);
  // 64 columns a tile: too wide a tile to stage in the stages' memory, so
  // the copying warpgroup returns after its copies.
  MmaLoop ws = cm;
  ws.instr = MatrixInstr::Wgmma, ws.warpSpecialized = true, ws.ni = 8;
  for (const MmaLoop &pm : {cm, ws}) {
    INFO((pm.warpSpecialized ? "warp-specialised wgmma" : "mma.sync"));
    auto p =
        buildMmaMatMul("qkv", test::matmulDesc(S, E, 3 * H * D, false, true),
                       mmaParams(pm, 16), dfg::Type::F16, {}, err);
    INFO(err);
    REQUIRE(p);
    setTensorType(*p, "Y", dfg::Type::F16);
    std::string why;
    std::vector<Dependence> deps;
    for (int f : {0, 1}) {
      auto d = dependence(*p, *c, f, why);
      INFO(why);
      REQUIRE(d);
      deps.push_back(*d);
    }
    const TileGrid &g = deps[0].producer, &cg = deps[0].consumer;
    const int64_t stride = H * D / (8 * pm.ni); // a head's Q to its K
    REQUIRE(g.tiles[1] == 3 * stride);
    std::vector<Policy> ps = policies(deps);
    REQUIRE(ps.size() == 2);
    CHECK(ps[1].name == "StridedSync");
    CHECK(ps[1].stride == std::array<int64_t, 4>{0, stride, 0, 0});
    CHECK(ps[1].postsPerSemaphore(g) == 3); // Q, K and V
    // Element by element: the producer tiles consumer block b reads (rows
    // of Q and of K, head h's 16 columns of each). TileSync's boxes are
    // exactly those; every policy's waits cover them.
    for (int64_t b = 0; b < cg.blocks(); ++b) {
      const std::array<int64_t, 4> cb = cg.coords(b);
      std::set<std::array<int64_t, 4>> want, got;
      for (int64_t r = 0; r < cg.extent[0]; ++r)
        for (int64_t col = 0; col < D; ++col) {
          const int64_t qr = cb[0] * cg.extent[0] + r,
                        kr = cb[1] * cg.extent[1] + r;
          if (qr < S)
            want.insert(
                {qr / g.extent[0], (cb[2] * D + col) / g.extent[1], 0, 0});
          if (kr < S)
            want.insert({kr / g.extent[0],
                         (H * D + cb[2] * D + col) / g.extent[1], 0, 0});
        }
      for (const Dependence &d : deps) {
        Box x = d.box(cb);
        for (int64_t n = x.lo[0]; n <= x.hi[0]; ++n)
          for (int64_t t = x.lo[1]; t <= x.hi[1]; ++t)
            got.insert({n, t, 0, 0});
      }
      INFO("consumer block " << b);
      CHECK(got == want);
      for (const Policy &pol : ps) {
        std::set<int64_t> waited;
        for (const Dependence &d : deps)
          for (const Wait &w : waitsOf(d, pol, cb))
            waited.insert(w.semaphore);
        for (const auto &t : want)
          CHECK(waited.count(pol.semaphore(g, t)) == 1);
      }
    }
    // Run at once on two threads, the consumer first: each policy's scores
    // equal the stream-ordered ones bit for bit (Q|K|V NaN until stored).
    std::mt19937 rng(9);
    std::vector<uint16_t> x = halves(rng, S * E),
                          w = halves(rng, 3 * H * D * E),
                          qkv(S * 3 * H * D, 0xffff);
    std::vector<float> ref = test::poisoned(H * S * S);
    REQUIRE(runOnHost(*p, {{"A", x.data()}, {"B", w.data()}, {"Y", qkv.data()}},
                      err));
    REQUIRE(runOnHost(
        *c, {{"A", qkv.data()}, {"B", qkv.data()}, {"Y", ref.data()}}, err));
    for (const Policy &pol : ps) {
      INFO(pol.name);
      Kernel sp = *p, sc = *c;
      sp.name = "qkv_" + pol.name, sc.name = "scores_" + pol.name;
      sp.post = TilePost{g, pol, std::nullopt};
      sc.waits = {TileWait{0, deps[0], pol}, TileWait{1, deps[1], pol}};
      auto hp = compileOnHost(sp, err), hc = compileOnHost(sc, err);
      INFO(err);
      REQUIRE(hp);
      REQUIRE(hc);
      CHECK(compileWithNvrtc(emitSource(sp), "sm_90a", err));
      CHECK(compileWithNvrtc(emitSource(sc), "sm_90a", err));
      CHECK((emitSource(sp).find("bar.sync 1, 128;") != std::string::npos) ==
            pm.warpSpecialized);
      std::vector<unsigned> sems(size_t(pol.semaphores(g)), 0);
      unsigned started = 0, epoch = 0;
      std::vector<uint16_t> mid(qkv.size(), 0xffff);
      std::vector<float> out = test::poisoned(ref.size());
      runAtOnce(*hp, sp,
                {{"A", x.data()},
                 {"B", w.data()},
                 {"Y", mid.data()},
                 {"cuts_posted", sems.data()},
                 {"cuts_started", &started}},
                *hc, sc,
                {{"A", mid.data()},
                 {"B", mid.data()},
                 {"Y", out.data()},
                 {"cuts_ready0", sems.data()},
                 {"cuts_ready1", sems.data()},
                 {"cuts_epoch", &epoch}});
      CHECK(std::memcmp(out.data(), ref.data(), ref.size() * 4) == 0);
      for (unsigned s : sems)
        CHECK(s == unsigned(pol.postsPerSemaphore(g)));
    }
  }
}
