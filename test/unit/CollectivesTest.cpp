// ConCCL's copy-engine collectives: the direct algorithm's copy plans
// executed with memcpy against all-gather, all-to-all and reduce-scatter
// computed independently, and reduce-scatter's sum kernel on the CPU
// harness in every dtype.
#include "Half.h"

#include "codegen/emit/Collective.h"
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/Collectives.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <set>

using namespace cuts;
using namespace cuts::rt;
using namespace cuts::test;

namespace {

using Buffers = std::vector<std::vector<uint8_t>>;

/// Each rank's send buffer, every byte naming its rank and position.
Buffers sendBuffers(Collective c, int ranks, uint64_t chunk) {
  Buffers send(size_t(ranks), std::vector<uint8_t>(sendBytes(c, ranks, chunk)));
  for (int r = 0; r < ranks; ++r)
    for (size_t i = 0; i < send[size_t(r)].size(); ++i)
      send[size_t(r)][i] = uint8_t(r * 37 + i * 11 + 1);
  return send;
}

/// The plan's copies done with memcpy, each checked against the buffers'
/// bounds.
Buffers runPlan(Collective c, int ranks, uint64_t chunk, const Buffers &send) {
  Buffers recv(size_t(ranks), std::vector<uint8_t>(recvBytes(c, ranks, chunk)));
  for (const PeerCopy &p : copyPlan(c, ranks, chunk)) {
    REQUIRE(p.srcOffset + p.bytes <= send[size_t(p.src)].size());
    REQUIRE(p.dstOffset + p.bytes <= recv[size_t(p.dst)].size());
    std::memcpy(recv[size_t(p.dst)].data() + p.dstOffset,
                send[size_t(p.src)].data() + p.srcOffset, p.bytes);
  }
  return recv;
}

} // namespace

TEST_CASE("copy plans: every rank sends every rank one chunk, once",
          "[collectives]") {
  for (Collective c : {Collective::AllGather, Collective::AllToAll})
    for (int ranks : {1, 2, 3, 5, 8}) {
      INFO(collectiveName(c) << " over " << ranks);
      std::vector<PeerCopy> plan = copyPlan(c, ranks, 24);
      CHECK(plan.size() == size_t(ranks * ranks));
      std::set<std::pair<int, int>> pairs;
      std::set<std::pair<int, uint64_t>> written;
      for (const PeerCopy &p : plan) {
        CHECK(pairs.insert({p.src, p.dst}).second);
        CHECK(written.insert({p.dst, p.dstOffset}).second);
        CHECK(p.bytes == 24);
      }
      // A source's first copy goes to its neighbour, its own last.
      CHECK(plan.front().dst == (ranks > 1 ? 1 : 0));
      CHECK(plan[size_t(ranks - 1)].dst == 0);
    }
}

TEST_CASE("copy plans give all-gather and all-to-all", "[collectives]") {
  for (int ranks : {1, 2, 3, 4, 7})
    for (uint64_t chunk : {1ull, 5ull, 64ull}) {
      INFO(ranks << " ranks, chunk " << chunk);
      Buffers send = sendBuffers(Collective::AllGather, ranks, chunk);
      Buffers recv = runPlan(Collective::AllGather, ranks, chunk, send);
      for (int r = 0; r < ranks; ++r)
        for (int s = 0; s < ranks; ++s)
          CHECK(std::memcmp(recv[size_t(r)].data() + s * chunk,
                            send[size_t(s)].data(), chunk) == 0);
      send = sendBuffers(Collective::AllToAll, ranks, chunk);
      recv = runPlan(Collective::AllToAll, ranks, chunk, send);
      for (int r = 0; r < ranks; ++r)
        for (int s = 0; s < ranks; ++s)
          CHECK(std::memcmp(recv[size_t(r)].data() + s * chunk,
                            send[size_t(s)].data() + r * chunk, chunk) == 0);
    }
}

