//===- Compress.cpp - the 3:1 format's scalar reference -------------------===//
#include "cuts/rt/Compress.h"

#include <cmath>
#include <cstring>

namespace cuts::rt {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value's 10-bit field where its exponent's high nibble is `base`.
bool field(float v, uint32_t base, uint32_t &out) {
  const uint32_t u = bitsOf(v), exponent = (u >> 23) & 0xff;
  if (exponent >> 4 != base)
    return false;
  out = (u >> 31) << 9 | (exponent & 0xf) << 5 | (u >> 18 & 0x1f);
  return true;
}

} // namespace

bool packGroup(const float v[3], uint32_t &word) {
  for (uint32_t base : {0x7u, 0x6u}) {
    uint32_t f[3];
    if (field(v[0], base, f[0]) && field(v[1], base, f[1]) &&
        field(v[2], base, f[2])) {
      word = (base == 0x7 ? kBaseFlagBit : 0) | f[0] << 20 | f[1] << 10 | f[2];
      return true;
    }
  }
  return false;
}

void unpackGroup(uint32_t word, float v[3]) {
  const uint32_t base = word & kBaseFlagBit ? 0x7 : 0x6;
  for (int i = 0; i < 3; ++i) {
    const uint32_t f = word >> (20 - 10 * i) & 0x3ff;
    v[i] = floatOf((f >> 9) << 31 | (base << 4 | (f >> 5 & 0xf)) << 23 |
                   (f & 0x1f) << 18);
  }
}

Compressed3to1 compress3to1(const float *x, uint64_t n) {
  Compressed3to1 c;
  c.count = n;
  for (uint64_t g = 0; g * 3 < n; ++g) {
    float v[3];
    for (uint64_t i = 0; i < 3; ++i)
      v[i] = g * 3 + i < n ? x[g * 3 + i] : x[g * 3];
    uint32_t word = 0;
    if (!packGroup(v, word)) {
      word = kEscapeBit | uint32_t(c.side.size() / 3);
      c.side.insert(c.side.end(), v, v + 3);
    }
    c.words.push_back(word);
  }
  return c;
}

bool decompress3to1(const Compressed3to1 &c, float *out) {
  if (c.words.size() != (c.count + 2) / 3 || c.side.size() % 3 != 0)
    return false;
  for (uint64_t g = 0; g < c.words.size(); ++g) {
    const uint32_t w = c.words[g];
    float v[3];
    if (w & kEscapeBit) {
      const uint64_t at = uint64_t(w & ~kEscapeBit) * 3;
      if (at + 3 > c.side.size())
        return false;
      std::memcpy(v, &c.side[at], sizeof v);
    } else {
      unpackGroup(w, v);
    }
    for (uint64_t i = 0; i < 3 && g * 3 + i < c.count; ++i)
      out[g * 3 + i] = v[i];
  }
  return true;
}

uint16_t truncateBf16(float x) {
  const uint32_t u = bitsOf(x);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return uint16_t(u >> 16 | (nan ? 0x40u : 0u));
}

float expandBf16(uint16_t b) { return floatOf(uint32_t(b) << 16); }

ReconstructionError reconstructionError(const float *original,
                                        const float *restored, uint64_t n) {
  ReconstructionError e;
  double diff = 0, norm = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double a = original[i], b = restored[i];
    if (std::isnan(a) && std::isnan(b))
      continue;
    const double d = a == b ? 0 : std::fabs(a - b); // inf == inf
    e.maxAbs = std::max(e.maxAbs, d);
    if (std::isfinite(a)) {
      diff += d * d;
      norm += a * a;
    }
  }
  e.relL2 = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return e;
}

} // namespace cuts::rt
