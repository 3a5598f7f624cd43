// Writes a cuts tune candidates file with one matmul kernel per argument
// "M,K,N,batch,Nb,Kb,Nt,Kt,Cin,format,name" (experiment, not committed).
#include "codegen/emit/Cuda.h"
#include "codegen/ops/MatMul.h"
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
using namespace cuts;
int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::stringstream ss(argv[i]);
    std::vector<std::string> f;
    std::string t;
    while (std::getline(ss, t, ','))
      f.push_back(t);
    int64_t M = std::stoll(f[0]), K = std::stoll(f[1]), N = std::stoll(f[2]),
            B = std::stoll(f[3]);
    TileParams p;
    p.Nb = std::stoll(f[4]), p.Kb = std::stoll(f[5]), p.Nt = std::stoll(f[6]),
    p.Kt = std::stoll(f[7]), p.Cin = std::stoll(f[8]), p.format = std::stoi(f[9]);
    std::string err;
    auto k = codegen::buildMatMul("cuts_kernel", M, K, N, p, {}, err, false,
                                  false, B);
    if (!k) {
      std::fprintf(stderr, "%s: %s\n", argv[i], err.c_str());
      return 1;
    }
    auto ls = codegen::launchShape(*k);
    int64_t b = std::max<int64_t>(B, 1);
    nlohmann::json c = {{"argBytes", {b * M * K * 4, b * K * N * 4, b * M * N * 4}},
                        {"argOutput", {0, 0, 1}},
                        {"block", ls.threads},
                        {"grid", ls.blocks},
                        {"group", -1},
                        {"key", "sm_90/13.0/prof" + f[10]},
                        {"level", 0},
                        {"library", ""},
                        {"libraryParams", nlohmann::json::array()},
                        {"name", "cuts_kernel"},
                        {"sharedBytes", ls.sharedBytes},
                        {"source", codegen::emitSource(*k)}};
    nlohmann::json d = {{"arch", "sm_90"}, {"format", 1}, {"candidates", {c}}};
    std::ofstream(f[10] + ".json") << d.dump();
    std::printf("%s grid %lld block %lld smem %lld\n", f[10].c_str(),
                (long long)ls.blocks, (long long)ls.threads,
                (long long)ls.sharedBytes);
  }
}
