// cuSync's dependence analysis (codegen/sync): every consumer tile waits for
// exactly the producer tiles whose outputs it reads, checked against the
// elements the consumer's fetch touches, one by one.
#include "codegen/ops/Conv.h"
#include "codegen/ops/MatMul.h"
#include "codegen/sync/TileSync.h"

#include "CodegenTestUtil.h"

#include <catch2/catch.hpp>

#include <set>

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
  const Fetch &f = consumer.fetches[fetch];
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

} // namespace

TEST_CASE("sync: a GEMM chain's consumer tile reads a row of producer tiles",
          "[sync]") {
  // Y1 = X W1 (64 x 96, tiles 16 x 32), Y2 = Y1 W2 (tiles 32 x 16 over
  // 96-wide slices of 16): each consumer tile reads two producer rows, all
  // three tiles of each. RowSync merges the producer's columns.
  std::string err;
  auto p = buildMatMul("p", test::matmulDesc(64, 48, 96),
                       params(16, 32, 1, 1, 16, 4, 4), {}, err);
  auto c = buildMatMul("c", test::matmulDesc(64, 96, 48),
                       params(32, 16, 1, 1, 16, 4, 4), {}, err);
  INFO(err);
  REQUIRE(p);
  REQUIRE(c);
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
