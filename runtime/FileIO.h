//===- FileIO.h - whole-file reads shared by Artifact.cpp and Runtime.cpp -===//
//
// The C API must tell an unreadable file (CUTS_ERROR_IO) from a bad one
// (CUTS_ERROR_BAD_ARTIFACT), which readArtifact's single error cannot, so
// the read is its own step.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_FILEIO_H
#define CUTS_RUNTIME_FILEIO_H

#include "cuts/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cuts::rt {

/// Reads all of `path`; on failure false and `error` names the file and the
/// reason.
bool readFileBytes(const std::string &path, std::vector<uint8_t> &bytes,
                   std::string &error);

/// Reads `path` as readFileBytes does, but a weights section of `leaveFrom`
/// bytes or more stays
/// in the file: `image` is the file without it (hashed in passing and
/// checked against the header's checksum), `weights` where it lies (size
/// 0 where the whole file was read). False and `error` for a file that
/// cannot be read, or whose checksum fails (`corrupt` then true); with
/// `verify` false the weights are not read and no checksum is checked.
bool readImageWithoutWeights(const std::string &path,
                             std::vector<uint8_t> &image, Blob &weights,
                             bool &corrupt, std::string &error,
                             uint64_t leaveFrom = kLeaveWeightsFrom,
                             bool verify = true);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_FILEIO_H
