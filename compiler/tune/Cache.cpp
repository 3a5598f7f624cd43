//===- Cache.cpp - kernel signatures, the tuning cache, candidate lists ---===//
#include "compiler/tune/Tuner.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace cuts::tune {
namespace {

using nlohmann::json;

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull; // FNV-1a 64
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

const char *kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string toBase64(const std::vector<char> &in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 |
                 uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k)
      out += kBase64[(v >> (6 * k)) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size())
      v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool fromBase64(const std::string &in, std::vector<char> &out) {
  out.clear();
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=')
      break;
    const char *p = std::strchr(kBase64, c);
    if (!p || !c)
      return false;
    v = v << 6 | uint32_t(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((v >> bits) & 0xff));
    }
  }
  return true;
}

} // namespace

std::string signature(const std::string &code, const std::string &arch,
                      const std::string &toolkit) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(code)));
  return arch + "/" + toolkit + "/" + hex;
}

std::string librarySignature(const std::string &library,
                             const std::vector<int64_t> &params,
                             const std::string &arch) {
  // "ws1": timed with each call's workspace its own and its memsets at the
  // graph's start, as a model's graph runs it (Measure.cpp); times from
  // before, its memsets in the chain, are not reused.
  std::string s = library + "/" + arch + "/ws1/";
  for (size_t i = 0; i < params.size(); ++i)
    s += (i ? "," : "") + std::to_string(params[i]);
  return s;
}

bool Cache::load(const std::string &path, std::string &error) {
  std::ifstream f(path);
  if (!f)
    return true; // no cache yet
  try {
    json j = json::parse(f);
    if (j.value("format", 0) != 1) {
      error = path + ": not a cuts tuning cache (format 1)";
      return false;
    }
    for (const auto &[key, e] : j.at("entries").items()) {
      Entry x;
      if (e.contains("us") && !e["us"].is_null())
        x.us = e["us"].get<double>();
      x.note = e.value("note", "");
      entries[key] = x;
    }
    if (j.contains("binaries"))
      for (const auto &[key, b] : j["binaries"].items()) {
        std::vector<char> bytes;
        if (!fromBase64(b.get<std::string>(), bytes)) {
          error = path + ": binary " + key + " is not base64";
          return false;
        }
        binaries[key] = std::move(bytes);
      }
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
  return true;
}

bool Cache::save(const std::string &path, std::string &error) const {
  json entriesJson = json::object();
  for (const auto &[key, e] : entries) {
    json x = {{"note", e.note}};
    x["us"] = e.us ? json(*e.us) : json(nullptr);
    entriesJson[key] = x;
  }
  json bins = json::object();
  for (const auto &[key, b] : binaries)
    bins[key] = toBase64(b);
  json j = {{"format", 1}, {"entries", entriesJson}, {"binaries", bins}};
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  if (!f) {
    error = path + ": cannot write";
    return false;
  }
  return true;
}

const std::vector<char> *Cache::binary(const std::string &key) const {
  auto it = binaries.find(key);
  return it == binaries.end() ? nullptr : &it->second;
}

const Cache::Entry *Cache::find(const std::string &key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}

std::string candidatesToJson(const std::vector<Candidate> &cs,
                             const std::string &arch) {
  json list = json::array();
  for (const Candidate &c : cs) {
    std::vector<int> outs;
    for (bool o : c.argOutput)
      outs.push_back(o);
    std::vector<int> zeroed;
    for (bool z : c.argZeroed)
      zeroed.push_back(z);
    list.push_back({{"key", c.key},
                    {"name", c.name},
                    {"source", c.source},
                    {"grid", c.grid},
                    {"block", c.block},
                    {"sharedBytes", c.sharedBytes},
                    {"argBytes", c.argBytes},
                    {"argOutput", outs},
                    {"argZeroed", zeroed},
                    {"library", c.library},
                    {"libraryParams", c.libraryParams},
                    {"group", c.group},
                    {"level", c.level}});
  }
  return json({{"format", 1}, {"arch", arch}, {"candidates", list}}).dump(1) +
         "\n";
}

bool candidatesFromJson(const std::string &text, std::vector<Candidate> &cs,
                        std::string &arch, std::string &error) {
  try {
    json j = json::parse(text);
    arch = j.at("arch").get<std::string>();
    for (const json &x : j.at("candidates")) {
      Candidate c;
      c.key = x.at("key").get<std::string>();
      c.name = x.at("name").get<std::string>();
      c.source = x.at("source").get<std::string>();
      c.grid = x.at("grid").get<int64_t>();
      c.block = x.at("block").get<int64_t>();
      c.sharedBytes = x.at("sharedBytes").get<int64_t>();
      c.argBytes = x.at("argBytes").get<std::vector<uint64_t>>();
      for (int o : x.at("argOutput").get<std::vector<int>>())
        c.argOutput.push_back(o != 0);
      for (int z : x.value("argZeroed", std::vector<int>{}))
        c.argZeroed.push_back(z != 0);
      c.library = x.value("library", "");
      c.libraryParams = x.value("libraryParams", std::vector<int64_t>{});
      c.group = x.value("group", -1);
      c.level = x.value("level", 0);
      if (c.argOutput.size() != c.argBytes.size() ||
          (!c.argZeroed.empty() && c.argZeroed.size() != c.argBytes.size()) ||
          c.grid < 1 || c.block < 1 || c.sharedBytes < 0) {
        error = "candidate " + c.name + " is malformed";
        return false;
      }
      cs.push_back(std::move(c));
    }
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
  return true;
}

} // namespace cuts::tune
