//===- TensorFile.cpp - .npy and ONNX TensorProto (.pb) files -------------===//
#include "tools/support/TensorFile.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace cuts {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 34;

bool checkedCount(const std::vector<int64_t> &shape, int64_t &n) {
  n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxElements / d))
      return false;
    n *= d;
  }
  return true;
}

/// Bytes per element of the dtypes a HostArray holds; 0 for others.
size_t elementBytes(const std::string &dtype) {
  if (dtype == "float64" || dtype == "int64")
    return 8;
  if (dtype == "float32" || dtype == "int32")
    return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16")
    return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool")
    return 1;
  return 0;
}

bool isFloatType(const std::string &dtype) {
  return dtype == "float32" || dtype == "float64" || dtype == "float16" ||
         dtype == "bfloat16";
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
           mant = h & 0x3ffu, bits;
  if (exp == 0) {
    float f = std::ldexp(float(mant), -24); // zero or subnormal
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Round to nearest even.
uint16_t floatToHalf(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (std::isnan(v))
    return uint16_t(sign | 0x7e00);
  if (a >= 65520.0) // rounds to infinity
    return uint16_t(sign | 0x7c00);
  if (a < std::ldexp(1.0, -14)) // subnormal: units of 2^-24
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0)));
  int e = 0;
  double m = std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  double q = std::nearbyint((m * 2 - 1) * 1024);
  int exp = e - 1 + 15;
  if (q == 1024) {
    q = 0;
    ++exp;
  }
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  return uint16_t(sign | (exp << 10) | int(q));
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBfloat16(double v) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

/// The element at p of `dtype` as a double.
double decode(const std::string &dtype, const uint8_t *p) {
  auto read = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  if (dtype == "float32")
    return read(float());
  if (dtype == "float64")
    return read(double());
  if (dtype == "float16")
    return halfToFloat(read(uint16_t()));
  if (dtype == "bfloat16")
    return bfloat16ToFloat(read(uint16_t()));
  if (dtype == "int64")
    return double(read(int64_t()));
  if (dtype == "int32")
    return read(int32_t());
  if (dtype == "int16")
    return read(int16_t());
  if (dtype == "int8")
    return read(int8_t());
  return *p; // uint8, bool
}

int64_t decodeInteger(const std::string &dtype, const uint8_t *p) {
  auto read = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return int64_t(v);
  };
  if (dtype == "int64")
    return read(int64_t());
  if (dtype == "int32")
    return read(int32_t());
  if (dtype == "int16")
    return read(int16_t());
  if (dtype == "int8")
    return read(int8_t());
  if (dtype == "uint8" || dtype == "bool")
    return *p;
  return int64_t(decode(dtype, p));
}

/// Writes v (rounded to `dtype`) at p.
void encode(const std::string &dtype, double v, uint8_t *p) {
  auto write = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  if (dtype == "float32")
    write(float(v));
  else if (dtype == "float64")
    write(v);
  else if (dtype == "float16")
    write(floatToHalf(v));
  else if (dtype == "bfloat16")
    write(floatToBfloat16(v));
  else if (dtype == "int64")
    write(int64_t(v));
  else if (dtype == "int32")
    write(int32_t(v));
  else if (dtype == "int16")
    write(int16_t(v));
  else if (dtype == "int8")
    write(int8_t(v));
  else if (dtype == "bool")
    *p = v != 0;
  else
    *p = uint8_t(v);
}

void encodeInteger(const std::string &dtype, int64_t v, uint8_t *p) {
  if (isFloatType(dtype)) {
    encode(dtype, double(v), p);
    return;
  }
  if (dtype == "bool") {
    *p = v != 0;
    return;
  }
  size_t eb = elementBytes(dtype);
  for (size_t b = 0; b < eb; ++b) // little-endian two's complement
    p[b] = uint8_t(uint64_t(v) >> (8 * b));
}

