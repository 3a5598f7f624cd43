//===- Options.cpp - the command lines of cuts and cuts-run ---------------===//
#include "tools/support/Options.h"

#include <cstring>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cuts::cli {

int error(const std::string &file, const std::string &what) {
  std::fprintf(stderr, "cuts: error: %s%s\n",
               file.empty() ? "" : (file + ": ").c_str(), what.c_str());
  return 1;
}

bool ArgList::value(std::string &out) {
  if (k + 1 >= args.size())
    return false;
  out = args[++k];
  return true;
}

bool ArgList::number(double &out, double lo, double hi) {
  std::string s;
  if (!value(s) || s.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == 0 && std::isfinite(out) && out >= lo && out <= hi;
}

bool ArgList::integer(int64_t &out, int64_t lo, int64_t hi) {
  std::string s;
  if (!value(s) || s.empty())
    return false;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  out = int64_t(v);
  return *end == 0 && out >= lo && out <= hi;
}

int positional(const ArgList &a, std::string &slot, const std::string &command,
               const char *what) {
  if (a.isOption())
    return error("", command + ": unknown option '" + a.arg() + "'");
  if (!slot.empty())
    return error("", command + ": more than one " + what + " given ('" + slot +
                         "' and '" + a.arg() + "')");
  slot = a.arg();
  return 0;
}

namespace {

// "1x3x224x224" -> {1, 3, 224, 224}; a scalar is the empty string.
bool parseDims(const std::string &s, std::vector<int64_t> &dims) {
  dims.clear();
  if (s.empty())
    return true;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t x = s.find('x', pos);
    std::string part = s.substr(pos, x == std::string::npos ? x : x - pos);
    if (part.empty() || part.size() > 12 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    dims.push_back(std::stoll(part));
    if (x == std::string::npos)
      break;
    pos = x + 1;
  }
  return true;
}

} // namespace

int parseInputShape(ArgList &a,
                    std::map<std::string, std::vector<int64_t>> &shapes) {
  const std::string prefix = "--input-shape=";
  std::string spec;
  if (a.is("--input-shape")) {
    if (!a.value(spec)) {
      error("", "--input-shape needs NAME=D0xD1x...");
      return -1;
    }
  } else if (a.arg().rfind(prefix, 0) == 0) {
    spec = a.arg().substr(prefix.size());
  } else {
    return 0;
  }
  size_t eq = spec.rfind('=');
  std::vector<int64_t> dims;
  if (eq == std::string::npos || eq == 0 ||
      !parseDims(spec.substr(eq + 1), dims)) {
    error("", "--input-shape '" + spec +
                  "' is not NAME=D0xD1x... (e.g. input=1x3x224x224)");
    return -1;
  }
  if (!shapes.emplace(spec.substr(0, eq), dims).second) {
    error("", "--input-shape given twice for '" + spec.substr(0, eq) + "'");
    return -1;
  }
  return 1;
}

bool parseByteSize(const std::string &text, uint64_t &out) {
  std::string t = text;
  for (const char *unit : {"iB", "B"}) // 2GiB, 2GB, 2G
    if (t.size() > std::strlen(unit) &&
        t.compare(t.size() - std::strlen(unit), std::string::npos, unit) == 0) {
      t.resize(t.size() - std::strlen(unit));
      break;
    }
  double scale = 1;
  if (!t.empty() && std::strchr("KMGT", t.back())) {
    scale = double(uint64_t(1)
                   << (10 * (std::strchr("KMGT", t.back()) - "KMGT" + 1)));
    t.pop_back();
  }
  char *end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end || !(v > 0) || v * scale > 1e18)
    return false;
  out = uint64_t(v * scale);
  return out > 0;
}

bool parseOrdinals(const std::string &list, std::vector<int> &out) {
  out.clear();
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char *end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || item[0] == '-' || v < 0 || v >= (1 << 20))
      return false;
    out.push_back(int(v));
    at = comma + 1;
  }
  return !out.empty();
}

} // namespace cuts::cli
