//===- ModelLibrary.h - model.h and libmodel.so -----------------*- C++ -*-===//
//
// What an inference server links: a C header naming the model's inputs and
// outputs as typed functions over the runtime's C API, and a shared library
// with the artifact embedded and those functions defined.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_MODELLIBRARY_H
#define CUTS_COMPILER_DRIVER_MODELLIBRARY_H

#include "cuts/Artifact.h"

#include <string>

namespace cuts::driver {

/// model.h: the model's inputs and outputs as typed C functions over the
/// runtime C API, named after `prefix` (a C identifier).
std::string modelHeader(const rt::Manifest &m, const std::string &prefix);

/// The largest artifact libmodel.so embeds. The assembler and the linker
/// each copy an embedded artifact: VGG-16's 540 MB took 5.9 of its 15.6 s
/// compile (and past 2 GiB the 32-bit relocations overflow).
constexpr uint64_t kMaxEmbeddedArtifact = uint64_t(256) << 20;

/// The C++ source of libmodel.so: the functions model.h declares, and the
/// artifact embedded (`.incbin` of `artifactPath`), or where `embed` is
/// false read at load from the file of its name beside the library.
std::string modelLibrarySource(const rt::Manifest &m, const std::string &prefix,
                               const std::string &artifactPath,
                               bool embed = true);

/// Builds `library` (lib<prefix>.so) with the C++ compiler ($CXX, else c++)
/// from modelLibrarySource (embedding artifacts up to
/// kMaxEmbeddedArtifact), against the runtime's static library and
/// headers; model.h must be in `headerDir`. On failure false and `error`.
bool buildModelLibrary(const rt::Manifest &m, const std::string &prefix,
                       const std::string &artifactPath,
                       const std::string &headerDir, const std::string &library,
                       const std::string &runtimeLib,
                       const std::string &runtimeInclude, std::string &error);

/// A C identifier from a model or tensor name.
std::string cIdentifier(const std::string &name);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_MODELLIBRARY_H
