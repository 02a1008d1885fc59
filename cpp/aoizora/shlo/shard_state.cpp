#include "aoizora/shlo/shard_state.h"

namespace aoizora::shlo {

std::vector<int64_t> local_shape(const MeshTable& meshes, const TensorType& type,
                                 const TensorSharding& s) {
  std::vector<int64_t> out = type.shape;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t f = shard_factor(meshes, s, d);
    out[d] = (out[d] + f - 1) / f;
  }
  return out;
}

double local_bytes(const MeshTable& meshes, const TensorType& type, const ShardState& st) {
  if (st.manual) return type.bytes();
  double n = 1;
  for (int64_t d : local_shape(meshes, type, st.sharding)) n *= static_cast<double>(d);
  return n * type.element_bytes;
}

}  // namespace aoizora::shlo
