//===- TensorFile.h - .npy and ONNX TensorProto (.pb) files -----*- C++ -*-===//
//
// What `cuts run` reads inputs and references from and writes outputs to:
// NumPy .npy (v1-3, little-endian float32/float64/int64, C order) and ONNX
// TensorProto .pb files as the ONNX test data sets hold them (parsed from
// the protobuf wire format directly, so the runner needs no protobuf).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_CUTS_RUN_TENSORFILE_H
#define CUTS_TOOLS_CUTS_RUN_TENSORFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

struct HostArray {
  std::string name; // a .pb's name field, else empty
  std::vector<int64_t> shape;
  std::vector<float> data; // converted to fp32
};

std::optional<HostArray> parseNpy(const std::string &bytes, std::string &error);
std::optional<HostArray> parseTensorProto(const std::string &bytes,
                                          std::string &error);
/// By extension: .npy or .pb; `error` names the file.
std::optional<HostArray> readTensorFile(const std::string &path,
                                        std::string &error);
bool writeNpy(const std::string &path, const HostArray &a, std::string &error);

} // namespace cuts

#endif // CUTS_TOOLS_CUTS_RUN_TENSORFILE_H
