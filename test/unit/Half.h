//===- Half.h - 16-bit float references for the tests ----------*- C++ -*-===//
//
// fp16 and bf16 values and round-to-nearest-even computed from the formats'
// definitions, independent of the code under test.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TEST_UNIT_HALF_H
#define CUTS_TEST_UNIT_HALF_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace cuts::test {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The format's value of bit pattern h, computed from its definition.
inline float halfValue(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(m, -24);
  return float(h & 0x8000 ? -v : v);
}
inline float bf16Value(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }

// The nearest of the format's values to x, ties to the even pattern.
inline uint16_t nearestEven(float x, float (*toFloat)(uint16_t),
                            uint16_t maxFinite, uint16_t infinity) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(double(x));
  // Binary search of the positive patterns (values rise with the pattern).
  uint32_t lo = 0, hi = maxFinite;
  while (hi - lo > 1) {
    uint32_t m = (lo + hi) / 2;
    (double(toFloat(uint16_t(m))) <= a ? lo : hi) = m;
  }
  double dl = a - toFloat(uint16_t(lo)), dh = toFloat(uint16_t(hi)) - a;
  if (a >= toFloat(maxFinite)) { // past the largest: half an ulp rounds up
    double ulp = toFloat(maxFinite) - toFloat(uint16_t(maxFinite - 1));
    return uint16_t(sign |
                    (a >= toFloat(maxFinite) + ulp / 2 ? infinity : maxFinite));
  }
  uint32_t r = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  return uint16_t(sign | r);
}

inline uint16_t toHalf(float x) {
  return nearestEven(x, halfValue, 0x7bff, 0x7c00);
}
inline uint16_t toBf16(float x) {
  return nearestEven(x, bf16Value, 0x7f7f, 0x7f80);
}

// Random values in a 16-bit format and their floats.
inline void random16(std::mt19937 &rng, bool bf16, std::vector<uint16_t> &bits,
                     std::vector<float> &values) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (size_t i = 0; i < bits.size(); ++i) {
    float x = dist(rng);
    // Round by the reference rule, then read the value back.
    bits[i] = bf16 ? toBf16(x) : toHalf(x);
    values[i] = bf16 ? bf16Value(bits[i]) : halfValue(bits[i]);
  }
}

} // namespace cuts::test

#endif // CUTS_TEST_UNIT_HALF_H
