//===- Options.h - the command lines of cuts and cuts-run -------*- C++ -*-===//
//
// Both programs read `cuts <command> [options]` the same way: options in
// any order, one positional argument (the model or directory), and each
// error one line on stderr, `cuts: error: [FILE: ]WHAT`, with exit code 1.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_SUPPORT_OPTIONS_H
#define CUTS_TOOLS_SUPPORT_OPTIONS_H

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace cuts::cli {

/// Prints `cuts: error: [file: ]what` and returns 1, the exit code.
int error(const std::string &file, const std::string &what);

/// A command's arguments, walked in order:
///   for (ArgList a(args); a.next();)
///     if (a.is("--jobs")) { if (!a.integer(jobs, 1, 1024)) return ...; }
class ArgList {
public:
  explicit ArgList(const std::vector<std::string> &args) : args(args) {}

  /// Moves to the next argument; false past the last.
  bool next() { return ++k < args.size(); }
  const std::string &arg() const { return args[k]; }
  bool is(const char *option) const { return args[k] == option; }
  /// An option (it starts with '-') rather than a positional argument.
  bool isOption() const { return !args[k].empty() && args[k][0] == '-'; }

  /// The argument after the current option (consumed); false if none.
  bool value(std::string &out);
  /// A number in [lo, hi] after the current option; false if there is
  /// none or it is not one.
  bool number(double &out, double lo, double hi);
  /// A whole number in [lo, hi] after the current option.
  bool integer(int64_t &out, int64_t lo, int64_t hi);
  template <typename Int> bool integer(Int &out, int64_t lo, int64_t hi) {
    int64_t v = 0;
    bool ok = integer(v, lo, hi);
    out = Int(v);
    return ok;
  }

  /// The smallest positive double: number(v, kPositive, kNoLimit) takes any
  /// finite number above 0.
  static constexpr double kPositive = std::numeric_limits<double>::min();
  static constexpr double kNoLimit = std::numeric_limits<double>::max();

private:
  const std::vector<std::string> &args;
  size_t k = size_t(-1);
};

/// "0,1,1": device ordinals (each 0 to 2^20, at least one) into `out`;
/// false where the list is anything else.
bool parseOrdinals(const std::string &list, std::vector<int> &out);

/// A size in bytes: a positive number with an optional K, M, G or T
/// suffix, binary (2GiB, 2G and 2GB are the same); false where it is not.
bool parseByteSize(const std::string &text, uint64_t &out);

/// Takes the current argument as `command`'s one positional argument into
/// `slot`: 0 when it is one, else the error's exit code (an unknown option,
/// or a second positional; `what` names it: "model", "directory").
int positional(const ArgList &a, std::string &slot, const std::string &command,
               const char *what);

/// "--input-shape NAME=D0xD1x..." (or "--input-shape=...") at the current
/// argument, into `shapes`: 0 when it is not that option, 1 when taken, -1
/// on error (printed).
int parseInputShape(ArgList &a,
                    std::map<std::string, std::vector<int64_t>> &shapes);

} // namespace cuts::cli

#endif // CUTS_TOOLS_SUPPORT_OPTIONS_H
