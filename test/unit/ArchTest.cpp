// Tests of the GPU descriptors (perfmodel/Arch.h).

#include "perfmodel/Arch.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cctype>
#include <set>
#include <string>

using namespace cuts;

namespace {

/// Every field of GpuArch, as named in the JSON.
const char *const kAllFields[] = {"name",
                                  "aliases",
                                  "vendor",
                                  "computeArch",
                                  "numSM",
                                  "perfPeakFp32",
                                  "perfPeakFp16",
                                  "bwGlobal",
                                  "transGlobalBytes",
                                  "latShared",
                                  "maxSharedPerBlock",
                                  "maxThreadsPerBlock",
                                  "sharedPerSM",
                                  "regsPerSM",
                                  "maxRegsPerThread",
                                  "maxBlocksPerSM",
                                  "maxThreadsPerSM",
                                  "warpSize",
                                  "sharedBanks",
                                  "l2Bytes",
                                  "clockGHz"};

/// The H100 descriptor as JSON, for tests that break one field of a valid
/// descriptor.
nlohmann::json h100Json() {
  auto arch = findArch("h100");
  REQUIRE(arch);
  return nlohmann::json::parse(archToJson(*arch));
}

/// Parses `j` expecting failure; returns the error.
std::string parseError(const nlohmann::json &j) {
  std::string error;
  auto arch = parseArchJson(j.dump(), error);
  CHECK_FALSE(arch);
  CHECK_FALSE(error.empty());
  return error;
}

} // namespace

TEST_CASE("all built-in descriptors load, in order", "[arch]") {
  // A built-in that fails validation is dropped with a message on stderr, so
  // the count is the check that all six files are valid (with full sources).
  const auto &archs = knownArchs();
  REQUIRE(archs.size() == 6);
  CHECK(archs[0].name == "V100");
  CHECK(archs[1].name == "RTX 2080");
  CHECK(archs[2].name == "A100-SXM");
  CHECK(archs[3].name == "H100-SXM");
  CHECK(archs[4].name == "H200");
  CHECK(archs[5].name == "MI300X");
  CHECK(&knownArchs() == &archs); // parsed once
}

TEST_CASE("V100 matches the thesis's roofline", "[arch]") {
  auto v100 = findArch("V100");
  REQUIRE(v100);
  // Figure 3.2: 14 TFLOP/s over 900 GB/s, ridge point 15.6 FLOP/B.
  CHECK(v100->ridgePoint() == Approx(15.6).margin(0.2));
  CHECK(v100->numSM == 80);
  // TRANS_global: 32 fp32 elements per 128-byte transaction.
  CHECK(v100->transGlobalElements(4) == 32);
}

TEST_CASE("findArch matches names and aliases case-insensitively", "[arch]") {
  for (const char *key : {"h100", "sm_90", "H100-SXM", "h100-sxm", "SM_90"}) {
    auto arch = findArch(key);
    REQUIRE(arch);
    CHECK(arch->name == "H100-SXM");
  }
  CHECK(findArch("mi300x")->name == "MI300X");
  CHECK(findArch("gfx942")->name == "MI300X");
  CHECK(findArch("sm_70")->name == "V100");
  CHECK(findArch("rtx2080")->name == "RTX 2080");
  CHECK(findArch("a100")->name == "A100-SXM");
  CHECK(findArch("H200")->name == "H200");
  CHECK_FALSE(findArch("b200"));
  CHECK_FALSE(findArch(""));
  CHECK_FALSE(findArch("h10"));
}

TEST_CASE("names and aliases are unique across descriptors", "[arch]") {
  // Otherwise findArch would silently return the first match.
  std::set<std::string> seen;
  for (const GpuArch &arch : knownArchs()) {
    std::set<std::string> own = {arch.name};
    own.insert(arch.aliases.begin(), arch.aliases.end());
    std::set<std::string> lowered;
    for (std::string key : own) {
      for (char &c : key)
        c = char(std::tolower(static_cast<unsigned char>(c)));
      lowered.insert(key);
    }
    for (const std::string &key : lowered) {
      INFO(arch.name << ": " << key);
      CHECK(seen.insert(key).second);
    }
  }
}

