//===- Compress.h - ScaleDNN's 3:1 FP32 weight compression ------*- C++ -*-===//
//
// The format weights travel in between devices when a user asks for it
// (ScaleDNN §IV-C, Figure 8): three fp32 values in one 32-bit word.
//
//   bit 31      escape: 0 here
//   bit 30      base flag: 1 the exponent's high nibble is 0111, 0 it is 0110
//   bits 29-20  value 0: sign (1), exponent's low nibble (4), mantissa's top
//   bits 19-10  value 1   5 bits (the lower 18 truncated: the format's
//   bits 9-0    value 2   error, below 2^-5 of the value)
//
// A group of three can be packed only where all three exponents share one
// of the two bases, which holds for |x| in [2^-31, 2) (the paper: 99 % of
// weights). Any other group (a zero, a denormal, a large value, inf, NaN,
// or mixed bases) escapes: bit 31 set, bits 30-0 the group's index in the
// side array, which holds its three values exactly. The last group of a
// count not divisible by 3 is padded with its first value.
//
// compress3to1/decompress3to1 are the scalar reference; the GPU kernels
// (codegen/emit/Compress.h) produce the same packed words and restore the
// same values, but may list escaped groups in another order (so escape
// words may carry other indices).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_COMPRESS_H
#define CUTS_RUNTIME_COMPRESS_H

#include <cstdint>
#include <vector>

namespace cuts::rt {

constexpr uint32_t kEscapeBit = 1u << 31;
constexpr uint32_t kBaseFlagBit = 1u << 30;

struct Compressed3to1 {
  uint64_t count = 0;          // fp32 values
  std::vector<uint32_t> words; // one per group of three
  std::vector<float> side;     // escaped groups, three values each
  uint64_t bytes() const { return 4 * words.size() + 4 * side.size(); }
};

/// Packs three values into `word`; false where the group must escape.
bool packGroup(const float v[3], uint32_t &word);
/// The three values a packed (not escaped) word holds.
void unpackGroup(uint32_t word, float v[3]);

Compressed3to1 compress3to1(const float *x, uint64_t n);
/// Writes c.count values; false (nothing written past the check) where the
/// words and side array do not fit together.
bool decompress3to1(const Compressed3to1 &c, float *out);

/// bf16 truncation, the comparison point (ScaleDNN §V-D): a value's high
/// half, a NaN kept a NaN; and back.
uint16_t truncateBf16(float x);
float expandBf16(uint16_t b);

/// How far a reconstruction is from the original: the largest absolute
/// difference and the relative L2 error (NaN compares equal to NaN).
struct ReconstructionError {
  double maxAbs = 0, relL2 = 0;
};
ReconstructionError reconstructionError(const float *original,
                                        const float *restored, uint64_t n);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_COMPRESS_H
