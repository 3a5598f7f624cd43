//===- ConstEval.cpp - host tensors for constant folding ------------------===//
#include "cuts/Dialect/Cuts/ConstEval.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace mlir;

namespace cuts {

HostTensor::HostTensor(RankedTensorType t)
    : type(t), floating(llvm::isa<FloatType>(t.getElementType())) {
  if (isFloat())
    f.assign(numel(), 0.0);
  else
    i.assign(numel(), 0);
}

// fp16 and bf16 without APFloat, which took 30 s for BERT-base's weights:
// an IEEE binary format of `mant` fraction bits, `expBits` exponent bits.
namespace {
struct SmallFloat {
  int mant, expBits;
  int bias() const { return (1 << (expBits - 1)) - 1; }
};
constexpr SmallFloat kF16{10, 5}, kBF16{7, 8};

std::optional<SmallFloat> smallFloat(Type t) {
  if (t.isF16())
    return kF16;
  if (t.isBF16())
    return kBF16;
  return std::nullopt;
}

// A float's fp16 (f.expBits == 5) or bf16 bits, rounded to nearest even
// with integer operations: the weights' common case, 110 M of them in a
// BERT-base.
uint64_t floatBits(float v, SmallFloat f) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if (f.expBits == 8) { // bf16: fp32's exponent, the top 16 bits rounded
    if ((x & 0x7fffffffu) > 0x7f800000u)
      return (x >> 16) | 0x40u;
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  }
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u)
    return sign | 0x7e00u;
  if (x >= 0x477ff000u) // 65520 and up round to infinity
    return sign | 0x7c00u;
  if (x < 0x38800000u) { // below 2^-14: units of 2^-24
    float a;
    std::memcpy(&a, &x, 4);
    return sign | uint32_t(std::nearbyint(a * 16777216.0f));
  }
  uint32_t h = ((x >> 23) - 112) << 10 | (x & 0x7fffffu) >> 13;
  uint32_t rest = x & 0x1fffu;
  return sign | (h + (rest > 0x1000u || (rest == 0x1000u && (h & 1u))));
}

// v rounded to nearest even in format f (overflow to infinity).
double decodeSmall(uint64_t bits, SmallFloat f);
double roundSmall(double v, SmallFloat f) {
  if (double(float(v)) == v) // exactly a float: one rounding, in integers
    return decodeSmall(floatBits(float(v), f), f);
  if (!std::isfinite(v) || v == 0)
    return v;
  double a = std::fabs(v);
  int e = 0;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, 1 - f.bias());
  double quantum = std::ldexp(1.0, exp - f.mant);
  double r = std::nearbyint(a / quantum) * quantum;
  double largest = std::ldexp(2.0 - std::ldexp(1.0, -f.mant),
                              (1 << f.expBits) - 2 - f.bias());
  return std::copysign(r > largest ? INFINITY : r, v);
}

// The bits of v, which format f holds exactly (roundSmall's result).
uint64_t encodeSmall(double v, SmallFloat f) {
  if (double(float(v)) == v)
    return floatBits(float(v), f);
  uint64_t sign = std::signbit(v) ? uint64_t(1) << (f.mant + f.expBits) : 0;
  uint64_t expAll = (uint64_t(1) << f.expBits) - 1;
  if (std::isnan(v))
    return sign | expAll << f.mant | uint64_t(1) << (f.mant - 1);
  if (std::isinf(v))
    return sign | expAll << f.mant;
  double a = std::fabs(v);
  if (a == 0)
    return sign;
  int e = 0;
  std::frexp(a, &e);
  int exp = e - 1;
  if (exp < 1 - f.bias()) // subnormal
    return sign | uint64_t(a / std::ldexp(1.0, 1 - f.bias() - f.mant));
  uint64_t frac =
      uint64_t(a / std::ldexp(1.0, exp - f.mant)) - (uint64_t(1) << f.mant);
  return sign | uint64_t(exp + f.bias()) << f.mant | frac;
}

double decodeSmall(uint64_t bits, SmallFloat f) {
  if (f.expBits == 8) { // bf16: the top half of an fp32
    uint32_t x = uint32_t(bits) << 16;
    float v;
    std::memcpy(&v, &x, 4);
    return v;
  }
  // fp16: its fields moved into an fp32's (subnormals scaled exactly).
  uint32_t sign = uint32_t(bits & 0x8000u) << 16, exp = (bits >> 10) & 0x1fu,
           frac = bits & 0x3ffu, x;
  if (exp == 0) {
    float v = float(frac) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  x = sign |
      (exp == 31 ? 0x7f800000u | frac << 13 : (exp + 112) << 23 | frac << 13);
  float v;
  std::memcpy(&v, &x, 4);
  return v;
}
} // namespace

std::optional<uint16_t> halfBits(Type t, float v) {
  if (auto small = smallFloat(t))
    return uint16_t(floatBits(v, *small));
  return std::nullopt;
}

