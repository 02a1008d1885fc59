// Top-K selection of Stage 1: which candidates go on to Stage 2, ranked by their Q1
// score, and the K that recorded settings ask for.
#pragma once

#include <vector>

namespace aoizora::stage1 {

// Indices of the k best candidates by Q1 (ascending, stable), skipping those whose q1 is
// negative or not finite (rejected). k <= 0 keeps them all.
std::vector<int> select_top_k(const std::vector<double>& q1, int k);

// The smallest K whose Top-K contained the winner in every recorded setting: `winner_ranks`
// holds, per setting, the 0-based Q1 rank of the logical sharding that won after Stage 2.
// At least `min_k`; `slack` extra ranks added as a safety margin.
int k_from_recall(const std::vector<int>& winner_ranks, int min_k = 1, int slack = 1);

}  // namespace aoizora::stage1
