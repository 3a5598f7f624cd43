//===- Options.cpp - the command lines of cuts and cuts-run ---------------===//
#include "tools/support/Options.h"

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

} // namespace cuts::cli