ElementsAttr rawAttr(RankedTensorType type, llvm::ArrayRef<char> raw,
                     StringRef blobName) {
  return DenseResourceElementsAttr::get(
      type, blobName,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t)));
}

double roundToType(Type t, double v) {
  if (auto ft = llvm::dyn_cast<FloatType>(t)) {
    if (ft.isF64())
      return v;
    if (ft.isF32())
      return double(float(v));
    if (auto small = smallFloat(ft))
      return roundSmall(v, *small);
    llvm::APFloat x(v);
    bool lost;
    x.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    return x.convertToDouble();
  }
  auto it = llvm::cast<IntegerType>(t);
  unsigned w = it.getWidth();
  if (w == 1)
    return v != 0.0 ? 1.0 : 0.0;
  if (std::isnan(v))
    return 0.0;
  // Out-of-range float to int is undefined in C++; saturate first, then wrap
  // to the width (ONNX leaves the overflow case unspecified).
  double lim = 9.2e18;
  int64_t x = int64_t(std::max(-lim, std::min(lim, std::trunc(v))));
  if (w < 64) {
    uint64_t mask = (uint64_t(1) << w) - 1;
    uint64_t u = uint64_t(x) & mask;
    if (it.isUnsigned())
      return double(u);
    if (u >> (w - 1))
      return double(int64_t(u | ~mask));
    return double(int64_t(u));
  }
  return double(x);
}

void HostTensor::set(int64_t k, double v) {
  if (isFloat())
    f[k] = roundToType(type.getElementType(), v);
  else
    i[k] = int64_t(roundToType(type.getElementType(), v));
}

