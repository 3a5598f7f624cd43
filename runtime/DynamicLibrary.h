//===- DynamicLibrary.h - a vendor library loaded with dlopen ---*- C++ -*-===//
//
// The runtime links none of the CUDA driver, cuDNN or cuBLASLt: a server
// built without the toolkit must load, and a machine without one of them
// must get a clean error. Each is opened here on first use, never closed
// (handles may outlive any one user), and its entry points bound into a
// table of function pointers.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_DYNAMICLIBRARY_H
#define CUTS_RUNTIME_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace cuts::rt {

class DynamicLibrary {
public:
  /// Opens the first of `names` that loads. On failure false, and `tried`
  /// lists each name with dlerror's reason ("libX.so.1: why; ...").
  bool open(std::initializer_list<const char *> names, std::string &tried) {
    for (const char *name : names) {
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
        opened = name;
        return true;
      }
      // dlerror's text usually names the file already.
      const char *error = dlerror(); // cleared by the call
      std::string why = error ? error : "";
      if (why.rfind(name, 0) != 0)
        why = std::string(name) + ": " + (why.empty() ? "unknown reason" : why);
      tried += (tried.empty() ? "" : "; ") + why;
    }
    return false;
  }

  /// Binds `slot` to the first of `names` the library exports. A required
  /// symbol that is missing is added to missing() under its first name; an
  /// optional one leaves `slot` null.
  template <typename Fn>
  bool bind(Fn &slot, std::initializer_list<const char *> names,
            bool optional = false) {
    for (const char *name : names)
      if (void *sym = dlsym(handle, name)) {
        // POSIX guarantees data and function pointers convert.
        slot = reinterpret_cast<Fn>(sym);
        return true;
      }
    slot = nullptr;
    if (!optional)
      absent += (absent.empty() ? "" : ", ") + std::string(*names.begin());
    return false;
  }

  /// The required symbols bind() did not find, comma-separated.
  const std::string &missing() const { return absent; }
  /// The name open() loaded.
  const char *name() const { return opened; }

private:
  void *handle = nullptr;
  const char *opened = "";
  std::string absent;
};

} // namespace cuts::rt

#endif // CUTS_RUNTIME_DYNAMICLIBRARY_H
