// The logical mesh a compiled HLO program was built for, read from its shardings' text: what
// `aoizora rank`, `aoizora simulate` and `aoizora-rank` rank and simulate on without --mesh
// (the Python commands through _core.own_mesh, python/aoizora/compile/compiled_program.py,
// which also refuses a --mesh these shardings do not allow).
//
// Each tiled sharding `devices=[t0,t1,...]<=[N]` (a plain iota) splits the devices, in
// order, at the prefix products of its tile sizes; one with a transposed iota,
// `<=[r0,r1,...]T(...)`, at the prefix products of its reshape sizes (the mesh axes it was
// built from). Only shardings whose sizes multiply to `partitions` count. The mesh is the
// common refinement of those splits: the sizes between consecutive splits. Where the splits
// are no chain of divisors, or none is found, the mesh is one axis of `partitions`. Axes of
// size 1 leave no trace and are not part of it; explicit device lists are not read.
// Pure text scan: never fails, deterministic.
#pragma once

#include <string_view>
#include <vector>

namespace aoizora::hlo {

std::vector<int> own_mesh(std::string_view hlo_text, int partitions);

}  // namespace aoizora::hlo