void HostTensor::setI(int64_t k, int64_t v) {
  if (isFloat()) {
    f[k] = roundToType(type.getElementType(), double(v));
    return;
  }
  unsigned w = type.getElementType().getIntOrFloatBitWidth();
  if (w == 1)
    v = v != 0;
  else if (w < 64) {
    uint64_t mask = (uint64_t(1) << w) - 1;
    uint64_t u = uint64_t(v) & mask;
    bool isSigned = !type.getElementType().isUnsignedInteger();
    v = (isSigned && (u >> (w - 1))) ? int64_t(u | ~mask) : int64_t(u);
  }
  i[k] = v;
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::optional<int64_t> majorAxis(ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                                 int64_t axis, int64_t multiple) {
  int64_t before = 1, at = 1;
  for (int64_t i = 0; i < axis; ++i)
    before *= from[i];
  for (int64_t b = 0; b < int64_t(to.size()); ++b) {
    if (at == before && to[b] % multiple == 0)
      return b;
    at *= to[b];
    if (at > before)
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  size_t r = std::max(a.size(), b.size());
  SmallVector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t x = k < r - a.size() ? 1 : a[k - (r - a.size())];
    int64_t y = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[k] = x == 1 ? y : x;
  }
  return out;
}

int64_t broadcastOffset(int64_t k, ArrayRef<int64_t> to,
                        ArrayRef<int64_t> from) {
  int64_t off = 0, fromStride = 1;
  size_t lead = to.size() - from.size();
  for (int64_t d = int64_t(to.size()) - 1; d >= 0; --d) {
    int64_t idx = k % to[d];
    k /= to[d];
    if (size_t(d) < lead)
      continue;
    int64_t fd = from[d - lead];
    if (fd != 1)
      off += idx * fromStride;
    fromStride *= fd;
  }
  return off;
}

// Decodes element k of a raw little-endian buffer of element type t.
static double decodeFloat(FloatType t, const char *p) {
  if (t.isF32()) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (t.isF64()) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  unsigned w = t.getWidth();
  uint64_t bits = 0;
  std::memcpy(&bits, p, (w + 7) / 8);
  if (auto small = smallFloat(t))
    return decodeSmall(bits, *small);
  llvm::APFloat x(t.getFloatSemantics(), llvm::APInt(w, bits));
  bool lost;
  x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return x.convertToDouble();
}

static int64_t decodeInt(IntegerType t, const char *p) {
  unsigned w = t.getWidth();
  unsigned bytes = w == 1 ? 1 : (w + 7) / 8;
  uint64_t u = 0;
  std::memcpy(&u, p, bytes);
  if (w == 1)
    return u != 0;
  if (w < 64 && !t.isUnsigned() && (u >> (w - 1)) & 1)
    u |= ~((uint64_t(1) << w) - 1);
  return int64_t(u);
}

static unsigned storageBytes(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w == 1 ? 1 : (w + 7) / 8;
}

static std::optional<HostTensor> fromRaw(RankedTensorType type,
                                         ArrayRef<char> data) {
  HostTensor t(type);
  Type et = type.getElementType();
  unsigned eb = storageBytes(et);
  int64_t n = t.numel();
  if (int64_t(data.size()) != n * int64_t(eb))
    return std::nullopt;
  if (et.isF32()) { // the common case, without a type test per element
    for (int64_t k = 0; k < n; ++k) {
      float v;
      std::memcpy(&v, data.data() + k * 4, 4);
      t.f[k] = v;
    }
    return t;
  }
  if (auto small = smallFloat(et)) {
    for (int64_t k = 0; k < n; ++k) {
      uint16_t bits;
      std::memcpy(&bits, data.data() + k * 2, 2);
      t.f[k] = decodeSmall(bits, *small);
    }
    return t;
  }
  for (int64_t k = 0; k < n; ++k) {
    const char *p = data.data() + k * eb;
    if (auto ft = llvm::dyn_cast<FloatType>(et))
      t.f[k] = decodeFloat(ft, p);
    else
      t.i[k] = decodeInt(llvm::cast<IntegerType>(et), p);
  }
  return t;
}

std::optional<HostTensor> toHost(Attribute attr) {
  auto elems = llvm::dyn_cast_or_null<ElementsAttr>(attr);
  if (!elems)
    return std::nullopt;
  auto type = llvm::dyn_cast<RankedTensorType>(elems.getShapedType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  Type et = type.getElementType();
  if (!llvm::isa<FloatType, IntegerType>(et))
    return std::nullopt;
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    return fromRaw(type, blob->getData());
  }
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  HostTensor t(type);
  int64_t n = t.numel();
  if (llvm::isa<FloatType>(et)) {
    int64_t k = 0;
    if (dense.isSplat()) {
      std::fill(
          t.f.begin(), t.f.end(),
          roundToType(et,
                      dense.getSplatValue<llvm::APFloat>().convertToDouble()));
      return t;
    }
    for (llvm::APFloat v : dense.getValues<llvm::APFloat>()) {
      bool lost;
      v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      t.f[k++] = v.convertToDouble();
    }
    return k == n ? std::optional<HostTensor>(std::move(t)) : std::nullopt;
  }
  bool isUnsigned = et.isUnsignedInteger() || et.isInteger(1);
  auto read = [&](const llvm::APInt &v) {
    return isUnsigned ? int64_t(v.getZExtValue()) : v.getSExtValue();
  };
  if (dense.isSplat()) {
    std::fill(t.i.begin(), t.i.end(), read(dense.getSplatValue<llvm::APInt>()));
    return t;
  }
  int64_t k = 0;
  for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
    t.i[k++] = read(v);
  return k == n ? std::optional<HostTensor>(std::move(t)) : std::nullopt;
}

ElementsAttr toAttr(const HostTensor &t, StringRef blobName) {
  Type et = t.type.getElementType();
  int64_t n = t.numel();
  bool splat = n > 0;
  for (int64_t k = 1; k < n && splat; ++k)
    splat = t.isFloat()
                ? t.f[k] == t.f[0] || (std::isnan(t.f[k]) && std::isnan(t.f[0]))
                : t.i[k] == t.i[0];
  if (n <= kMaxInlineElements || splat) {
    int64_t m = splat ? 1 : n;
    if (auto ft = llvm::dyn_cast<FloatType>(et)) {
      SmallVector<llvm::APFloat> vals;
      for (int64_t k = 0; k < m; ++k) {
        llvm::APFloat v(t.f[k]);
        bool lost;
        v.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
        vals.push_back(v);
      }
      return DenseElementsAttr::get(t.type, vals);
    }
    unsigned w = et.getIntOrFloatBitWidth();
    SmallVector<llvm::APInt> vals;
    for (int64_t k = 0; k < m; ++k)
      vals.push_back(llvm::APInt(w, uint64_t(t.i[k]), /*isSigned=*/w > 1));
    return DenseElementsAttr::get(t.type, vals);
  }
  unsigned eb = storageBytes(et);
  std::vector<char> raw(size_t(n) * eb);
  if (auto small = smallFloat(et)) {
    for (int64_t k = 0; k < n; ++k) {
      uint64_t bits = encodeSmall(roundSmall(t.f[k], *small), *small);
      std::memcpy(raw.data() + k * eb, &bits, eb);
    }
    return DenseResourceElementsAttr::get(
        t.type, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t)));
  }
  for (int64_t k = 0; k < n; ++k) {
    char *p = raw.data() + k * eb;
    if (auto ft = llvm::dyn_cast<FloatType>(et)) {
      if (ft.isF32()) {
        float v = float(t.f[k]);
        std::memcpy(p, &v, 4);
      } else if (ft.isF64()) {
        std::memcpy(p, &t.f[k], 8);
      } else {
        llvm::APFloat v(t.f[k]);
        bool lost;
        v.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
        uint64_t bits = v.bitcastToAPInt().getZExtValue();
        std::memcpy(p, &bits, eb);
      }
    } else {
      uint64_t u = uint64_t(t.i[k]);
      std::memcpy(p, &u, eb);
    }
  }
  return DenseResourceElementsAttr::get(
      t.type, blobName,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t)));
}

} // namespace cuts