TEST_CASE("parseArchJson round-trips archToJson", "[arch]") {
  for (const GpuArch &arch : knownArchs()) {
    INFO(arch.name);
    std::string error;
    auto back = parseArchJson(archToJson(arch), error);
    INFO(error);
    REQUIRE(back);
    CHECK(back->name == arch.name);
    CHECK(back->aliases == arch.aliases);
    CHECK(back->vendor == arch.vendor);
    CHECK(back->computeArch == arch.computeArch);
    CHECK(back->numSM == arch.numSM);
    CHECK(back->perfPeakFp32 == arch.perfPeakFp32);
    CHECK(back->perfPeakFp16 == arch.perfPeakFp16);
    CHECK(back->bwGlobal == arch.bwGlobal);
    CHECK(back->transGlobalBytes == arch.transGlobalBytes);
    CHECK(back->latShared == arch.latShared);
    CHECK(back->maxSharedPerBlock == arch.maxSharedPerBlock);
    CHECK(back->maxThreadsPerBlock == arch.maxThreadsPerBlock);
    CHECK(back->sharedPerSM == arch.sharedPerSM);
    CHECK(back->regsPerSM == arch.regsPerSM);
    CHECK(back->maxRegsPerThread == arch.maxRegsPerThread);
    CHECK(back->maxBlocksPerSM == arch.maxBlocksPerSM);
    CHECK(back->maxThreadsPerSM == arch.maxThreadsPerSM);
    CHECK(back->warpSize == arch.warpSize);
    CHECK(back->sharedBanks == arch.sharedBanks);
    CHECK(back->l2Bytes == arch.l2Bytes);
    CHECK(back->clockGHz == arch.clockGHz);
    CHECK(back->latIterCycles == arch.latIterCycles);
    CHECK(back->launchSeconds == arch.launchSeconds);
    CHECK(back->bwL2 == arch.bwL2);
    CHECK(back->bwL2PerSM == arch.bwL2PerSM);
  }
}

TEST_CASE("the measured-only fields are optional, positive where given",
          "[arch]") {
  const std::pair<const char *, double GpuArch::*> fields[] = {
      {"latIterCycles", &GpuArch::latIterCycles},
      {"launchSeconds", &GpuArch::launchSeconds},
      {"bwL2", &GpuArch::bwL2},
      {"bwL2PerSM", &GpuArch::bwL2PerSM},
      {"bwL2CpAsync", &GpuArch::bwL2CpAsync},
      {"perfPeakMmaSync", &GpuArch::perfPeakMmaSync}};
  for (const auto &[field, member] : fields) {
    INFO(field);
    auto j = h100Json();
    j[field] = 2.5e-6;
    std::string error;
    auto arch = parseArchJson(j.dump(), error);
    REQUIRE(arch);
    CHECK((*arch).*member == 2.5e-6);
    auto back = parseArchJson(archToJson(*arch), error);
    REQUIRE(back);
    CHECK((*back).*member == 2.5e-6);
    j.erase(field);
    arch = parseArchJson(j.dump(), error);
    REQUIRE(arch);
    CHECK((*arch).*member == 0);
    CHECK(archToJson(*arch).find(field) == std::string::npos);
    j[field] = -5;
    CHECK(parseError(j).find(field) != std::string::npos);
    j[field] = "496";
    CHECK(parseError(j).find(field) != std::string::npos);
  }
}

TEST_CASE("archToJson writes sources in the given order", "[arch]") {
  auto arch = findArch("h200");
  REQUIRE(arch);
  std::string text = archToJson(
      *arch, {{"numSM", "cudaGetDeviceProperties"}, {"bwGlobal", "measured"}});
  auto j = nlohmann::json::parse(text);
  CHECK(j["sources"]["numSM"] == "cudaGetDeviceProperties");
  CHECK(j["sources"]["bwGlobal"] == "measured");
  CHECK(text.find("\"numSM\": \"cuda") < text.find("\"bwGlobal\": \"meas"));
  // Pretty-printed, one field a line.
  CHECK(text.find("\n  \"numSM\": 132,\n") != std::string::npos);
  std::string error;
  CHECK(parseArchJson(text, error));
}