/// The range of an integer dtype.
void integerRange(const std::string &dtype, int64_t &lo, int64_t &hi) {
  lo = std::numeric_limits<int64_t>::min();
  hi = std::numeric_limits<int64_t>::max();
  if (dtype == "int32")
    lo = std::numeric_limits<int32_t>::min(),
    hi = std::numeric_limits<int32_t>::max();
  else if (dtype == "int16")
    lo = std::numeric_limits<int16_t>::min(),
    hi = std::numeric_limits<int16_t>::max();
  else if (dtype == "int8")
    lo = -128, hi = 127;
  else if (dtype == "uint8")
    lo = 0, hi = 255;
  else if (dtype == "bool")
    lo = 0, hi = 1;
}

// The value of 'key' in the .npy header dict, up to the next ',' at depth 0
// or the closing brace.
std::string dictValue(const std::string &h, const std::string &key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return "";
  size_t c = h.find(':', k);
  if (c == std::string::npos)
    return "";
  int depth = 0;
  size_t e = c + 1;
  for (; e < h.size(); ++e) {
    char ch = h[e];
    if (ch == '(')
      ++depth;
    else if (ch == ')')
      --depth;
    else if ((ch == ',' && depth == 0) || ch == '}')
      break;
  }
  std::string v = h.substr(c + 1, e - c - 1);
  size_t a = v.find_first_not_of(" "), b = v.find_last_not_of(" ");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

/// The dtype of a .npy descr ("'<i8'"), empty if not one we read.
std::string npyDtype(std::string descr) {
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"') &&
      descr.back() == descr.front())
    descr = descr.substr(1, descr.size() - 2);
  static const std::pair<const char *, const char *> table[] = {
      {"<f4", "float32"}, {"<f8", "float64"}, {"<f2", "float16"},
      {"<i8", "int64"},   {"<i4", "int32"},   {"<i2", "int16"},
      {"|i1", "int8"},    {"<i1", "int8"},    {"|u1", "uint8"},
      {"<u1", "uint8"},   {"|b1", "bool"},    {"<b1", "bool"}};
  for (const auto &[d, t] : table)
    if (descr == d)
      return t;
  return "";
}

/// The .npy descr a dtype is written with.
const char *npyDescr(const std::string &dtype) {
  static const std::pair<const char *, const char *> table[] = {
      {"float32", "<f4"}, {"float64", "<f8"}, {"float16", "<f2"},
      {"int64", "<i8"},   {"int32", "<i4"},   {"int16", "<i2"},
      {"int8", "|i1"},    {"uint8", "|u1"},   {"bool", "|b1"}};
  for (const auto &[t, d] : table)
    if (dtype == t)
      return d;
  return nullptr;
}

/// The dtype of a TensorProto data_type, empty if not one we read.
std::string protoDtype(uint64_t t) {
  switch (t) {
  case 1:
    return "float32";
  case 2:
    return "uint8";
  case 3:
    return "int8";
  case 5:
    return "int16";
  case 6:
    return "int32";
  case 7:
    return "int64";
  case 9:
    return "bool";
  case 10:
    return "float16";
  case 11:
    return "float64";
  case 16:
    return "bfloat16";
  default:
    return "";
  }
}

bool readVarint(const std::string &b, size_t &pos, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= b.size())
      return false;
    uint8_t byte = uint8_t(b[pos++]);
    v |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

} // namespace

double decodeElement(const std::string &dtype, const uint8_t *p) {
  return decode(dtype, p);
}

void encodeElement(const std::string &dtype, double v, uint8_t *p) {
  encode(dtype, v, p);
}

size_t HostArray::size() const {
  size_t eb = elementBytes(dtype);
  return eb ? bytes.size() / eb : 0;
}

bool HostArray::isFloat() const { return isFloatType(dtype); }

double HostArray::value(size_t i) const {
  return decode(dtype, bytes.data() + i * elementBytes(dtype));
}

int64_t HostArray::integer(size_t i) const {
  return decodeInteger(dtype, bytes.data() + i * elementBytes(dtype));
}

HostArray HostArray::fromDoubles(std::vector<int64_t> shape,
                                 const std::string &dtype,
                                 const std::vector<double> &values) {
  HostArray a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  size_t eb = elementBytes(dtype);
  a.bytes.assign(values.size() * eb, 0);
  for (size_t i = 0; i < values.size(); ++i)
    encode(dtype, values[i], a.bytes.data() + i * eb);
  return a;
}

