#include "aoizora/bind/bind.h"

NB_MODULE(_core, m) {
  m.doc() = "AoiZora's C++ analysis core: HLO/StableHLO parsing, topology, Q1/Q2, simulation.";
  aoizora::bind::bind_base(m);
  aoizora::bind::bind_hlo(m);
  aoizora::bind::bind_topo(m);
  aoizora::bind::bind_place(m);
  aoizora::bind::bind_cost(m);
  aoizora::bind::bind_stage2(m);
  aoizora::bind::bind_sim(m);
  aoizora::bind::bind_stage1(m);
}
