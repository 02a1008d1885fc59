// libFuzzer target for the HLO front end: any byte string must give a CollectiveGraph or an
// Error, never a crash, a hang or an out-of-bounds read. Seed corpus: tests/data/hlo/*.hlo.
//
//   clang++ -std=c++20 -O1 -g -fsanitize=address,undefined,fuzzer -fno-sanitize-recover=undefined \
//     -Icpp fuzz/hlo_parser_fuzzer.cpp cpp/aoizora/hlo/*.cpp cpp/aoizora/base/*.cpp \
//     -o build/hlo-fuzz/hlo_parser_fuzzer
//   mkdir -p /tmp/corpus && cp tests/data/hlo/*.hlo /tmp/corpus/
//   build/hlo-fuzz/hlo_parser_fuzzer -max_total_time=600 -max_len=32768 -dict=fuzz/hlo.dict /tmp/corpus
// (CMake's AOIZORA_BUILD_FUZZ=ON also works once the whole library compiles with clang; it
// needs -DCMAKE_CXX_FLAGS=-fsanitize=address,fuzzer-no-link so the library is instrumented.)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/hlo/replica_groups.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto graph = aoizora::hlo::collective_graph_from_text(text, "fuzz.hlo");
  if (graph.ok()) {
    (void)graph->total_flops();
    (void)graph->total_bytes();
  } else {
    (void)graph.error().to_string();
  }
  // The replica_groups grammar on its own, since the loader reaches it only for collectives.
  if (size < 512) (void)aoizora::hlo::parse_replica_groups(text);
  return 0;
}
