// The front door of hlo/: compiled HLO module text in, CollectiveGraph out.
//
// Accepts the text of `compiled.as_text()` and of XLA dumps (`*.after_optimizations.txt`),
// TPU- or CPU-compiled. Parse errors come back as an Error with the file name (when given),
// 1-based line and column, and what was expected; the loader never throws and never prints.
#pragma once

#include <string>
#include <string_view>

#include "aoizora/base/status.h"
#include "aoizora/hlo/collective_graph.h"

namespace aoizora::hlo {

struct LoadOptions {
  // Devices the program runs on, taken as num_partitions when the module header has neither
  // replica_count nor num_partitions; 0 (default): then both are inferred from the replica
  // groups (device_count.h). CollectiveGraph::device_count_source says which.
  int num_devices = 0;
};

// Parses `text` and extracts the collective graph: regions (entry cut at while loops, trip
// counts multiplied through nesting), collectives with groups resolved into partition ids,
// and per-op FLOPs and bytes. `filename` is only used in error messages.
Result<CollectiveGraph> collective_graph_from_text(std::string_view text,
                                                   std::string filename = "",
                                                   const LoadOptions& options = {});

// Reads the file at `path` and calls collective_graph_from_text on its contents.
Result<CollectiveGraph> collective_graph_from_file(const std::string& path,
                                                   const LoadOptions& options = {});

}  // namespace aoizora::hlo
