//===- Checksum.cpp - XXH64 -----------------------------------------------===//
#include "cuts/rt/Checksum.h"

#include <cstring>

namespace cuts::rt {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                   kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                   kP5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads, whatever the host's order.
uint64_t read64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}
uint32_t read32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

uint64_t accumulate(uint64_t acc, uint64_t word) {
  return rotl(acc + word * kP2, 31) * kP1;
}

uint64_t merge(uint64_t acc, uint64_t lane) {
  return (acc ^ accumulate(0, lane)) * kP1 + kP4;
}

} // namespace

Xxh64::Xxh64() : lane{kP1 + kP2, kP2, 0, 0 - kP1} {}

void Xxh64::update(const uint8_t *p, size_t n) {
  total += n;
  if (tailBytes > 0) { // complete the held stripe first
    size_t take = n < 32 - tailBytes ? n : 32 - tailBytes;
    std::memcpy(tail + tailBytes, p, take);
    tailBytes += take, p += take, n -= take;
    if (tailBytes < 32)
      return;
    for (int i = 0; i < 4; ++i)
      lane[i] = accumulate(lane[i], read64(tail + 8 * i));
    tailBytes = 0;
  }
  uint64_t v0 = lane[0], v1 = lane[1], v2 = lane[2], v3 = lane[3];
  for (; n >= 32; p += 32, n -= 32) {
    v0 = accumulate(v0, read64(p));
    v1 = accumulate(v1, read64(p + 8));
    v2 = accumulate(v2, read64(p + 16));
    v3 = accumulate(v3, read64(p + 24));
  }
  lane[0] = v0, lane[1] = v1, lane[2] = v2, lane[3] = v3;
  std::memcpy(tail, p, n);
  tailBytes = n;
}

uint64_t Xxh64::digest() const {
  uint64_t acc = kP5;
  if (total >= 32) {
    acc = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) +
          rotl(lane[3], 18);
    for (uint64_t v : lane)
      acc = merge(acc, v);
  }
  acc += total;
  const uint8_t *p = tail, *end = tail + tailBytes;
  for (; end - p >= 8; p += 8)
    acc = rotl(acc ^ accumulate(0, read64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    acc = rotl(acc ^ (uint64_t(read32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p)
    acc = rotl(acc ^ (*p * kP5), 11) * kP1;
  acc ^= acc >> 33;
  acc *= kP2;
  acc ^= acc >> 29;
  acc *= kP3;
  return acc ^ (acc >> 32);
}

uint64_t xxh64(const uint8_t *p, size_t n) {
  Xxh64 h;
  h.update(p, n);
  return h.digest();
}

} // namespace cuts::rt