TEST_CASE("missing and invalid fields are rejected by name", "[arch]") {
  SECTION("every field is required") {
    for (const char *field : kAllFields) {
      INFO(field);
      auto j = h100Json();
      j.erase(field);
      std::string error = parseError(j);
      CHECK(error.find(field) != std::string::npos);
      CHECK(error.find("missing") != std::string::npos);
    }
  }
  SECTION("wrong types") {
    auto j = h100Json();
    j["numSM"] = "132";
    CHECK(parseError(j).find("numSM") != std::string::npos);
    j = h100Json();
    j["numSM"] = 132.5; // integers must be integers
    CHECK(parseError(j).find("numSM") != std::string::npos);
    j = h100Json();
    j["bwGlobal"] = nullptr;
    CHECK(parseError(j).find("bwGlobal") != std::string::npos);
    j = h100Json();
    j["name"] = 7;
    CHECK(parseError(j).find("name") != std::string::npos);
    j = h100Json();
    j["aliases"] = "h100";
    CHECK(parseError(j).find("aliases") != std::string::npos);
    j = h100Json();
    j["aliases"] = {"h100", 3};
    CHECK(parseError(j).find("aliases") != std::string::npos);
    j = h100Json();
    j["sources"] = {{"numSM", 1}};
    CHECK(parseError(j).find("sources") != std::string::npos);
  }
  SECTION("values that must be positive") {
    for (const char *field : {"numSM", "latShared", "warpSize", "l2Bytes"}) {
      INFO(field);
      auto j = h100Json();
      j[field] = 0;
      CHECK(parseError(j).find(field) != std::string::npos);
      j[field] = -4;
      CHECK(parseError(j).find(field) != std::string::npos);
    }
    auto j = h100Json();
    j["perfPeakFp32"] = -1.0;
    CHECK(parseError(j).find("perfPeakFp32") != std::string::npos);
    j = h100Json();
    j["clockGHz"] = 0.0;
    CHECK(parseError(j).find("clockGHz") != std::string::npos);
    j = h100Json();
    j["sharedPerSM"] = 4294967296LL; // does not fit an int
    CHECK(parseError(j).find("sharedPerSM") != std::string::npos);
  }
  SECTION("other invalid values") {
    auto j = h100Json();
    j["vendor"] = "intel";
    CHECK(parseError(j).find("vendor") != std::string::npos);
    j = h100Json();
    j["computeArch"] = "";
    CHECK(parseError(j).find("computeArch") != std::string::npos);
    j = h100Json();
    j["maxSharedPerBlock"] = j["sharedPerSM"].get<int>() + 1;
    CHECK(parseError(j).find("maxSharedPerBlock") != std::string::npos);
    j = h100Json();
    j["numSm"] = 132; // a typo is named, not reported as a missing field
    CHECK(parseError(j).find("numSm") != std::string::npos);
    j = h100Json();
    j["sources"]["numSm"] = "typo";
    CHECK(parseError(j).find("numSm") != std::string::npos);
  }
  SECTION("not a descriptor at all") {
    std::string error;
    CHECK_FALSE(parseArchJson("", error));
    CHECK_FALSE(parseArchJson("{\"name\": ", error));
    CHECK_FALSE(error.empty());
    CHECK_FALSE(parseArchJson("[1, 2]", error));
    CHECK_FALSE(parseArchJson("{}", error));
    CHECK(error.find("name") != std::string::npos);
  }
  SECTION("sources are optional for user descriptors") {
    auto j = h100Json();
    j.erase("sources");
    std::string error;
    CHECK(parseArchJson(j.dump(), error));
  }
}

TEST_CASE("descriptors are physically sane", "[arch]") {
  auto h100 = findArch("H100-SXM"), h200 = findArch("H200");
  REQUIRE(h100);
  REQUIRE(h200);
  CHECK(h200->bwGlobal > h100->bwGlobal);
  CHECK(h200->numSM == h100->numSM); // the same chip
  for (const GpuArch &arch : knownArchs()) {
    INFO(arch.name);
    CHECK(arch.maxSharedPerBlock <= arch.sharedPerSM);
    CHECK(arch.maxThreadsPerBlock <= arch.maxThreadsPerSM);
    CHECK((arch.warpSize == 32 || arch.warpSize == 64));
    CHECK(arch.perfPeakFp16 > arch.perfPeakFp32);
    // Ridge points of real GPUs lie between a few and a few tens FLOP/B.
    CHECK(arch.ridgePoint() > 5);
    CHECK(arch.ridgePoint() < 50);
    // At most 128 FP32 FMAs per SM per clock (Hopper; MI300X's 64 lanes with
    // packed FP32), so SMs x 128 x 2 x clock bounds the peak: catches a
    // clock or a unit off by 1000.
    CHECK(arch.perfPeakFp32 <= arch.numSM * 128 * 2 * arch.clockGHz * 1e9);
    CHECK(arch.transGlobalElements(4) == 32);
    CHECK(arch.sharedBanks == 32);
    CHECK(arch.l2Bytes >= (4LL << 20));
  }
  CHECK(findArch("mi300x")->warpSize == 64);
  CHECK(findArch("v100")->warpSize == 32);
}
