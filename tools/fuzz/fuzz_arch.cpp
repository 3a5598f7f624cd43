//===- fuzz_arch.cpp - libFuzzer target: GPU descriptor files -------------===//
//
// What `--arch FILE.json` parses: a GPU descriptor. Any byte string must
// parse or be rejected with a message, never crash, hang or abort; a
// descriptor that parses must then carry a small conv's parameter search
// (the model divides by its fields) to a finite answer or to no kept set.
//
//===----------------------------------------------------------------------===//
#include "perfmodel/Arch.h"
#include "perfmodel/ParamSearch.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  auto arch = cuts::parseArchJson(
      std::string(reinterpret_cast<const char *>(data), size), error);
  if (!arch) {
    if (error.empty())
      std::abort(); // a rejection must say why
    return 0;
  }
  // Occupancy loops scale with these; a descriptor claiming a million
  // banks or warps of a million lanes is valid JSON but not a GPU, and the
  // search would only be slow, not wrong: keep the run short.
  if (arch->sharedBanks > 1024 || arch->warpSize > 1024 ||
      arch->maxThreadsPerBlock > (1 << 16))
    return 0;
  cuts::OpDesc d;
  d.kind = cuts::OpKind::Conv;
  d.N = 1, d.C = 8, d.K = 8, d.H = 8, d.W = 8;
  d.FH = d.FW = 3, d.PH = d.PW = 1;
  cuts::SearchResult r = cuts::searchParams(d, *arch, {});
  for (const cuts::Candidate &c : r.kept)
    if (std::isnan(c.bound.pul) || c.bound.pul < 0 || c.bound.pul > 1)
      std::abort(); // every factor lies in [0, 1]
  return 0;
}
