//===- module.cpp - _cuts: the runtime's C API for Python -----------------===//
//
// The mechanics under cuts/__init__.py: a model and its sessions (cuts.h),
// runs on host arrays or on device arrays (anything with DLPack: numpy,
// torch, cupy), device buffers the outputs can live in, and an artifact's
// description read without a GPU. Every cuts call releases the GIL, so
// sessions on several threads run at once; a failing call raises
// cuts.CutsError with the C API's message.
//
//===----------------------------------------------------------------------===//
#include "cuts/Artifact.h"
#include "cuts/cuts.h"
#include "cuts/rt/CudaDriver.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

struct CutsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cuts_status st) {
  if (st != CUTS_OK)
    throw CutsError(std::string(cuts_last_error()));
}

/// The DLPack dtype of a cuts_dtype (the ONNX value).
nb::dlpack::dtype dlpackOf(cuts_dtype d) {
  using nb::dlpack::dtype_code;
  auto t = [](dtype_code c, int bits) {
    return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1};
  };
  switch (d) {
  case CUTS_FLOAT32:
    return t(dtype_code::Float, 32);
  case CUTS_FLOAT16:
    return t(dtype_code::Float, 16);
  case CUTS_BFLOAT16:
    return t(dtype_code::Bfloat, 16);
  case CUTS_FLOAT64:
    return t(dtype_code::Float, 64);
  case CUTS_INT8:
    return t(dtype_code::Int, 8);
  case CUTS_INT16:
    return t(dtype_code::Int, 16);
  case CUTS_INT32:
    return t(dtype_code::Int, 32);
  case CUTS_INT64:
    return t(dtype_code::Int, 64);
  case CUTS_UINT8:
    return t(dtype_code::UInt, 8);
  case CUTS_BOOL:
    return t(dtype_code::Bool, 8);
  }
  return t(dtype_code::UInt, 8);
}

class Model {
public:
  Model(const std::string &path, int device, int64_t maxBatch,
        std::vector<int> devices, std::vector<double> shares, bool masterGpu,
        int weightSource, int weightCodec, uint64_t weightBudget) {
    cuts_load_options o{};
    o.device = device, o.max_batch = maxBatch, o.master_gpu = masterGpu;
    o.weight_source = weightSource, o.weight_codec = weightCodec;
    o.weight_budget = weightBudget;
    if (!shares.empty() && shares.size() != devices.size())
      throw CutsError("device_shares needs one share per device");
    o.devices = devices.data(), o.num_devices = int(devices.size());
    o.device_shares = shares.empty() ? nullptr : shares.data();
    cuts_model *m = nullptr;
    cuts_status st;
    {
      nb::gil_scoped_release release;
      st = cuts_model_load(path.c_str(), &o, &m);
    }
    check(st);
    model.reset(m, cuts_model_free);
    this->device = device;
  }
  void swapWeights(const std::string &path) {
    cuts_status st;
    {
      nb::gil_scoped_release release;
      st = cuts_model_swap_weights(model.get(), path.c_str());
    }
    check(st);
  }

  std::shared_ptr<cuts_model> model;
  int device = 0;
};

class Session {
public:
  Session(const Model &m, bool cudaGraph) : model(m.model) {
    cuts_session *s = nullptr;
    check(cuts_session_create(model.get(), nullptr, cudaGraph, &s));
    session.reset(s, cuts_session_free);
  }

  /// Bindings for (name, array) pairs, the shapes kept in `shapes`.
  static std::vector<cuts_binding>
  bind(const std::vector<std::pair<std::string, nb::ndarray<>>> &arrays,
       std::vector<std::vector<int64_t>> &shapes,
       const std::vector<int> &dtypes) {
    std::vector<cuts_binding> b;
    shapes.resize(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      const nb::ndarray<> &a = arrays[i].second;
      shapes[i].assign(a.shape_ptr(), a.shape_ptr() + a.ndim());
      b.push_back({arrays[i].first.c_str(), cuts_dtype(dtypes.at(i)),
                   int(a.ndim()), shapes[i].data(), a.data()});
    }
    return b;
  }

