// The cost of one call of the Pallas splash-attention forward kernel, from its shapes: one
// formula for Stage 1 (StableHLO, shlo/kernel_call.h) and the compiled-HLO cost model
// (hlo/kernel_cost.h), so Q1 and the simulator price the kernel alike. The kernel visits
// every (q block, kv block) pair, keeps scores and the online-softmax state on chip, and
// streams K/V once per q block (docs/simulator.md, "Pallas kernels"):
//   flops = 2 B H Sq Skv (D + Dv)                   (QK^T and PV; multiply-add = 2)
//   bytes = operands + results + (ceil(Sq / block_q) - 1) (K + V bytes)
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "aoizora/compute/mxu.h"

namespace aoizora::compute {

struct SplashCall {
  double batch_heads = 0;  // B x H of one call
  double q_len = 0, kv_len = 0, head_dim = 0, head_dim_v = 0;
  double block_q = 0;      // <= 0 or > q_len: one q block
  double kv_bytes = 0;     // K + V bytes
  double io_bytes = 0;     // every operand and result once
};

inline double splash_flops(const SplashCall& c) {
  return 2 * c.batch_heads * c.q_len * c.kv_len * (c.head_dim + c.head_dim_v);
}

// The kernel's two matmuls per (batch, head) as the MXU runs them (compute/mxu.h): scores
// Q K^T ([Sq, D] x [D, Skv]) and P V ([Sq, Skv] x [Skv, Dv]).
inline std::vector<Matmul> splash_matmuls(const SplashCall& c) {
  return {Matmul{c.q_len, c.kv_len, c.head_dim, c.batch_heads},
          Matmul{c.q_len, c.head_dim_v, c.kv_len, c.batch_heads}};
}

inline double splash_bytes(const SplashCall& c) {
  const double block = c.block_q > 0 && c.block_q <= c.q_len ? c.block_q : c.q_len;
  const double q_blocks = block > 0 ? std::ceil(c.q_len / block) : 1;
  return c.io_bytes + (q_blocks - 1) * c.kv_bytes;
}

// The integer after `key` in the kernel's block-size JSON as either text form prints it:
// HLO's \"block_q\": 512 or StableHLO's \\\22block_q\\\22: 512. The key must stand alone, so
// block_q does not match block_q_dkv. 0 when absent or null.
inline int64_t kernel_block_size(std::string_view text, std::string_view key) {
  const auto ident = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  };
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    size_t i = at + key.size();
    if ((at > 0 && ident(text[at - 1]) && text[at - 1] != '2') || (i < text.size() && ident(text[i])))
      continue;  // part of a longer name (a "\22" quote ends in '2')
    while (i < text.size()) {
      if (text.substr(i, 3) == "\\22") i += 3;
      else if (text[i] == '\\' || text[i] == '"' || text[i] == ':' || text[i] == ' ') ++i;
      else break;
    }
    int64_t v = 0;
    if (std::from_chars(text.data() + i, text.data() + text.size(), v).ec == std::errc()) return v;
    return 0;
  }
  return 0;
}

}  // namespace aoizora::compute
