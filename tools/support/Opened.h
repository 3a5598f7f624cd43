//===- Opened.h - a model and a session of it, freed together ---*- C++ -*-===//
#ifndef CUTS_TOOLS_SUPPORT_OPENED_H
#define CUTS_TOOLS_SUPPORT_OPENED_H

#include "cuts/cuts.h"

#include <string>
#include <vector>

namespace cuts::cli {

/// A model loaded through the C API and one session of it, freed together
/// whichever way the caller returns.
struct Opened {
  cuts_model *model = nullptr;
  cuts_session *session = nullptr;

  Opened() = default;
  Opened(const Opened &) = delete;
  Opened &operator=(const Opened &) = delete;
  ~Opened() {
    cuts_session_free(session);
    cuts_model_free(model);
  }

  /// Loads `path` (or, given `bytes`, those) and makes a session; false
  /// with the C API's message in `error` where either fails.
  bool open(const std::string &path, const cuts_load_options *options,
            int useCudaGraph, std::string &error,
            const std::vector<uint8_t> *bytes = nullptr) {
    cuts_status st = bytes ? cuts_model_load_memory(
                                 bytes->data(), bytes->size(), options, &model)
                           : cuts_model_load(path.c_str(), options, &model);
    if (st == CUTS_OK)
      st = cuts_session_create(model, nullptr, useCudaGraph, &session);
    if (st != CUTS_OK)
      error = cuts_last_error();
    return st == CUTS_OK;
  }
};

} // namespace cuts::cli

#endif // CUTS_TOOLS_SUPPORT_OPENED_H
