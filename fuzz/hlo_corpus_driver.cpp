// Runs the HLO front end over many files and prints one JSON line per file: what the parser
// made of it (computations, instructions, opcode histogram, or the error) and whether the
// loader built a CollectiveGraph from it (how many collectives, or the error). Used by
// fuzz/hlo_corpus_run.py and bench-style checks; it only calls the public API
// (parse_hlo_module, collective_graph_from_text), so it builds against any version of hlo/.
//
//   g++ -std=c++20 -O2 -Icpp fuzz/hlo_corpus_driver.cpp cpp/aoizora/hlo/*.cpp \
//     cpp/aoizora/base/*.cpp -o build/hlo_corpus_driver
//   ls corpus/*.hlo | build/hlo_corpus_driver > results.jsonl
//
// Before each file it prints `start <path>` on stderr and flushes, so that whoever runs it can
// tell which file a crash happened on.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/hlo/hlo_parser.h"

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string describe(const std::string& path, const std::string& text) {
  std::ostringstream o;
  o << "{\"path\":" << json_string(path);
  auto m = aoizora::hlo::parse_hlo_module(text, path);
  if (!m.ok()) {
    o << ",\"parse\":false,\"error\":" << json_string(m.error().to_string()) << "}";
    return o.str();
  }
  std::map<std::string, int> ops;
  size_t instructions = 0;
  for (const auto& c : m->computations) {
    instructions += c.instructions.size();
    for (const auto& ins : c.instructions) ++ops[std::string(ins.opcode)];
  }
  o << ",\"parse\":true,\"computations\":" << m->computations.size()
    << ",\"instructions\":" << instructions << ",\"opcodes\":{";
  bool first = true;
  for (const auto& [op, n] : ops) {
    o << (first ? "" : ",") << json_string(op) << ":" << n;
    first = false;
  }
  o << "}";
  auto g = aoizora::hlo::collective_graph_from_text(text, path);
  if (g.ok()) {
    o << ",\"load\":true,\"collectives\":" << g->collectives.size();
  } else {
    o << ",\"load\":false,\"load_error\":" << json_string(g.error().to_string());
  }
  o << "}";
  return o.str();
}

}  // namespace

int main() {
  std::string path;
  while (std::getline(std::cin, path)) {
    if (path.empty()) continue;
    std::cerr << "start " << path << std::endl;
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    std::cout << describe(path, buf.str()) << std::endl;
  }
  return 0;
}
