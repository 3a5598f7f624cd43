// Softmax, layer normalisation and row reductions generated from DFGs, run
// on the CPU against double-precision references.
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Reduction.h"
#include "perfmodel/Describe.h"

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
    for (int64_t L : {24, 64}) {
      const int64_t rows = 10;
      RowSpec s;
      s.op = op, s.epsilon = 1e-5;
      // Whole rows per thread in two shared layouts, and rows over 8 or
      // 32 lanes (warp shuffles, registers only).
      for (const char *format : {"NCHW", "CNHW", "lanes8", "lanes32"}) {
        // The transposed layout once per op is enough (host compiles cost).
        if (std::string(format) == "CNHW" && L != 64)
          continue;
        TileParams p;
        p.Nb = 4, p.Nt = 1, p.Cin = L;
        for (size_t f = 0; f < sharedFormats().size(); ++f)
          if (formatName(int(f)) == format)
            p.format = int(f);
        if (std::string(format) == "lanes8")
          p.Wb = 8;
        if (std::string(format) == "lanes32") {
          if (L % 32)
            continue;
          p.Nb = 2, p.Nt = 2, p.Wb = 32;
        }
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
        INFO("op " << int(op) << " length " << L << " format " << format);
        CHECK(std::sqrt(num / den) <= 1e-5);
        if (L == 64 && std::string(format) == "NCHW") {
          auto c = compileWithNvrtc(emitSource(*k), "sm_90", err);
          INFO(err);
          CHECK(c);
        }
      }
    }
  }
}
