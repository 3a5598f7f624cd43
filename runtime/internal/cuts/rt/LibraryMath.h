//===- LibraryMath.h - the data type and math of a library call -*- C++ -*-===//
#ifndef CUTS_RUNTIME_LIBRARYMATH_H
#define CUTS_RUNTIME_LIBRARYMATH_H

#include <cstdint>

namespace cuts::rt {

/// What a library call's tensors hold and how it multiplies them; it always
/// accumulates in fp32. Fp32 stores fp32 and uses no reduced-precision
/// math; Tf32 stores fp32 and lets the tensor cores round the operands to
/// tf32; Fp16 and Bf16 store 16-bit tensors (bias and residual included)
/// on the tensor cores. The values are part of the artifact format.
enum class LibraryMath : int64_t { Fp32 = 0, Tf32 = 1, Fp16 = 2, Bf16 = 3 };

inline bool validLibraryMath(int64_t v) { return v >= 0 && v <= 3; }

/// Bytes per element of the call's tensors.
inline uint64_t libraryElementBytes(LibraryMath m) {
  return m == LibraryMath::Fp16 || m == LibraryMath::Bf16 ? 2 : 4;
}

/// The manifest dtype of the call's tensors.
inline const char *libraryDtype(LibraryMath m) {
  return m == LibraryMath::Fp16   ? "float16"
         : m == LibraryMath::Bf16 ? "bfloat16"
                                  : "float32";
}

/// "fp32", "tf32", "fp16", "bf16".
inline const char *libraryMathName(LibraryMath m) {
  static const char *const names[] = {"fp32", "tf32", "fp16", "bf16"};
  return names[int64_t(m)];
}

} // namespace cuts::rt

#endif // CUTS_RUNTIME_LIBRARYMATH_H