TEST_CASE("reduce-scatter: the copies, then the sum kernel on the CPU, in "
          "rank order, in every dtype",
          "[collectives]") {
  std::string err;
  const std::string src = codegen::reduceChunksSource();
  if (nvrtcAvailable()) {
    auto r = compileWithNvrtc(src, "sm_90", err);
    INFO(err);
    CHECK(r);
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  const int ranks = 3;
  const uint64_t n = 1000; // values a chunk
  for (const char *dtype : {"f32", "f16", "bf16"}) {
    INFO(dtype);
    const bool f32 = std::string(dtype) == "f32";
    const uint64_t size = f32 ? 4 : 2, chunk = n * size;
    auto k = compileForHost(src, codegen::reduceChunksSignature(dtype), err);
    INFO(err);
    REQUIRE(k);
    // Values of the dtype, as float and as stored.
    auto store = [&](float x, uint8_t *p) {
      if (f32) {
        std::memcpy(p, &x, 4);
        return;
      }
      const uint16_t h = dtype[1] == '1' ? toHalf(x) : toBf16(x);
      std::memcpy(p, &h, 2);
    };
    auto value = [&](const uint8_t *p) {
      if (f32) {
        float x;
        std::memcpy(&x, p, 4);
        return x;
      }
      uint16_t h;
      std::memcpy(&h, p, 2);
      return dtype[1] == '1' ? halfValue(h) : bf16Value(h);
    };
    Buffers send(ranks, std::vector<uint8_t>(ranks * chunk));
    for (auto &b : send)
      for (uint64_t i = 0; i < ranks * n; ++i)
        store(normal(rng), b.data() + i * size);
    Buffers recv = runPlan(Collective::ReduceScatter, ranks, chunk, send);
    for (int r = 0; r < ranks; ++r) {
      std::vector<uint8_t> out(chunk);
      REQUIRE(k->launch(
          {2, 1, 1}, {64, 1, 1},
          {KernelArg::buffer(recv[size_t(r)].data()), KernelArg::scalar(ranks),
           KernelArg::scalar(int64_t(n)), KernelArg::buffer(out.data())},
          err));
      for (uint64_t i = 0; i < n; ++i) {
        float sum = 0.f; // rank r's chunk of every rank, in rank order
        for (int s = 0; s < ranks; ++s)
          sum += value(send[size_t(s)].data() + (r * n + i) * size);
        std::vector<uint8_t> want(size);
        store(sum, want.data());
        INFO("rank " << r << " value " << i);
        CHECK(std::memcmp(out.data() + i * size, want.data(), size) == 0);
      }
    }
  }
}

TEST_CASE("all-reduce plans: scatter, the sum kernel on the CPU, gather, "
          "every rank the rank-order sum",
          "[collectives]") {
  std::string err;
  auto k = compileForHost(codegen::reduceChunksSource(),
                          codegen::reduceChunksSignature("f32"), err);
  INFO(err);
  REQUIRE(k);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int ranks : {1, 2, 3, 4, 7})
    for (uint64_t elems : {0ull, 1ull, 5ull, 1000ull, 1001ull}) {
      INFO(ranks << " ranks, " << elems << " values");
      const AllReducePlan plan = allReducePlan(ranks, elems, 4);
      std::vector<std::vector<float>> data(static_cast<size_t>(ranks),
                                           std::vector<float>(elems));
      for (auto &d : data)
        for (float &x : d)
          x = normal(rng);
      std::vector<float> want(elems, 0.f);
      for (uint64_t i = 0; i < elems; ++i)
        for (int r = 0; r < ranks; ++r)
          want[i] += data[size_t(r)][i];
      // Chunks tile the values once.
      uint64_t covered = 0;
      for (int c = 0; c < ranks; ++c) {
        CHECK(plan.begin[size_t(c)] == covered);
        covered += plan.count[size_t(c)];
        CHECK(ranks * plan.count[size_t(c)] * 4 <= plan.scratchBytes);
      }
      CHECK(covered == elems);
      std::vector<std::vector<uint8_t>> scratch(
          size_t(ranks), std::vector<uint8_t>(plan.scratchBytes));
      auto bytesOf = [](std::vector<float> &v) {
        return reinterpret_cast<uint8_t *>(v.data());
      };
      for (const PeerCopy &p : plan.scatter) {
        REQUIRE(p.srcOffset + p.bytes <= elems * 4);
        REQUIRE(p.dstOffset + p.bytes <= plan.scratchBytes);
        std::memcpy(scratch[size_t(p.dst)].data() + p.dstOffset,
                    bytesOf(data[size_t(p.src)]) + p.srcOffset, p.bytes);
      }
      for (int c = 0; c < ranks; ++c)
        if (plan.count[size_t(c)] > 0)
          REQUIRE(k->launch({2, 1, 1}, {64, 1, 1},
                            {KernelArg::buffer(scratch[size_t(c)].data()),
                             KernelArg::scalar(ranks),
                             KernelArg::scalar(int64_t(plan.count[size_t(c)])),
                             KernelArg::buffer(data[size_t(c)].data() +
                                               plan.begin[size_t(c)])},
                            err));
      for (const PeerCopy &p : plan.gather) {
        REQUIRE(p.srcOffset + p.bytes <= elems * 4);
        REQUIRE(p.dstOffset == p.srcOffset);
        std::memcpy(bytesOf(data[size_t(p.dst)]) + p.dstOffset,
                    bytesOf(data[size_t(p.src)]) + p.srcOffset, p.bytes);
      }
      for (int r = 0; r < ranks; ++r)
        CHECK(std::memcmp(data[size_t(r)].data(), want.data(), elems * 4) == 0);
    }
}

TEST_CASE("the SM copy kernel runs the all-gather and all-to-all copy plans "
          "on the CPU",
          "[collectives]") {
  std::string err;
  const std::string src = codegen::copyChunksSource();
  if (nvrtcAvailable()) {
    auto r = compileWithNvrtc(src, "sm_90", err);
    INFO(err);
    CHECK(r);
  }
  auto k = compileForHost(
      src,
      KernelSignature{"cuts_copy_chunks",
                      {{"items", "const unsigned long long *__restrict__"},
                       {"count", "unsigned"}}},
      err);
  INFO(err);
  REQUIRE(k);
  for (Collective c : {Collective::AllGather, Collective::AllToAll})
    for (int ranks : {1, 2, 3}) {
      INFO(collectiveName(c) << " over " << ranks);
      const uint64_t chunk = 48;
      Buffers send = sendBuffers(c, ranks, chunk);
      Buffers recv(size_t(ranks),
                   std::vector<uint8_t>(recvBytes(c, ranks, chunk)));
      std::vector<unsigned long long> items;
      for (const PeerCopy &p : copyPlan(c, ranks, chunk)) {
        items.push_back(uintptr_t(send[size_t(p.src)].data() + p.srcOffset));
        items.push_back(uintptr_t(recv[size_t(p.dst)].data() + p.dstOffset));
        items.push_back(p.bytes);
      }
      REQUIRE(k->launch({2, 1, 1}, {2, 1, 1},
                        {KernelArg::buffer(items.data()),
                         KernelArg::scalar(unsigned(items.size() / 3))},
                        err));
      CHECK(recv == runPlan(c, ranks, chunk, send));
    }
}
