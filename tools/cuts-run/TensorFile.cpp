//===- TensorFile.cpp - .npy and ONNX TensorProto (.pb) files -------------===//
#include "TensorFile.h"

#include <cstring>
#include <fstream>
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
  if (start + headerLen > bytes.size()) {
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
  int elem = 0;
  if (descr == "'<f4'")
    elem = 4;
  else if (descr == "'<f8'" || descr == "'<i8'")
    elem = 8;
  else {
    error =
        ".npy dtype " + descr + " is not supported (float32, float64, int64)";
    return std::nullopt;
  }
  HostArray a;
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
        item.find_first_not_of("0123456789 L") != std::string::npos) {
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
  a.data.resize(size_t(n));
  const char *p = bytes.data() + dataStart;
  for (int64_t i = 0; i < n; ++i) {
    if (descr == "'<f4'") {
      std::memcpy(&a.data[i], p + 4 * i, 4);
    } else if (descr == "'<f8'") {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      a.data[i] = float(d);
    } else {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      a.data[i] = float(v);
    }
  }
  return a;
}

std::optional<HostArray> parseTensorProto(const std::string &b,
                                          std::string &error) {
  // Fields: dims = 1 (varint, packed or not), data_type = 2, float_data =
  // 4 (packed fixed32), name = 8, raw_data = 9, double_data = 10, int64_data
  // = 7. Others are skipped.
  HostArray a;
  uint64_t dataType = 0;
  std::string raw;
  std::vector<float> floats;
  size_t pos = 0;
  while (pos < b.size()) {
    uint64_t key;
    if (!readVarint(b, pos, key)) {
      error = "truncated TensorProto";
      return std::nullopt;
    }
    uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      uint64_t v;
      if (!readVarint(b, pos, v)) {
        error = "truncated TensorProto";
        return std::nullopt;
      }
      if (field == 1)
        a.shape.push_back(int64_t(v));
      else if (field == 2)
        dataType = v;
    } else if (wire == 2) {
      uint64_t len;
      if (!readVarint(b, pos, len) || len > b.size() - pos) {
        error = "truncated TensorProto";
        return std::nullopt;
      }
      std::string payload = b.substr(pos, len);
      pos += len;
      if (field == 1) {
        size_t q = 0;
        uint64_t v;
        while (q < payload.size() && readVarint(payload, q, v))
          a.shape.push_back(int64_t(v));
      } else if (field == 4) {
        for (size_t q = 0; q + 4 <= payload.size(); q += 4) {
          float f;
          std::memcpy(&f, payload.data() + q, 4);
          floats.push_back(f);
        }
      } else if (field == 8) {
        a.name = payload;
      } else if (field == 9) {
        raw = payload;
      }
    } else if (wire == 5) {
      if (pos + 4 > b.size()) {
        error = "truncated TensorProto";
        return std::nullopt;
      }
      if (field == 4) {
        float f;
        std::memcpy(&f, b.data() + pos, 4);
        floats.push_back(f);
      }
      pos += 4;
    } else if (wire == 1) {
      pos += 8;
      if (pos > b.size()) {
        error = "truncated TensorProto";
        return std::nullopt;
      }
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
  if (dataType != 1) {
    error = "TensorProto data type " + std::to_string(dataType) +
            " is not supported (float only)";
    return std::nullopt;
  }
  if (!raw.empty()) {
    if (raw.size() != size_t(n) * 4) {
      error = "TensorProto raw_data holds " + std::to_string(raw.size()) +
              " bytes, the shape needs " + std::to_string(n * 4);
      return std::nullopt;
    }
    a.data.resize(size_t(n));
    std::memcpy(a.data.data(), raw.data(), raw.size());
  } else {
    if (int64_t(floats.size()) != n) {
      error = "TensorProto float_data holds " + std::to_string(floats.size()) +
              " values, the shape needs " + std::to_string(n);
      return std::nullopt;
    }
    a.data = std::move(floats);
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

bool writeNpy(const std::string &path, const HostArray &a, std::string &error) {
  std::string shape = "(";
  for (int64_t d : a.shape)
    shape += std::to_string(d) + ",";
  if (a.shape.size() > 1)
    shape.pop_back(); // "(3,)" for rank 1, "(2,3)" otherwise
  shape += ")";
  std::string h =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
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
  f.write(reinterpret_cast<const char *>(a.data.data()),
          std::streamsize(a.data.size() * 4));
  if (!f) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace cuts