HostArray HostArray::fromFloats(std::vector<int64_t> shape,
                                const std::vector<float> &values) {
  HostArray a;
  a.shape = std::move(shape);
  a.dtype = "float32";
  a.bytes.resize(values.size() * 4);
  if (!values.empty())
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

std::optional<HostArray>
convertArray(const HostArray &a, const std::string &dtype, std::string &error) {
  size_t eb = elementBytes(dtype);
  if (eb == 0) {
    error = "cannot hold " + dtype + " values";
    return std::nullopt;
  }
  if (a.dtype == dtype)
    return a;
  HostArray out;
  out.name = a.name;
  out.shape = a.shape;
  out.dtype = dtype;
  size_t n = a.size();
  out.bytes.assign(n * eb, 0);
  if (a.isFloat()) {
    if (!isFloatType(dtype)) {
      error = "the file holds " + a.dtype + " values, the model takes " +
              dtype + " (write the file as " + dtype +
              "; floating-point values are never converted to integers)";
      return std::nullopt;
    }
    for (size_t i = 0; i < n; ++i)
      encode(dtype, a.value(i), out.bytes.data() + i * eb);
    return out;
  }
  int64_t lo, hi;
  integerRange(dtype, lo, hi);
  for (size_t i = 0; i < n; ++i) {
    int64_t v = a.integer(i);
    uint8_t *p = out.bytes.data() + i * eb;
    if (isFloatType(dtype)) {
      encode(dtype, double(v), p);
      double back = decode(dtype, p);
      if (!(std::fabs(back) < 9e18 && int64_t(back) == v)) {
        error = "element " + std::to_string(i) + " (" + std::to_string(v) +
                ") of the file's " + a.dtype + " values is not exact in " +
                dtype;
        return std::nullopt;
      }
      continue;
    }
    if (v < lo || v > hi) {
      error = "element " + std::to_string(i) + " (" + std::to_string(v) +
              ") of the file's " + a.dtype + " values does not fit in " + dtype;
      return std::nullopt;
    }
    encodeInteger(dtype, v, p);
  }
  return out;
}

std::optional<HostArray> parseNpy(const std::string &bytes,
                                  std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = "not a .npy file (bad magic)";
    return std::nullopt;
  }
  int major = uint8_t(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      error = "truncated .npy header";
      return std::nullopt;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    error = ".npy version " + std::to_string(major) + " is not supported";
    return std::nullopt;
  }
  if (headerLen > bytes.size() - start) {
    error = "truncated .npy header";
    return std::nullopt;
  }
  std::string h = bytes.substr(start, headerLen);
  std::string descr = dictValue(h, "descr");
  std::string fortran = dictValue(h, "fortran_order");
  std::string shapeText = dictValue(h, "shape");
  if (fortran != "False") {
    error = ".npy arrays in Fortran order are not supported";
    return std::nullopt;
  }
  HostArray a;
  a.dtype = npyDtype(descr);
  if (a.dtype.empty()) {
    error = ".npy dtype " + descr +
            " is not supported (little-endian float32, float64, float16, "
            "int64, int32, int16, int8, uint8, bool)";
    return std::nullopt;
  }
  size_t elem = elementBytes(a.dtype);
  if (shapeText.size() < 2 || shapeText.front() != '(' ||
      shapeText.back() != ')') {
    error = "bad .npy shape '" + shapeText + "'";
    return std::nullopt;
  }
  std::stringstream ss(shapeText.substr(1, shapeText.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t p = item.find_first_not_of(" ");
    if (p == std::string::npos)
      continue;
    item = item.substr(p);
    if (item.empty() || item.size() > 15 ||
        item.find_first_not_of("0123456789 L") != std::string::npos ||
        item[0] < '0' || item[0] > '9') {
      error = "bad .npy shape '" + shapeText + "'";
      return std::nullopt;
    }
    a.shape.push_back(std::stoll(item));
  }
  int64_t n;
  if (!checkedCount(a.shape, n)) {
    error = ".npy shape too large";
    return std::nullopt;
  }
  size_t dataStart = start + headerLen;
  if (bytes.size() - dataStart < size_t(n) * elem) {
    error =
        ".npy data is truncated (" + std::to_string(n) + " elements expected)";
    return std::nullopt;
  }
  a.bytes.assign(bytes.begin() + std::ptrdiff_t(dataStart),
                 bytes.begin() + std::ptrdiff_t(dataStart + size_t(n) * elem));
  if (a.dtype == "bool")
    for (uint8_t &b : a.bytes)
      b = b != 0;
  return a;
}

std::optional<HostArray> parseTensorProto(const std::string &b,
                                          std::string &error) {
  // Fields: dims = 1 (varint, packed or not), data_type = 2, float_data = 4
  // (fixed32), int32_data = 5 (varint), int64_data = 7 (varint), name = 8,
  // raw_data = 9, double_data = 10 (fixed64); repeated fields packed or
  // not. Others are skipped.
  HostArray a;
  uint64_t dataType = 0;
  std::string raw;
  bool haveRaw = false;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int64_t> ints; // int32_data and int64_data
  auto truncated = [&]() -> std::optional<HostArray> {
    error = "truncated TensorProto";
    return std::nullopt;
  };
  size_t pos = 0;
  while (pos < b.size()) {
    uint64_t key;
    if (!readVarint(b, pos, key))
      return truncated();
    uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      uint64_t v;
      if (!readVarint(b, pos, v))
        return truncated();
      if (field == 1)
        a.shape.push_back(int64_t(v));
      else if (field == 2)
        dataType = v;
      else if (field == 5 || field == 7)
        ints.push_back(int64_t(v));
    } else if (wire == 2) {
      uint64_t len;
      if (!readVarint(b, pos, len) || len > b.size() - pos)
        return truncated();
      std::string payload = b.substr(pos, len);
      pos += len;
      if (field == 1 || field == 5 || field == 7) {
        size_t q = 0;
        uint64_t v;
        while (q < payload.size()) {
          if (!readVarint(payload, q, v))
            return truncated();
          if (field == 1)
            a.shape.push_back(int64_t(v));
          else
            ints.push_back(int64_t(v));
        }
      } else if (field == 4) {
        for (size_t q = 0; q + 4 <= payload.size(); q += 4) {
          float f;
          std::memcpy(&f, payload.data() + q, 4);
          floats.push_back(f);
        }
      } else if (field == 10) {
        for (size_t q = 0; q + 8 <= payload.size(); q += 8) {
          double d;
          std::memcpy(&d, payload.data() + q, 8);
          doubles.push_back(d);
        }
      } else if (field == 8) {
        a.name = payload;
      } else if (field == 9) {
        raw = payload;
        haveRaw = true;
      }
    } else if (wire == 5) {
      if (b.size() - pos < 4)
        return truncated();
      if (field == 4) {
        float f;
        std::memcpy(&f, b.data() + pos, 4);
        floats.push_back(f);
      }
      pos += 4;
    } else if (wire == 1) {
      if (b.size() - pos < 8)
        return truncated();
      if (field == 10) {
        double d;
        std::memcpy(&d, b.data() + pos, 8);
        doubles.push_back(d);
      }
      pos += 8;
    } else {
      error = "not a TensorProto (wire type " + std::to_string(wire) + ")";
      return std::nullopt;
    }
  }
  int64_t n;
  if (!checkedCount(a.shape, n)) {
    error = "TensorProto shape too large";
    return std::nullopt;
  }
  a.dtype = protoDtype(dataType);
  if (a.dtype.empty()) {
    error = "TensorProto data type " + std::to_string(dataType) +
            " is not supported (FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, "
            "INT32, INT16, INT8, UINT8, BOOL)";
    return std::nullopt;
  }
  size_t eb = elementBytes(a.dtype);
  if (haveRaw || n == 0) {
    if (raw.size() != size_t(n) * eb) {
      error = "TensorProto raw_data holds " + std::to_string(raw.size()) +
              " bytes, the shape needs " + std::to_string(size_t(n) * eb);
      return std::nullopt;
    }
    a.bytes.assign(raw.begin(), raw.end());
    if (a.dtype == "bool")
      for (uint8_t &x : a.bytes)
        x = x != 0;
    return a;
  }
  // The typed field of the data type.
  const char *fieldName = a.dtype == "float32"   ? "float_data"
                          : a.dtype == "float64" ? "double_data"
                          : a.dtype == "int64"   ? "int64_data"
                                                 : "int32_data";
  size_t have = a.dtype == "float32"   ? floats.size()
                : a.dtype == "float64" ? doubles.size()
                                       : ints.size();
  if (have != size_t(n)) {
    error = std::string("TensorProto ") + fieldName + " holds " +
            std::to_string(have) + " values, the shape needs " +
            std::to_string(n);
    return std::nullopt;
  }
  a.bytes.assign(size_t(n) * eb, 0);
  for (size_t i = 0; i < size_t(n); ++i) {
    uint8_t *p = a.bytes.data() + i * eb;
    if (a.dtype == "float32") {
      std::memcpy(p, &floats[i], 4);
    } else if (a.dtype == "float64") {
      std::memcpy(p, &doubles[i], 8);
    } else if (a.dtype == "float16" || a.dtype == "bfloat16") {
      uint16_t bits = uint16_t(ints[i]); // the bit pattern
      std::memcpy(p, &bits, 2);
    } else {
      encodeInteger(a.dtype, ints[i], p);
    }
  }
  return a;
}

