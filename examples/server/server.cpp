//===- server.cpp - a small inference server over a compiled model --------===//
//
// Loads a compiled model (model.cuts) once, then serves a stream of requests
// from an in-process queue with N worker threads, each owning a cuts
// session on its own CUDA stream (a model is shared by all sessions; a
// session belongs to one thread: cuts.h). Requests carry synthetic data
// valid for any model (floats a small value, integers 0 - an index into
// any table - and bools 1, as an attention mask's "attend"); each worker
// copies a batch in, runs, copies the outputs back. At the end: latency
// percentiles (queueing included), throughput and the mean batch.
//
// A model with batch profiles (cuts compile --batch) is served with dynamic
// batching: a request is one sample (batch 1), and a worker takes up to
// --max-batch queued requests (the model's largest batch by default) and
// runs them as one batch (the runtime pads it to a profile). By default it
// takes what is queued and waits for nothing more: at a low rate a request
// runs alone at once, and under load requests queue while the workers run,
// so batches grow with the load. --batch-timeout-us T waits up to T after
// the first request for more. --max-batch 1 is
// the one-request-a-run server to compare with. A model without profiles
// serves each request as one run of its fixed inputs.
//
// --gpus 0,1,... loads the model on each device of the list (a device may
// repeat) and every run splits its batch across them (data parallel; the
// model needs batch profiles); --master-gpu sends every slice through the
// first device instead (the DataParallel-style baseline); --weights
// host|peer|nccl says how the devices after the first get the weights,
// --weight-codec 3to1|bf16 encoded (an artifact compiled with
// --weight-codecs).
// --swap-weights NEW.cuts swaps in the weights of NEW.cuts (the same model
// recompiled with other values) once half the requests have arrived, while
// the workers serve on: a request that fails fails the server.
//
//   cuts-server MODEL.cuts [--workers N] [--requests R] [--rate R_PER_S]
//               [--graph] [--max-batch B] [--batch-timeout-us T]
//               [--gpus 0,1,...] [--master-gpu] [--weights host|peer|nccl]
//               [--weight-codec none|3to1|bf16] [--swap-weights NEW.cuts]
//
//===----------------------------------------------------------------------===//
#include <cuts/cuts.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Request {
  int id;
  Clock::time_point arrived;
};

/// The queue the "network" pushes to and the workers pop from.
class Queue {
public:
  void push(Request r) {
    {
      std::lock_guard<std::mutex> l(m);
      q.push_back(r);
    }
    cv.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> l(m);
      closed = true;
    }
    cv.notify_all();
  }
  /// Up to `most` requests: the first as soon as there is one, the others
  /// as they come within `wait` of it. False once closed and drained.
  bool pop(std::vector<Request> &batch, size_t most,
           std::chrono::microseconds wait) {
    batch.clear();
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return closed || !q.empty(); });
    if (q.empty())
      return false;
    const auto until = Clock::now() + wait;
    while (batch.size() < most) {
      if (q.empty() && !closed && wait.count() > 0 &&
          cv.wait_until(l, until, [&] { return closed || !q.empty(); }))
        continue; // more came (or closed): take it
      if (q.empty())
        break;
      batch.push_back(q.front());
      q.pop_front();
    }
    return true;
  }

private:
  std::mutex m;
  std::condition_variable cv;
  std::deque<Request> q;
  bool closed = false;
};

struct Tensor {
  std::string name;
  cuts_dtype dtype = CUTS_FLOAT32;
  std::vector<int64_t> shape; // shape[0] the batch of a batched tensor
  bool batched = false;
  size_t count = 0;            // elements at the largest shape
  std::vector<uint64_t> words; // the elements' bytes, 8-byte aligned

  void *data() { return words.data(); }
  /// Synthetic data for row `row` of `rows`: `value` in its elements of a
  /// float32 or float64 tensor; integers stay 0 and bools 1 (set once).
  void fill(double value, int64_t row, int64_t rows) {
    size_t per = batched ? count / size_t(shape[0]) : count;
    size_t from = batched ? size_t(row) * per : 0;
    (void)rows;
    if (dtype == CUTS_FLOAT32) {
      float *p = static_cast<float *>(data()) + from;
      std::fill(p, p + per, float(value));
    } else if (dtype == CUTS_FLOAT64) {
      double *p = static_cast<double *>(data()) + from;
      std::fill(p, p + per, value);
    }
  }
};

