#include "aoizora/place/ring_orders.h"

#include <algorithm>
#include <functional>

namespace aoizora::place {
namespace {

const char kLetters[] = "xyzc";  // c: the core on the chip (TPU7x)
using Coords = topo::DeviceCoords;
using Extent = std::array<int, topo::kDeviceAxes>;

// Boustrophedon over the given axes (fastest first) of a box of extents ext: each step moves
// one unit along one axis.
std::vector<Coords> snake(const std::vector<int>& axes, const Extent& ext) {
  std::vector<Coords> path{{0, 0, 0, 0}};
  for (int a : axes) {
    std::vector<Coords> next;
    for (int j = 0; j < ext[static_cast<size_t>(a)]; ++j) {
      if (j % 2 == 0) {
        for (auto c : path) next.push_back((c[static_cast<size_t>(a)] = j, c));
      } else {
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
          auto c = *it;
          c[static_cast<size_t>(a)] = j;
          next.push_back(c);
        }
      }
    }
    path = std::move(next);
  }
  return path;
}

}  // namespace

std::vector<std::array<int, 2>> grid_cycle(int w, int h) {
  std::vector<std::array<int, 2>> out;
  if (w < 2 || h < 2 || (w * h) % 2) return out;
  const bool swap = h % 2 != 0;  // the rows we sweep must be even in number
  const int W = swap ? h : w, H = swap ? w : h;
  // Column 0 is the way back; rows sweep columns 1..W-1 alternately.
  out.push_back({0, 0});
  for (int y = 0; y < H; ++y)
    for (int i = 1; i < W; ++i) out.push_back({y % 2 == 0 ? i : W - i, y});
  for (int y = H - 1; y >= 1; --y) out.push_back({0, y});
  if (swap)
    for (auto& c : out) std::swap(c[0], c[1]);
  return out;
}

std::vector<Placement> snake_orders(const topo::Topology& t) {
  std::vector<Placement> out;
  const Extent dims = t.device_dims();
  std::vector<int> axes;
  for (int d = 0; d < topo::kDeviceAxes; ++d)
    if (dims[static_cast<size_t>(d)] > 1) axes.push_back(d);
  if (axes.size() < 2) return out;  // a line: the snake is row-major
  std::sort(axes.begin(), axes.end());
  do {
    Placement p;
    p.name = "snake ";
    for (int a : axes) p.name += kLetters[a];
    for (const auto& c : snake(axes, dims)) p.device_of.push_back(t.device_at(c));
    out.push_back(std::move(p));
  } while (std::next_permutation(axes.begin(), axes.end()));
  return out;
}

std::vector<Placement> tile_cycle_orders(const topo::Topology& t, const MeshShape& mesh) {
  std::vector<Placement> out;
  if (mesh.empty()) return out;
  const int L = mesh.back();
  const int n = t.num_devices();
  if (L < 4 || L > n || n % L) return out;
  const Extent dims = t.device_dims();
  for (int a = 0; a < topo::kDeviceAxes; ++a)
    for (int b = a + 1; b < topo::kDeviceAxes; ++b)
      for (int w = 2; w <= dims[static_cast<size_t>(a)]; ++w) {
        if (L % w || dims[static_cast<size_t>(a)] % w) continue;
        const int h = L / w;
        if (h < 2 || dims[static_cast<size_t>(b)] % h || (w * h) % 2) continue;
        const auto cyc = grid_cycle(w, h);
        Extent tiles = dims;
        tiles[static_cast<size_t>(a)] /= w;
        tiles[static_cast<size_t>(b)] /= h;
        std::vector<int> axes;
        for (int d = 0; d < topo::kDeviceAxes; ++d)
          if (tiles[static_cast<size_t>(d)] > 1) axes.push_back(d);
        Placement p;
        p.name = "cycle " + std::to_string(w) + "x" + std::to_string(h) + " " + kLetters[a] + kLetters[b];
        for (const auto& tile : snake(axes, tiles)) {
          for (const auto& off : cyc) {
            Coords c{};
            for (size_t d = 0; d < c.size(); ++d) c[d] = tile[d] * (dims[d] / tiles[d]);
            c[static_cast<size_t>(a)] += off[0];
            c[static_cast<size_t>(b)] += off[1];
            p.device_of.push_back(t.device_at(c));
          }
        }
        out.push_back(std::move(p));
      }
  return out;
}

}  // namespace aoizora::place
