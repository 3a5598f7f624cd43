//===- Arch.cpp - GPU descriptors for the performance model ---------------===//
//
// The built-in descriptors are perfmodel/arch/*.json, compiled in as strings
// (embed.cmake writes ArchData.inc) so `cuts` needs no data files at run time.
// The same parser reads them and user files, so a built-in descriptor is
// valid exactly when a user could have written it.
//
//===----------------------------------------------------------------------===//

#include "perfmodel/Arch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <variant>

namespace cuts {
namespace {

using Json = nlohmann::json;

/// {file name, JSON text} for each perfmodel/arch/*.json, in glob order.
const std::pair<const char *, const char *> kArchFiles[] = {
#include "ArchData.inc"
};

/// The order knownArchs() promises; the glob's alphabetical order is not it.
/// Embedded files not listed here follow, so a new descriptor needs no code.
const char *const kBuiltinOrder[] = {"v100.json",     "rtx2080.json",
                                     "a100-sxm.json", "h100-sxm.json",
                                     "h200.json",     "mi300x.json"};

using Member =
    std::variant<int GpuArch::*, long long GpuArch::*, double GpuArch::*>;

/// The numeric fields in GpuArch order, which is also the JSON order. One
/// table drives parsing, validation and serialisation, so they cannot drift.
const std::pair<const char *, Member> kNumericFields[] = {
    {"numSM", &GpuArch::numSM},
    {"perfPeakFp32", &GpuArch::perfPeakFp32},
    {"perfPeakFp16", &GpuArch::perfPeakFp16},
    {"bwGlobal", &GpuArch::bwGlobal},
    {"transGlobalBytes", &GpuArch::transGlobalBytes},
    {"latShared", &GpuArch::latShared},
    {"maxSharedPerBlock", &GpuArch::maxSharedPerBlock},
    {"maxThreadsPerBlock", &GpuArch::maxThreadsPerBlock},
    {"sharedPerSM", &GpuArch::sharedPerSM},
    {"regsPerSM", &GpuArch::regsPerSM},
    {"maxRegsPerThread", &GpuArch::maxRegsPerThread},
    {"maxBlocksPerSM", &GpuArch::maxBlocksPerSM},
    {"maxThreadsPerSM", &GpuArch::maxThreadsPerSM},
    {"warpSize", &GpuArch::warpSize},
    {"sharedBanks", &GpuArch::sharedBanks},
    {"l2Bytes", &GpuArch::l2Bytes},
    {"clockGHz", &GpuArch::clockGHz},
};

/// Numeric fields a descriptor may leave out (0 then).
const std::pair<const char *, double GpuArch::*> kOptionalFields[] = {
    {"latIterCycles", &GpuArch::latIterCycles},
    {"launchSeconds", &GpuArch::launchSeconds},
    {"bwL2", &GpuArch::bwL2},
    {"bwL2PerSM", &GpuArch::bwL2PerSM},
    {"bwL2CpAsync", &GpuArch::bwL2CpAsync},
    {"blockDispatchCycles", &GpuArch::blockDispatchCycles},
    {"perfPeakMmaSync", &GpuArch::perfPeakMmaSync},
    {"collectiveCrossoverBytes", &GpuArch::collectiveCrossoverBytes},
    {"collectiveCopyEngineRanks", &GpuArch::collectiveCopyEngineRanks},
};

const char *const kStringFields[] = {"name", "aliases", "vendor",
                                     "computeArch"};

bool isField(const std::string &key) {
  for (const char *f : kStringFields)
    if (key == f)
      return true;
  for (const auto &[f, member] : kNumericFields)
    if (key == f)
      return true;
  for (const auto &[f, member] : kOptionalFields)
    if (key == f)
      return true;
  return false;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Reads a positive number of type T from `value` into `out`; on failure
/// returns what is wrong with it (the caller prefixes the field name).
template <typename T> std::string readPositive(const Json &value, T &out) {
  if constexpr (std::is_integral_v<T>) {
    // Integers stay integers: 80.0 for numSM is a typo worth reporting.
    if (!value.is_number_integer())
      return "must be an integer";
    if (!value.is_number_unsigned())
      return "must be positive";
    const auto v = value.get<std::uint64_t>();
    if (v > std::uint64_t(std::numeric_limits<T>::max()))
      return "is out of range";
    out = T(v);
  } else {
    if (!value.is_number())
      return "must be a number";
    out = value.get<T>();
    if (!std::isfinite(out))
      return "must be finite";
  }
  if (!(out > 0))
    return "must be positive";
  return "";
}

std::optional<GpuArch> parseArch(const std::string &text, std::string &error,
                                 bool requireSources) {
  const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    error = "not valid JSON";
    return std::nullopt;
  }
  if (!root.is_object()) {
    error = "a GPU descriptor must be a JSON object";
    return std::nullopt;
  }
  // Unknown keys are rejected because a misspelt field ("numSm") would
  // otherwise be reported as missing, which hides the real mistake.
  for (const auto &item : root.items()) {
    if (item.key() != "sources" && !isField(item.key())) {
      error = "unknown field \"" + item.key() + "\"";
      return std::nullopt;
    }
  }
  auto fail = [&](const std::string &field, const std::string &what) {
    error = "field \"" + field + "\" " + what;
    return std::nullopt;
  };

  GpuArch arch;
  for (const char *field : {"name", "vendor", "computeArch"}) {
    auto it = root.find(field);
    if (it == root.end())
      return fail(field, "is missing");
    if (!it->is_string() || it->get_ref<const std::string &>().empty())
      return fail(field, "must be a non-empty string");
  }
  arch.name = root["name"].get<std::string>();
  arch.vendor = root["vendor"].get<std::string>();
  arch.computeArch = root["computeArch"].get<std::string>();
  if (arch.vendor != "nvidia" && arch.vendor != "amd")
    return fail("vendor", "must be \"nvidia\" or \"amd\"");

  auto aliases = root.find("aliases");
  if (aliases == root.end())
    return fail("aliases", "is missing");
  if (!aliases->is_array())
    return fail("aliases", "must be an array of strings");
  for (const Json &alias : *aliases) {
    if (!alias.is_string() || alias.get_ref<const std::string &>().empty())
      return fail("aliases", "must be an array of non-empty strings");
    arch.aliases.push_back(alias.get<std::string>());
  }

  for (const auto &[field, member] : kNumericFields) {
    auto it = root.find(field);
    if (it == root.end())
      return fail(field, "is missing");
    std::string problem =
        std::visit([&](auto m) { return readPositive(*it, arch.*m); }, member);
    if (!problem.empty())
      return fail(field, problem);
  }

  for (const auto &[field, member] : kOptionalFields) {
    auto it = root.find(field);
    if (it == root.end())
      continue;
    std::string problem = readPositive(*it, arch.*member);
    if (!problem.empty())
      return fail(field, problem);
  }

  // Cross-field checks: the occupancy model divides one by the other.
  if (arch.maxSharedPerBlock > arch.sharedPerSM)
    return fail("maxSharedPerBlock", "exceeds sharedPerSM");
  if (arch.maxThreadsPerBlock > arch.maxThreadsPerSM)
    return fail("maxThreadsPerBlock", "exceeds maxThreadsPerSM");
  if (arch.maxThreadsPerBlock % arch.warpSize != 0)
    return fail("maxThreadsPerBlock", "is not a multiple of warpSize");

  auto sources = root.find("sources");
  if (sources != root.end()) {
    if (!sources->is_object())
      return fail("sources", "must be an object of strings");
    for (const auto &item : sources->items()) {
      if (!isField(item.key()))
        return fail("sources", "names an unknown field \"" + item.key() + "\"");
      if (!item.value().is_string())
        return fail("sources", "entry \"" + item.key() + "\" must be a string");
    }
  }
  // Built-in descriptors must say where every number comes from.
  if (requireSources) {
    for (const auto &[field, member] : kNumericFields)
      if (sources == root.end() || !sources->contains(field))
        return fail("sources",
                    std::string("has no entry for \"") + field + "\"");
    // An optional field, where given, too.
    for (const auto &[field, member] : kOptionalFields)
      if (root.contains(field) &&
          (sources == root.end() || !sources->contains(field)))
        return fail("sources",
                    std::string("has no entry for \"") + field + "\"");
  }
  return arch;
}

std::vector<GpuArch> loadBuiltins() {
  std::vector<const std::pair<const char *, const char *> *> files;
  for (const char *want : kBuiltinOrder)
    for (const auto &file : kArchFiles)
      if (!std::strcmp(file.first, want))
        files.push_back(&file);
  for (const auto &file : kArchFiles)
    if (std::find(files.begin(), files.end(), &file) == files.end())
      files.push_back(&file);

  std::vector<GpuArch> archs;
  for (const auto *file : files) {
    std::string error;
    if (auto arch = parseArch(file->second, error, /*requireSources=*/true)) {
      archs.push_back(std::move(*arch));
      continue;
    }
    // A broken built-in is a build-time mistake: say so and leave it out
    // (the unit tests count the descriptors) rather than abort the compiler.
    std::fprintf(stderr, "cuts: internal error: perfmodel/arch/%s: %s\n",
                 file->first, error.c_str());
  }
  return archs;
}

} // namespace

const std::vector<GpuArch> &knownArchs() {
  static const std::vector<GpuArch> archs = loadBuiltins();
  return archs;
}

std::optional<GpuArch> findArch(const std::string &nameOrAlias) {
  const std::string want = lower(nameOrAlias);
  for (const GpuArch &arch : knownArchs()) {
    if (lower(arch.name) == want)
      return arch;
    for (const std::string &alias : arch.aliases)
      if (lower(alias) == want)
        return arch;
  }
  return std::nullopt;
}

std::optional<GpuArch> parseArchJson(const std::string &text,
                                     std::string &error) {
  return parseArch(text, error, /*requireSources=*/false);
}

std::string
archToJson(const GpuArch &arch,
           const std::vector<std::pair<std::string, std::string>> &sources) {
  // ordered_json keeps GpuArch's field order, which is the files' order.
  nlohmann::ordered_json out;
  out["name"] = arch.name;
  out["aliases"] = arch.aliases;
  out["vendor"] = arch.vendor;
  out["computeArch"] = arch.computeArch;
  for (const auto &[field, member] : kNumericFields)
    std::visit([&, field = field](auto m) { out[field] = arch.*m; }, member);
  for (const auto &[field, member] : kOptionalFields)
    if (arch.*member > 0)
      out[field] = arch.*member;
  out["sources"] = nlohmann::ordered_json::object();
  for (const auto &[field, source] : sources)
    out["sources"][field] = source;
  // `replace` rather than the default `strict`: invalid UTF-8 in a name must
  // not make serialisation throw.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

} // namespace cuts