std::vector<Tensor> tensorsOf(const cuts_model *m, bool inputs) {
  std::vector<Tensor> out;
  int n = inputs ? cuts_model_num_inputs(m) : cuts_model_num_outputs(m);
  for (int i = 0; i < n; ++i) {
    cuts_tensor_info info;
    if ((inputs ? cuts_model_input(m, i, &info)
                : cuts_model_output(m, i, &info)) != CUTS_OK)
      continue;
    Tensor t;
    t.name = info.name;
    t.dtype = info.dtype;
    t.shape.assign(info.shape, info.shape + info.rank);
    t.batched = cuts_model_batch_axis(m, !inputs, i) == 0;
    t.count = 1;
    for (int64_t d : t.shape)
      t.count *= size_t(d);
    size_t bytes = t.count * cuts_dtype_size(info.dtype);
    t.words.assign((bytes + 7) / 8, 0);
    if (info.dtype == CUTS_BOOL && bytes > 0)
      std::memset(t.data(), 1, bytes);
    out.push_back(std::move(t));
  }
  return out;
}

/// Bindings at `batch` (0: the model's shapes): `shapes` holds them.
std::vector<cuts_binding> bindings(std::vector<Tensor> &ts, int64_t batch,
                                   std::vector<std::vector<int64_t>> &shapes) {
  std::vector<cuts_binding> b;
  shapes.resize(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    Tensor &t = ts[i];
    shapes[i] = t.shape;
    if (t.batched && batch > 0)
      shapes[i][0] = batch;
    b.push_back({t.name.c_str(), t.dtype, int(shapes[i].size()),
                 shapes[i].data(), t.data()});
  }
  return b;
}

