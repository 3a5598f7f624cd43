//===- fuzz_artifact.cpp - libFuzzer target: artifacts and tensor files ---===//
//
// What the runtime and `cuts run` parse from files: model.cuts artifacts
// (whole, or without their weights as a streamed load reads them), .npy
// arrays and ONNX TensorProto .pb files. Any byte string must parse or be
// rejected with a message: never crash, hang, leak or abort. The first
// byte picks the parser. For artifacts the header's size and checksum are
// rewritten to match the mutated bytes, so mutations reach the section table
// and the manifest instead of all failing the checksum.
//
//===----------------------------------------------------------------------===//
#include "cuts/Artifact.h"
#include "cuts/rt/Checksum.h"
#include "tools/support/TensorFile.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

// The checksum of the format (Artifact.h): XXH64 of every byte after the
// 64-byte header, at offset 24; the file size at 16.
void fixHeader(std::vector<uint8_t> &b) {
  if (b.size() < 64)
    return;
  uint64_t size = b.size(), h = cuts::rt::xxh64(b.data() + 64, b.size() - 64);
  std::memcpy(b.data() + 16, &size, 8);
  std::memcpy(b.data() + 24, &h, 8);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string error;
  switch (data[0] % 4) {
  case 0: {
    std::vector<uint8_t> bytes(data + 1, data + size);
    fixHeader(bytes);
    auto a = cuts::rt::parseArtifact(std::move(bytes), error);
    if (!a && error.empty())
      std::abort(); // a rejection must say why
    if (a) {
      // What the runtime does next with a valid artifact.
      cuts::rt::planMemory(a->manifest);
      for (size_t k = 0; k < a->manifest.kernels.size(); ++k)
        (void)a->source(int(k));
    }
    break;
  }
  case 1: {
    std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
    if (!cuts::parseNpy(bytes, error) && error.empty())
      std::abort();
    break;
  }
  case 2: {
    std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
    if (!cuts::parseTensorProto(bytes, error) && error.empty())
      std::abort();
    break;
  }
  case 3: { // read without its weights: as the whole file parses, or not
    std::vector<uint8_t> bytes(data + 1, data + size);
    fixHeader(bytes);
    const int fd = memfd_create("artifact", 0);
    if (fd < 0 ||
        write(fd, bytes.data(), bytes.size()) != ssize_t(bytes.size()))
      std::abort();
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    auto cut = cuts::rt::readArtifactWithoutWeights(path, error, 1);
    // Unverified it reads at least what the verified read accepts.
    std::string planError;
    auto planned =
        cuts::rt::readArtifactWithoutWeights(path, planError, 1, false);
    close(fd);
    if ((!cut && error.empty()) || (!planned && planError.empty()) ||
        (cut && !planned))
      std::abort();
    std::string wholeError;
    auto whole = cuts::rt::parseArtifact(std::move(bytes), wholeError);
    if (bool(cut) != bool(whole) ||
        (cut && cut->manifest.tensors.size() != whole->manifest.tensors.size()))
      std::abort(); // the cut image must accept exactly what the file is
    break;
  }
  }
  return 0;
}
