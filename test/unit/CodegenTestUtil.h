// Helpers shared by the code generator's tests: random inputs, poisoned
// outputs, the relative L2 error against a reference, and the ops the tests
// generate, stated by their shapes and described for the generator by the
// performance model's describers (the compiler's one description).
#ifndef CUTS_TEST_UNIT_CODEGENTESTUTIL_H
#define CUTS_TEST_UNIT_CODEGENTESTUTIL_H

#include "codegen/ops/Pool.h"
#include "perfmodel/Describe.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace cuts::test {

inline std::vector<float> randomVector(std::mt19937 &rng, size_t n,
                                       float stddev = 1.0f) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// An output filled with NaN: an element the kernel forgets stays NaN and
/// fails the comparison.
inline std::vector<float> poisoned(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

/// ||got - want|| / ||want||, infinite once any element was not written.
struct RelativeL2 {
  double num = 0, den = 0;
  bool unwritten = false;
  void add(double got, double want) {
    if (std::isnan(got))
      unwritten = true;
    num += (got - want) * (got - want);
    den += want * want;
  }
  double value() const { return unwritten ? INFINITY : std::sqrt(num / den); }
};

/// A convolution x[N, C, H, W] by w[K, C / group, FH, FW] into
/// y[N, K, OH, OW], as a test's reference computes it.
struct ConvCase {
  int64_t N = 1, C = 1, H = 1, W = 1, K = 1, FH = 1, FW = 1;
  int64_t SH = 1, SW = 1, PH = 0, PW = 0, DH = 1, DW = 1;
  int64_t group = 1, OH = 1, OW = 1;

  OpDesc desc() const {
    return describeConv({N, C, H, W}, {K, C / group, FH, FW}, {N, K, OH, OW},
                        group, {{SH, SW}, {PH, PW, PH, PW}, {DH, DW}});
  }
};

/// Square images and windows, symmetric pads.
inline ConvCase convCase(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t f,
                         int64_t stride, int64_t pad, int64_t dil = 1,
                         int64_t group = 1) {
  ConvCase s;
  s.N = n, s.C = c, s.H = s.W = hw, s.K = k, s.FH = s.FW = f;
  s.SH = s.SW = stride, s.PH = s.PW = pad, s.DH = s.DW = dil;
  s.group = group;
  s.OH = s.OW = (hw + 2 * pad - dil * (f - 1) - 1) / stride + 1;
  return s;
}

/// Pooling x[N, C, H, W] into y[N, C, OH, OW].
struct PoolCase {
  int64_t N = 1, C = 1, H = 1, W = 1, FH = 1, FW = 1;
  int64_t SH = 1, SW = 1, PH = 0, PW = 0, DH = 1, DW = 1;
  int64_t OH = 1, OW = 1;
  bool max = true;
  bool countIncludePad = false; // average pooling: divide by FH x FW

  OpDesc desc() const {
    return describePool({N, C, H, W}, {N, C, OH, OW}, {FH, FW},
                        {{SH, SW}, {PH, PW, PH, PW}, {DH, DW}});
  }
  codegen::Pooling pooling() const {
    return max               ? codegen::Pooling::Max
           : countIncludePad ? codegen::Pooling::AverageWithPad
                             : codegen::Pooling::Average;
  }
};

/// y[batch, M, N] = A[batch, M, K] B[batch, K, N] (batch 1: no batch axis),
/// A stored K x M where transA, B N x K where transB.
inline OpDesc matmulDesc(int64_t M, int64_t K, int64_t N, bool transA = false,
                         bool transB = false, int64_t batch = 1) {
  std::vector<int64_t> a =
      transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
  std::vector<int64_t> b =
      transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
  std::vector<int64_t> y{M, N};
  if (batch > 1) {
    a.insert(a.begin(), batch);
    b.insert(b.begin(), batch);
    y.insert(y.begin(), batch);
  }
  return describeMatMul(a, b, y, transA, transB);
}

} // namespace cuts::test

#endif // CUTS_TEST_UNIT_CODEGENTESTUTIL_H
