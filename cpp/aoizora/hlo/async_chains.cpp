#include "aoizora/hlo/async_chains.h"

#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/op_cost.h"

namespace aoizora::hlo {

void AsyncChains::scheduled(int ci, int region, int op) {
  if (static_cast<int>(tail_.size()) <= ci) tail_.resize(ci + 1);
  tail_[ci] = {region, op};
}

std::vector<int> AsyncChains::chained(const HloModule& m, const std::vector<Found>& found,
                                      const CollectiveGraph& g) const {
  std::vector<int> chained;
  for (const Found& f : found) {
    const Computation& comp = m.computations[f.comp];
    const Instruction& inner = comp.instructions[f.index];
    auto channel = attribute_int(inner.attr("channel_id"));
    auto it = channel ? open_.find(*channel) : open_.end();
    if (it == open_.end()) return {};
    int64_t operand_bytes = 0;
    for (int k : inner.operands)
      if (k >= 0) operand_bytes += comp.instructions[k].shape.byte_size();
    const Collective& col = g.collectives[it->second];
    if (col.kind != *collective_kind(inner.opcode) || col.operand_bytes != operand_bytes)
      return {};
    chained.push_back(it->second);
  }
  return chained;
}

void AsyncChains::continue_chain(const Instruction& ins, const std::vector<int>& chained,
                                 ScheduledOp op, CollectiveGraph& g) {
  const int region_index = static_cast<int>(g.regions.size()) - 1;
  const int op_index = static_cast<int>(g.regions.back().ops.size());
  const bool continuation = is_continuation_fusion(ins);
  for (int ci : chained) {
    Collective& col = g.collectives[ci];
    ScheduledOp& prev = g.regions[tail_[ci].first].ops[tail_[ci].second];
    if (tail_[ci] == std::pair{col.region, col.start_op}) {
      prev.kind = OpKind::kCollectiveStart;
      col.async = true;
    } else {
      prev.kind = OpKind::kCompute;
      prev.collective = -1;
      prev.collectives.clear();
    }
    col.done_op = op_index;
    col.done_region = col.region == region_index ? -1 : region_index;
    tail_[ci] = {region_index, op_index};
    if (!continuation) open_.erase(col.channel_id);
  }
  op.collectives = chained;
  op.collective = chained.front();
  op.kind = OpKind::kCollectiveDone;
  g.regions.back().ops.push_back(std::move(op));
}

}  // namespace aoizora::hlo