  /// One run: host arrays through cuts_session_run_host, device arrays
  /// through cuts_session_run (then waited for). `dtypes` are the model's.
  void run(const std::vector<std::pair<std::string, nb::ndarray<>>> &in,
           const std::vector<int> &inTypes,
           const std::vector<std::pair<std::string, nb::ndarray<>>> &out,
           const std::vector<int> &outTypes, bool device) {
    std::vector<std::vector<int64_t>> si, so;
    std::vector<cuts_binding> bi = bind(in, si, inTypes),
                              bo = bind(out, so, outTypes);
    cuts_status st;
    {
      nb::gil_scoped_release release;
      cuts_session *s = session.get();
      st = device ? cuts_session_run(s, bi.data(), int(bi.size()), bo.data(),
                                     int(bo.size()))
                  : cuts_session_run_host(s, bi.data(), int(bi.size()),
                                          bo.data(), int(bo.size()));
      if (st == CUTS_OK && device)
        st = cuts_session_synchronize(s);
    }
    check(st);
  }

  /// cuts_session_submit_host: the run's ticket. The arrays must outlive
  /// the wait (cuts/__init__.py's Pending holds them).
  uint64_t submit(const std::vector<std::pair<std::string, nb::ndarray<>>> &in,
                  const std::vector<int> &inTypes,
                  const std::vector<std::pair<std::string, nb::ndarray<>>> &out,
                  const std::vector<int> &outTypes) {
    std::vector<std::vector<int64_t>> si, so;
    std::vector<cuts_binding> bi = bind(in, si, inTypes),
                              bo = bind(out, so, outTypes);
    uint64_t ticket = 0;
    cuts_status st;
    {
      nb::gil_scoped_release release;
      st = cuts_session_submit_host(session.get(), bi.data(), int(bi.size()),
                                    bo.data(), int(bo.size()), &ticket);
    }
    check(st);
    return ticket;
  }

  void wait(uint64_t ticket) {
    cuts_status st;
    {
      nb::gil_scoped_release release;
      st = cuts_session_wait(session.get(), ticket);
    }
    check(st);
  }

  /// cuts_session_movement per device-list entry, in milliseconds summed
  /// over the runs since the last reset.
  std::vector<nb::dict> movement(bool reset) {
    std::vector<nb::dict> all;
    for (int e = 0; e < cuts_model_num_devices(model.get()); ++e) {
      cuts_movement m{};
      check(cuts_session_movement(session.get(), e, &m));
      nb::dict d;
      d["runs"] = m.runs;
      d["h2d_ms"] = m.h2d_ms;
      d["h2d_hidden_ms"] = m.h2d_hidden_ms;
      d["peer_ms"] = m.peer_ms;
      d["compute_ms"] = m.compute_ms;
      d["gather_ms"] = m.gather_ms;
      d["d2h_ms"] = m.d2h_ms;
      d["broadcast_ms"] = m.broadcast_ms;
      d["codec_ms"] = m.codec_ms;
      d["broadcast_bytes"] = m.broadcast_bytes;
      d["streamed_bytes"] = m.streamed_bytes;
      d["stream_read_ms"] = m.stream_read_ms;
      all.push_back(d);
    }
    if (reset)
      check(cuts_session_reset_movement(session.get()));
    return all;
  }

  std::pair<int64_t, int64_t> runInfo() const {
    cuts_run_info info{};
    check(cuts_session_run_info(session.get(), &info));
    return {info.batch, info.profile_batch};
  }

  std::vector<float> benchmark(int64_t batch, int warmup, int iters) {
    check(cuts_session_set_batch(session.get(), batch));
    std::vector<float> ms(size_t(std::max(iters, 0)));
    cuts_status st;
    {
      nb::gil_scoped_release release;
      st = cuts_session_benchmark(session.get(), warmup, iters, ms.data());
    }
    check(st);
    return ms;
  }

  std::shared_ptr<cuts_model> model; // outlives the session
  std::shared_ptr<cuts_session> session;
};

