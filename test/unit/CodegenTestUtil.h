// Helpers shared by the code generator's tests: random inputs, poisoned
// outputs and the relative L2 error against a reference.
#ifndef CUTS_TEST_UNIT_CODEGENTESTUTIL_H
#define CUTS_TEST_UNIT_CODEGENTESTUTIL_H

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

} // namespace cuts::test

#endif // CUTS_TEST_UNIT_CODEGENTESTUTIL_H
