//===- server.cpp - a small inference server over a compiled model --------===//
//
// Loads a compiled model (model.cuts) once, then serves a stream of requests
// from an in-process queue with N worker threads, each owning a cuts
// session on its own CUDA stream (a model is shared by all sessions; a
// session belongs to one thread: cuts.h). Requests are batches of the
// model's inputs filled with synthetic data valid for any model (floats a
// small value, integers 0 - an index into any table - and bools 1, as an
// attention mask's "attend"); each worker copies a request in, runs, copies
// the outputs back. At the end: latency percentiles (queueing included) and
// throughput.
//
//   cuts-server MODEL.cuts [--workers N] [--requests R] [--rate R_PER_S]
//               [--graph]
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
  bool pop(Request &r) {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return closed || !q.empty(); });
    if (q.empty())
      return false;
    r = q.front();
    q.pop_front();
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
  std::vector<int64_t> shape;
  size_t count = 0;            // elements
  std::vector<uint64_t> words; // the elements' bytes, 8-byte aligned

  void *data() { return words.data(); }
  /// Synthetic request data: `value` in every element of a float32 or
  /// float64 tensor; integers stay 0 and bools 1 (set once).
  void fill(double value) {
    if (dtype == CUTS_FLOAT32) {
      float *p = static_cast<float *>(data());
      std::fill(p, p + count, float(value));
    } else if (dtype == CUTS_FLOAT64) {
      double *p = static_cast<double *>(data());
      std::fill(p, p + count, value);
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

std::vector<cuts_binding> bindings(std::vector<Tensor> &ts) {
  std::vector<cuts_binding> b;
  for (Tensor &t : ts)
    b.push_back({t.name.c_str(), t.dtype, int(t.shape.size()), t.shape.data(),
                 t.data()});
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
                         "[--requests R] [--rate R_PER_S] [--graph]\n");
    return 1;
  }
  std::string path = argv[1];
  int workers = 2, requests = 200;
  double rate = 0; // 0: all requests arrive at once (a throughput test)
  bool graph = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--workers" && i + 1 < argc)
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
  if (cuts_model_load(path.c_str(), nullptr, &model) != CUTS_OK)
    return fail(path.c_str());
  std::printf("%s: %d inputs, %d outputs, %d kernels, arch %s, arena %.1f "
              "MiB per session\n",
              path.c_str(), cuts_model_num_inputs(model),
              cuts_model_num_outputs(model), cuts_model_num_kernels(model),
              cuts_model_arch(model),
              double(cuts_model_arena_bytes(model)) / (1 << 20));

  Queue queue;
  std::vector<double> latencyMs(size_t(requests), 0);
  std::atomic<int> failed{0};
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
      std::vector<cuts_binding> bi = bindings(in), bo = bindings(out);
      Request r;
      while (queue.pop(r)) {
        for (Tensor &t : in) // synthetic request data
          t.fill((r.id % 7) * 0.1);
        if (cuts_session_run_host(s, bi.data(), int(bi.size()), bo.data(),
                                  int(bo.size())) != CUTS_OK) {
          std::fprintf(stderr, "request %d: %s\n", r.id, cuts_last_error());
          ++failed;
          continue;
        }
        latencyMs[size_t(r.id)] =
            std::chrono::duration<double, std::milli>(Clock::now() - r.arrived)
                .count();
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
  std::printf("%d requests, %d workers%s: p50 %.3f ms, p90 %.3f ms, p99 %.3f "
              "ms, max %.3f ms; %.1f requests/s\n",
              requests, workers, graph ? " (CUDA graphs)" : "", pct(50),
              pct(90), pct(99), latencyMs.back(), requests / seconds);
  return 0;
}
