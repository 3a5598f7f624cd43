//===- FileIO.h - whole-file reads shared by Artifact.cpp and Runtime.cpp -===//
//
// The C API must tell an unreadable file (CUTS_ERROR_IO) from a bad one
// (CUTS_ERROR_BAD_ARTIFACT), which readArtifact's single error cannot, so
// the read is its own step.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_FILEIO_H
#define CUTS_RUNTIME_FILEIO_H

#include <cstdint>
#include <string>
#include <vector>

namespace cuts::rt {

/// Reads all of `path`; on failure false and `error` names the file and the
/// reason.
bool readFileBytes(const std::string &path, std::vector<uint8_t> &bytes,
                   std::string &error);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_FILEIO_H