std::optional<HostArray> readTensorFile(const std::string &path,
                                        std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = path + ": cannot read";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  auto ends = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return path.size() >= n && path.compare(path.size() - n, n, ext) == 0;
  };
  std::string err;
  std::optional<HostArray> a;
  if (ends(".npy"))
    a = parseNpy(bytes, err);
  else if (ends(".pb"))
    a = parseTensorProto(bytes, err);
  else
    err = "unknown tensor file type (use .npy or .pb)";
  if (!a)
    error = path + ": " + err;
  return a;
}

bool writeNpy(const std::string &path, const HostArray &in,
              std::string &error) {
  const HostArray *a = &in;
  std::optional<HostArray> converted;
  if (!npyDescr(in.dtype)) {
    // NumPy has no bfloat16 (nor any dtype we do not know): float32.
    std::vector<double> values(in.size());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = in.value(i);
    converted = HostArray::fromDoubles(in.shape, "float32", values);
    a = &*converted;
  }
  std::string shape = "(";
  for (int64_t d : a->shape)
    shape += std::to_string(d) + ",";
  if (a->shape.size() > 1)
    shape.pop_back(); // "(3,)" for rank 1, "(2,3)" otherwise
  shape += ")";
  std::string h = std::string("{'descr': '") + npyDescr(a->dtype) +
                  "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts at a multiple of 64 bytes; the header ends in \n.
  size_t total = 10 + h.size() + 1;
  h += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    error = path + ": cannot write";
    return false;
  }
  f.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {char(h.size() & 0xff), char(h.size() >> 8)};
  f.write(len, 2);
  f.write(h.data(), std::streamsize(h.size()));
  f.write(reinterpret_cast<const char *>(a->bytes.data()),
          std::streamsize(a->bytes.size()));
  if (!f) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

bool matchesReference(const HostArray &got, const HostArray &ref,
                      double tolerance, std::string &detail) {
  char text[128];
  if (!got.isFloat()) {
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      bad += ref.isFloat() ? double(got.integer(i)) != ref.value(i)
                           : got.integer(i) != ref.integer(i);
    std::snprintf(text, sizeof text, "%s, %zu of %zu elements differ",
                  got.dtype.c_str(), bad, got.size());
    detail = text;
    return bad == 0;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got.value(i), r = ref.value(i), d = g - r;
    // A NaN or infinity the reference has too matches (a cast's special
    // values); anywhere else it makes the error NaN.
    if ((std::isnan(g) && std::isnan(r)) || (std::isinf(r) && g == r))
      continue;
    num += d * d;
    den += r * r;
  }
  double e = std::isnan(num) ? NAN
             : den > 0       ? std::sqrt(num / den)
                             : std::sqrt(num);
  std::snprintf(text, sizeof text, "relative L2 %.3e", e);
  detail = text;
  return e <= tolerance; // NaN fails
}

double defaultTolerance(const std::string &dtype) {
  return dtype == "float16" ? 1e-2 : dtype == "bfloat16" ? 5e-2 : 1e-5;
}

} // namespace cuts
