// Softmax, layer normalisation and row reductions generated from DFGs, run
// on the CPU against double-precision references.
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Reduction.h"
#include "perfmodel/Arch.h"
#include "perfmodel/Describe.h"
#include "perfmodel/ParamSearch.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

TEST_CASE("generated row ops match the reference on the CPU", "[codegen]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.f, 2.f);
  for (RowOp op : {RowOp::Softmax, RowOp::LayerNorm, RowOp::ReduceSum,
                   RowOp::ReduceMean, RowOp::ReduceMax}) {
    // 24: one thread a row; 48 and 197 (ViT's tokens): past kMaxThreadRow,
    // so lanes only, whose last ones overhang the row where G does not
    // divide it (48 over 32 lanes in runs of 2, 197 in runs of 1).
    for (int64_t L : {24, 64, 48, 197}) {
      const int64_t rows = 10;
      RowSpec s;
      s.op = op, s.epsilon = 1e-5;
      // Whole rows per thread in two shared layouts, and rows over 8 or
      // 32 lanes (warp shuffles, registers only).
      for (const char *format : {"NCHW", "CNHW", "lanes8", "lanes32"}) {
        const std::string f = format;
        bool lanes = f.rfind("lanes", 0) == 0;
        // The transposed layout once per op is enough (host compiles cost).
        if ((!lanes && L > kMaxThreadRow) || (f == "CNHW" && L != 24) ||
            (f == "lanes8" && L != 64 && L != 197) ||
            (f == "lanes32" && L == 24))
          continue;
        TileParams p;
        p.Nb = 4, p.Nt = 1, p.Cin = L;
        for (size_t i = 0; i < sharedFormats().size(); ++i)
          if (formatName(int(i)) == f)
            p.format = int(i);
        if (f == "lanes8")
          p.Wb = 8;
        if (f == "lanes32")
          p.Nb = 2, p.Nt = 2, p.Wb = 32;
        std::string err;
        auto k = buildRowOp("row_test", describeRows(rows, L), s, p, err);
        INFO(err);
        REQUIRE(k);
        std::vector<float> x(rows * L), scale(L), bias(L);
        for (float &v : x)
          v = dist(rng);
        for (float &v : scale)
          v = dist(rng);
        for (float &v : bias)
          v = dist(rng);
        bool rowsOut = op == RowOp::Softmax || op == RowOp::LayerNorm;
        std::vector<float> y(rowsOut ? rows * L : rows,
                             std::numeric_limits<float>::quiet_NaN());
        std::map<std::string, void *> bufs{{"X", x.data()},
                                           {"Y", y.data()},
                                           {"scale", scale.data()},
                                           {"bias", bias.data()}};
        bool ran = runOnHost(*k, bufs, err);
        INFO(err);
        REQUIRE(ran);
        double num = 0, den = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const float *row = x.data() + r * L;
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j < L; ++j)
            mx = std::max(mx, double(row[j])), sum += row[j];
          double mean = sum / L, var = 0, esum = 0;
          for (int64_t j = 0; j < L; ++j) {
            var += (row[j] - mean) * (row[j] - mean);
            esum += std::exp(row[j] - mx);
          }
          var /= L;
          auto check = [&](double want, float got) {
            REQUIRE(!std::isnan(got));
            num += (got - want) * (got - want);
            den += want * want;
          };
          if (op == RowOp::ReduceSum)
            check(sum, y[r]);
          else if (op == RowOp::ReduceMean)
            check(mean, y[r]);
          else if (op == RowOp::ReduceMax)
            check(mx, y[r]);
          else
            for (int64_t j = 0; j < L; ++j)
              check(op == RowOp::Softmax
                        ? std::exp(row[j] - mx) / esum
                        : (row[j] - mean) / std::sqrt(var + s.epsilon) *
                                  scale[j] +
                              bias[j],
                    y[r * L + j]);
        }
        INFO("op " << int(op) << " length " << L << " format " << f);
        CHECK(std::sqrt(num / den) <= 1e-5);
        if (L == 197 && f == "lanes32") {
          auto c = compileWithNvrtc(emitSource(*k), "sm_90", err);
          INFO(err);
          CHECK(c);
        }
      }
    }
  }
}

TEST_CASE("a row past kMaxThreadRow is not one thread's", "[codegen]") {
  TileParams p;
  p.Nb = 4, p.Nt = 1, p.Cin = kMaxThreadRow + 1;
  std::string err;
  CHECK(!buildRowOp("row", describeRows(8, kMaxThreadRow + 1), RowSpec(), p,
                    err));
  CHECK(err.find("lanes share it") != std::string::npos);
  p.Wb = 32; // the same rows over a warp's lanes
  CHECK(
      buildRowOp("row", describeRows(8, kMaxThreadRow + 1), RowSpec(), p, err));
}

TEST_CASE("every row kernel the search keeps is under 64 KB of source",
          "[codegen]") {
  // Rows a thread walks alone, ViT's 197, and lane shares from 31 to 64
  // (1000 and 2000 overhang 32 lanes; 2048 is the longest kept whole).
  for (int64_t L : {32, 197, 1000, 2000, 2048})
    for (RowOp op : {RowOp::Softmax, RowOp::LayerNorm, RowOp::ReduceMax}) {
      RowSpec s;
      s.op = op;
      int sets = 0;
      forEachParams(describeRows(64, L), *findArch("h100"),
                    [&](const TileParams &p) {
                      std::string err;
                      auto k = buildRowOp("r", describeRows(64, L), s, p, err);
                      INFO(err);
                      REQUIRE(k);
                      INFO("row " << L << ", " << paramsText(p));
                      CHECK(emitSource(*k).size() <= 64 * 1024);
                      ++sets;
                    });
      CHECK(sets > 0);
    }
}