/// Device memory of the model's GPU, for outputs that stay there: exported
/// by DLPack (torch.from_dlpack, cupy.from_dlpack) while the buffer lives.
class DeviceBuffer {
public:
  DeviceBuffer(int device, uint64_t bytes) : bytes(bytes) {
    std::string err;
    d = cuts::rt::cuda::driver(err);
    if (!d)
      throw CutsError(err);
    if (d->cuDeviceGet(&dev, device) ||
        d->cuDevicePrimaryCtxRetain(&ctx, dev) || d->cuCtxSetCurrent(ctx))
      throw CutsError("no CUDA device " + std::to_string(device));
    if (auto r = d->cuMemAlloc(&ptr, std::max<uint64_t>(bytes, 1)))
      throw CutsError(
          "allocating " + std::to_string(bytes) +
          " bytes of device memory: " + cuts::rt::cuda::errorString(r));
  }
  ~DeviceBuffer() {
    if (!d)
      return;
    d->cuCtxSetCurrent(ctx);
    if (ptr)
      d->cuMemFree(ptr);
    if (ctx)
      d->cuDevicePrimaryCtxRelease(dev);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void copyTo(nb::ndarray<nb::device::cpu> host) const {
    if (host.nbytes() != bytes)
      throw CutsError("the host array has " + std::to_string(host.nbytes()) +
                      " bytes, the buffer " + std::to_string(bytes));
    d->cuCtxSetCurrent(ctx);
    if (auto r = d->cuMemcpyDtoH(host.data(), ptr, bytes))
      throw CutsError("copying to the host: " + cuts::rt::cuda::errorString(r));
  }
  void copyFrom(nb::ndarray<nb::device::cpu> host) {
    if (host.nbytes() != bytes)
      throw CutsError("the host array has " + std::to_string(host.nbytes()) +
                      " bytes, the buffer " + std::to_string(bytes));
    d->cuCtxSetCurrent(ctx);
    if (auto r = d->cuMemcpyHtoD(ptr, host.data(), bytes))
      throw CutsError("copying to the device: " +
                      cuts::rt::cuda::errorString(r));
  }

  const cuts::rt::cuda::Driver *d = nullptr;
  cuts::rt::cuda::CUdevice dev = 0;
  cuts::rt::cuda::CUcontext ctx = nullptr;
  cuts::rt::cuda::CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
};

/// The buffer as an array of `dtype` and `shape` that keeps it alive: an
/// object with __dlpack__ (torch.from_dlpack and cupy.from_dlpack take it,
/// as often as asked).
nb::ndarray<nb::array_api> view(nb::handle owner, const DeviceBuffer &b,
                                cuts_dtype dtype,
                                const std::vector<int64_t> &shape, int device) {
  std::vector<size_t> dims(shape.begin(), shape.end());
  return nb::ndarray<nb::array_api>(
      reinterpret_cast<void *>(uintptr_t(b.ptr)), dims.size(), dims.data(),
      owner, nullptr, dlpackOf(dtype), nb::device::cuda::value, device);
}

nb::dict tensorDict(const cuts::rt::Tensor &t) {
  nb::dict d;
  d["name"] = t.name;
  d["dtype"] = t.dtype;
  d["shape"] = t.shape;
  d["batch_axis"] = t.batchAxis;
  return d;
}

/// What an artifact holds, without a GPU: its I/O at the largest profile,
/// the profiles' batches, archs, precision, tensor-parallel ranks and
/// target.
nb::dict describe(const std::string &path) {
  std::string err;
  auto a = cuts::rt::readArtifact(path, err);
  if (!a)
    throw CutsError(err);
  const cuts::rt::Manifest &m = *a->plans().back();
  nb::dict d;
  d["model"] = m.model;
  d["precision"] = m.precision;
  d["ranks"] = m.ranks; // tensor-parallel ranks (0: none)
  d["archs"] = m.archs;
  d["target"] = m.target;
  std::vector<int64_t> batches;
  for (const cuts::rt::Manifest *p : a->plans())
    batches.push_back(p->batch);
  d["profiles"] = batches;
  nb::list in, out;
  for (int t : m.inputs)
    in.append(tensorDict(m.tensors[size_t(t)]));
  for (int t : m.outputs)
    out.append(tensorDict(m.tensors[size_t(t)]));
  d["inputs"] = in;
  d["outputs"] = out;
  return d;
}

} // namespace