int fail(const char *what) {
  std::fprintf(stderr, "cuts-server: error: %s: %s\n", what, cuts_last_error());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuts-server MODEL.cuts [--workers N] "
                         "[--requests R] [--rate R_PER_S] [--graph] "
                         "[--max-batch B] [--batch-timeout-us T] "
                         "[--gpus 0,1,...] [--master-gpu] "
                         "[--weights host|peer|nccl] "
                         "[--weight-codec none|3to1|bf16] "
                         "[--swap-weights NEW.cuts]\n");
    return 1;
  }
  std::string path = argv[1];
  int workers = 2, requests = 200;
  double rate = 0; // 0: all requests arrive at once (a throughput test)
  bool graph = false;
  int64_t maxBatch = 0; // 0: the model's largest batch
  long timeoutUs = 0;
  std::vector<int> gpus;
  bool masterGpu = false;
  int weightSource = CUTS_WEIGHTS_HOST;
  int weightCodec = CUTS_CODEC_NONE;
  std::string swapPath; // --swap-weights
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gpus" && i + 1 < argc) {
      for (char *p = argv[++i]; *p;) {
        char *end = nullptr;
        long v = std::strtol(p, &end, 10);
        if (end == p || v < 0) {
          std::fprintf(stderr, "cuts-server: error: --gpus needs device "
                               "ordinals, e.g. 0,1\n");
          return 1;
        }
        gpus.push_back(int(v));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "--master-gpu") {
      masterGpu = true;
    } else if (a == "--weights" && i + 1 < argc) {
      const std::string v = argv[++i];
      weightSource = v == "host"   ? CUTS_WEIGHTS_HOST
                     : v == "peer" ? CUTS_WEIGHTS_PEER
                     : v == "nccl" ? CUTS_WEIGHTS_NCCL
                                   : -1;
      if (weightSource < 0) {
        std::fprintf(stderr, "cuts-server: error: --weights needs host, "
                             "peer or nccl\n");
        return 1;
      }
    } else if (a == "--weight-codec" && i + 1 < argc) {
      const std::string v = argv[++i];
      weightCodec = v == "none"   ? CUTS_CODEC_NONE
                    : v == "3to1" ? CUTS_CODEC_3TO1
                    : v == "bf16" ? CUTS_CODEC_BF16
                                  : -1;
      if (weightCodec < 0) {
        std::fprintf(stderr, "cuts-server: error: --weight-codec needs none, "
                             "3to1 or bf16\n");
        return 1;
      }
    } else if (a == "--swap-weights" && i + 1 < argc) {
      swapPath = argv[++i];
    } else if (a == "--max-batch" && i + 1 < argc)
      maxBatch = std::max(1, std::atoi(argv[++i]));
    else if (a == "--batch-timeout-us" && i + 1 < argc)
      timeoutUs = std::max(0L, std::atol(argv[++i]));
    else if (a == "--workers" && i + 1 < argc)
      workers = std::max(1, std::atoi(argv[++i]));
    else if (a == "--requests" && i + 1 < argc)
      requests = std::max(1, std::atoi(argv[++i]));
    else if (a == "--rate" && i + 1 < argc)
      rate = std::atof(argv[++i]);
    else if (a == "--graph")
      graph = true;
    else {
      std::fprintf(stderr, "cuts-server: error: unknown option '%s'\n",
                   a.c_str());
      return 1;
    }
  }

  cuts_model *model = nullptr;
  cuts_load_options options{};
  options.devices = gpus.data(), options.num_devices = int(gpus.size());
  options.master_gpu = masterGpu;
  options.weight_source = weightSource;
  options.weight_codec = weightCodec;
  if (cuts_model_load(path.c_str(), &options, &model) != CUTS_OK)
    return fail(path.c_str());
  // Dynamic batching where the model has profiles: requests of one sample.
  const int64_t modelBatch = cuts_model_max_batch(model);
  if (modelBatch == 0)
    maxBatch = 0;
  else if (maxBatch == 0 || maxBatch > modelBatch)
    maxBatch = modelBatch;
  std::printf("%s: %d inputs, %d outputs, %d kernels, arch %s, %d device(s), "
              "arena %.1f MiB per session\n",
              path.c_str(), cuts_model_num_inputs(model),
              cuts_model_num_outputs(model), cuts_model_num_kernels(model),
              cuts_model_arch(model), cuts_model_num_devices(model),
              double(cuts_model_arena_bytes(model)) / (1 << 20));

  Queue queue;
  std::vector<double> latencyMs(size_t(requests), 0);
  std::atomic<int> failed{0}, runs{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      cuts_session *s = nullptr;
      if (cuts_session_create(model, nullptr, graph, &s) != CUTS_OK) {
        std::fprintf(stderr, "worker %d: %s\n", w, cuts_last_error());
        ++failed;
        return;
      }
      std::vector<Tensor> in = tensorsOf(model, true);
      std::vector<Tensor> out = tensorsOf(model, false);
      std::vector<std::vector<int64_t>> si, so;
      std::vector<Request> batch;
      while (queue.pop(batch, maxBatch > 0 ? size_t(maxBatch) : 1,
                       std::chrono::microseconds(timeoutUs))) {
        const int64_t n = maxBatch > 0 ? int64_t(batch.size()) : 0;
        for (size_t k = 0; k < batch.size(); ++k)
          for (Tensor &t : in) // synthetic request data, a row each
            t.fill((batch[k].id % 7) * 0.1, int64_t(k), n);
        std::vector<cuts_binding> bi = bindings(in, n, si),
                                  bo = bindings(out, n, so);
        if (cuts_session_run_host(s, bi.data(), int(bi.size()), bo.data(),
                                  int(bo.size())) != CUTS_OK) {
          std::fprintf(stderr, "requests %d..: %s\n", batch[0].id,
                       cuts_last_error());
          failed += int(batch.size());
          continue;
        }
        const auto done = Clock::now();
        for (const Request &r : batch)
          latencyMs[size_t(r.id)] =
              std::chrono::duration<double, std::milli>(done - r.arrived)
                  .count();
        runs += 1;
      }
      cuts_session_free(s);
    });

  auto start = Clock::now();
  for (int i = 0; i < requests; ++i) {
    if (rate > 0)
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(i / rate)));
    queue.push({i, Clock::now()});
    if (!swapPath.empty() && i == requests / 2) {
      const auto t0 = Clock::now();
      if (cuts_model_swap_weights(model, swapPath.c_str()) != CUTS_OK) {
        std::fprintf(stderr, "swapping the weights: %s\n", cuts_last_error());
        ++failed;
      } else {
        std::printf("weights swapped in from %s in %.1f ms while serving\n",
                    swapPath.c_str(),
                    std::chrono::duration<double, std::milli>(Clock::now() - t0)
                        .count());
      }
    }
  }
  queue.close();
  for (std::thread &t : pool)
    t.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cuts_model_free(model);
  if (failed)
    return fail("serving failed");

  std::sort(latencyMs.begin(), latencyMs.end());
  auto pct = [&](double p) {
    return latencyMs[std::min(latencyMs.size() - 1,
                              size_t(p / 100 * double(latencyMs.size())))];
  };
  std::printf("%d requests, %d workers%s, max batch %lld: p50 %.3f ms, p90 "
              "%.3f ms, p99 %.3f ms, max %.3f ms; %.1f requests/s, mean batch "
              "%.2f\n",
              requests, workers, graph ? " (CUDA graphs)" : "",
              (long long)std::max<int64_t>(maxBatch, 1), pct(50), pct(90),
              pct(99), latencyMs.back(), requests / seconds,
              double(requests) / std::max(1, runs.load()));
  return 0;
}
