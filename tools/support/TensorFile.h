//===- TensorFile.h - .npy and ONNX TensorProto (.pb) files -----*- C++ -*-===//
//
// What `cuts run` reads inputs and references from and writes outputs to:
// NumPy .npy (v1-3, little-endian, C order) and ONNX TensorProto .pb files
// as the ONNX test data sets hold them (parsed from the protobuf wire format
// directly, so the runner needs no protobuf). Arrays keep their element
// type, named as the artifact names dtypes (rt::dtypeBytes):
//
//   dtype     .npy descr      TensorProto data_type (fields read)
//   float32   <f4             FLOAT 1     (float_data, raw_data)
//   float64   <f8             DOUBLE 11   (double_data, raw_data)
//   float16   <f2             FLOAT16 10  (int32_data bits, raw_data)
//   bfloat16  -               BFLOAT16 16 (int32_data bits, raw_data)
//   int64     <i8             INT64 7     (int64_data, raw_data)
//   int32     <i4             INT32 6     (int32_data, raw_data)
//   int16     <i2             INT16 5     (int32_data, raw_data)
//   int8      |i1             INT8 3      (int32_data, raw_data)
//   uint8     |u1             UINT8 2     (int32_data, raw_data)
//   bool      |b1             BOOL 9      (int32_data, raw_data)
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_SUPPORT_TENSORFILE_H
#define CUTS_TOOLS_SUPPORT_TENSORFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

struct HostArray {
  std::string name; // a .pb's name field, else empty
  std::vector<int64_t> shape;
  std::string dtype = "float32"; // see above
  std::vector<uint8_t> bytes;    // the elements, little-endian, packed;
                                 // bool: one byte each, 0 or 1

  size_t size() const; // elements
  bool isFloat() const;
  /// Element i as a double (exact except for int64 beyond 2^53).
  double value(size_t i) const;
  /// Element i of an integer or bool array.
  int64_t integer(size_t i) const;

  /// An array of `dtype` holding `values` (rounded to it).
  static HostArray fromDoubles(std::vector<int64_t> shape,
                               const std::string &dtype,
                               const std::vector<double> &values);
  static HostArray fromFloats(std::vector<int64_t> shape,
                              const std::vector<float> &values);
};

std::optional<HostArray> parseNpy(const std::string &bytes, std::string &error);
std::optional<HostArray> parseTensorProto(const std::string &bytes,
                                          std::string &error);
/// By extension: .npy or .pb; `error` names the file.
std::optional<HostArray> readTensorFile(const std::string &path,
                                        std::string &error);
/// Whether got matches ref (equal sizes): a floating-point array within
/// `tolerance` of relative L2 error over the elements where ref is finite
/// (a NaN or infinity matches only the same in ref; any other NaN fails),
/// integers and bools exactly.
/// `detail` says by how much ("relative L2 1.234e-07", "int64, 2 of 12
/// elements differ").
bool matchesReference(const HostArray &got, const HostArray &ref,
                      double tolerance, std::string &detail);
/// The relative L2 error `cuts run --compare` accepts by default for an
/// output of `dtype`: 1e-5 for float32; for float16 1e-2 and bfloat16 5e-2,
/// a few units of the format's own rounding (2^-11, 2^-8) per layer, since
/// kernels keep fp32 inside a fused group where a reference may round
/// after every op.
double defaultTolerance(const std::string &dtype);

/// The element of `dtype` at p as a double, and v written at p rounded to
/// `dtype` (floats to nearest even): the codecs of HostArray.
double decodeElement(const std::string &dtype, const uint8_t *p);
void encodeElement(const std::string &dtype, double v, uint8_t *p);

/// Writes `a` in its dtype (bfloat16, which NumPy lacks, as float32).
bool writeNpy(const std::string &path, const HostArray &a, std::string &error);

/// `a` as an array of `dtype` where no value changes beyond rounding
/// between floating-point types: any floating-point type to another
/// (float64 to float32 rounds), integers and bools to a wider or equal
/// integer type, or to a narrower one or bool when every value fits, and to
/// a floating-point type when every value is exact in it. A floating-point
/// array never becomes an integer or bool one. Otherwise nullopt, and
/// `error` says why (without naming the array: the caller does).
std::optional<HostArray>
convertArray(const HostArray &a, const std::string &dtype, std::string &error);

} // namespace cuts

#endif // CUTS_TOOLS_SUPPORT_TENSORFILE_H