NB_MODULE(_cuts, m) {
  m.doc() = "The cuts runtime (cuts.h). Use the package `cuts`.";
  nb::exception<CutsError>(m, "CutsError");
  m.def("api_version", &cuts_api_version);
  m.def("describe", &describe, "path"_a);

  nb::class_<Model>(m, "Model")
      .def(nb::init<const std::string &, int, int64_t, std::vector<int>,
                    std::vector<double>, bool, int, int, uint64_t>(),
           "path"_a, "device"_a = 0, "max_batch"_a = 0,
           "devices"_a = std::vector<int>(),
           "device_shares"_a = std::vector<double>(), "master_gpu"_a = false,
           "weight_source"_a = 0, "weight_codec"_a = 0, "weight_budget"_a = 0)
      .def("swap_weights", &Model::swapWeights, "path"_a)
      .def_prop_ro(
          "num_devices",
          [](const Model &x) { return cuts_model_num_devices(x.model.get()); })
      .def_prop_ro(
          "arch", [](const Model &x) { return cuts_model_arch(x.model.get()); })
      .def_prop_ro("device", [](const Model &x) { return x.device; })
      .def_prop_ro(
          "arena_bytes",
          [](const Model &x) { return cuts_model_arena_bytes(x.model.get()); })
      .def_prop_ro(
          "weight_bytes",
          [](const Model &x) { return cuts_model_weight_bytes(x.model.get()); })
      .def_prop_ro(
          "max_batch",
          [](const Model &x) { return cuts_model_max_batch(x.model.get()); })
      .def_prop_ro("profiles", [](const Model &x) {
        std::vector<int64_t> b;
        for (int i = 0; i < cuts_model_num_profiles(x.model.get()); ++i)
          b.push_back(cuts_model_profile_batch(x.model.get(), i));
        return b;
      });

  nb::class_<Session>(m, "Session")
      .def(nb::init<const Model &, bool>(), "model"_a, "cuda_graph"_a = false)
      .def("run", &Session::run, "inputs"_a, "input_dtypes"_a, "outputs"_a,
           "output_dtypes"_a, "device"_a)
      .def("submit", &Session::submit, "inputs"_a, "input_dtypes"_a,
           "outputs"_a, "output_dtypes"_a)
      .def("wait", &Session::wait, "ticket"_a)
      .def("set_preload",
           [](Session &x, bool on) {
             check(cuts_session_set_preload(x.session.get(), on));
           })
      .def("movement", &Session::movement, "reset"_a = false)
      .def("run_info", &Session::runInfo)
      .def("benchmark", &Session::benchmark, "batch"_a, "warmup"_a, "iters"_a);

  // Page-locked host memory as a writable numpy uint8 array (freed with
  // the last array viewing it).
  m.def(
      "pinned",
      [](size_t bytes) {
        void *p = nullptr;
        check(cuts_host_alloc(std::max<size_t>(bytes, 1), &p));
        nb::capsule owner(p, [](void *q) noexcept { cuts_host_free(q); });
        size_t shape[1] = {bytes};
        return nb::ndarray<nb::numpy, uint8_t>(p, 1, shape, owner);
      },
      "bytes"_a);

  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def(nb::init<int, uint64_t>(), "device"_a, "bytes"_a)
      .def_ro("bytes", &DeviceBuffer::bytes)
      .def("copy_to", &DeviceBuffer::copyTo, "host"_a)
      .def("copy_from", &DeviceBuffer::copyFrom, "host"_a)
      .def(
          "view",
          [](nb::handle self, int dtype, std::vector<int64_t> shape,
             int device) {
            return view(self, nb::cast<const DeviceBuffer &>(self),
                        cuts_dtype(dtype), shape, device);
          },
          "dtype"_a, "shape"_a, "device"_a);
}
