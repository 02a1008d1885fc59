#include "aoizora/sim/trace.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace aoizora::sim {
namespace {

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_number(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  out += buf;
}

const char* category(SliceKind k) {
  switch (k) {
    case SliceKind::kCompute: return "compute";
    case SliceKind::kCollectiveWait: return "wait";
    case SliceKind::kCollectiveComm: return "comm";
    case SliceKind::kExtrapolated: return "extrapolated";
  }
  return "compute";
}

std::string coords_text(const topo::Topology& t, int chip) {
  const auto& x = t.chips[static_cast<size_t>(chip)].coords;
  return "(" + std::to_string(x[0]) + "," + std::to_string(x[1]) + "," + std::to_string(x[2]) +
         ")";
}

// A device's row: "chip 3 (1,1,0)", or "device 6: chip 3 (1,1,0) core 0" on two-core chips.
std::string chip_name(const topo::Topology& t, int device) {
  const int chip = t.chip_of_device(device);
  if (t.cores_per_chip() == 1) return "chip " + std::to_string(chip) + " " + coords_text(t, chip);
  return "device " + std::to_string(device) + ": chip " + std::to_string(chip) + " " +
         coords_text(t, chip) + " core " + std::to_string(t.core_of_device(device));
}

}  // namespace

std::string trace_json(const SimResult& result, const topo::Topology& topology) {
  constexpr int kChipsPid = 1, kLinksPid = 2;
  const Timeline& tl = result.timeline;
  std::string out;
  out.reserve(128 * (tl.slices.size() + tl.links.size()) + 1024);
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"topology\":";
  append_escaped(out, topology.name);
  out += ",\"step_seconds\":";
  char step[32];
  std::snprintf(step, sizeof step, "%.9g", result.step_seconds);
  out += step;
  out += "},\"traceEvents\":[\n";
  bool first = true;
  auto begin = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    begin();
    out += "{\"name\":\"";
    out += what;
    out += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
           ",\"args\":{\"name\":";
    append_escaped(out, name);
    out += "}}";
  };
  meta("process_name", kChipsPid, 0, "chips (simulated on " + topology.name + ")");
  meta("process_name", kLinksPid, 0, "links (GB/s)");
  std::set<int> chips;
  for (const Slice& s : tl.slices) chips.insert(s.chip);
  for (int c : chips) meta("thread_name", kChipsPid, c, chip_name(topology, c));
  for (const Slice& s : tl.slices) {
    begin();
    out += "{\"name\":";
    append_escaped(out, s.label >= 0 && s.label < static_cast<int>(tl.labels.size())
                            ? tl.labels[static_cast<size_t>(s.label)]
                            : std::string("?"));
    out += ",\"cat\":\"";
    out += category(s.kind);
    out += "\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(s.chip) + ",\"ts\":";
    append_number(out, s.start * 1e6);
    out += ",\"dur\":";
    append_number(out, (s.end - s.start) * 1e6);
    out += "}";
  }
  auto coords = [&](int c) { return coords_text(topology, c); };
  for (const LinkSample& l : tl.links) {
    const topo::Link& link = topology.links[static_cast<size_t>(l.link)];
    begin();
    out += "{\"name\":";
    const std::string ends = link.dim == topo::kCoreAxis
                                 ? coords(link.src) + " core " + (link.dir > 0 ? "0->1" : "1->0")
                                 : coords(link.src) + "->" + coords(link.dst);
    append_escaped(out, "link " + std::to_string(l.link) + " " + ends);
    out += ",\"ph\":\"C\",\"pid\":2,\"ts\":";
    append_number(out, l.time * 1e6);
    out += ",\"args\":{\"GB/s\":";
    append_number(out, l.bytes_per_second / 1e9);
    out += "}}";
  }
  out += "\n]}\n";
  return out;
}

Status write_trace(const SimResult& result, const topo::Topology& topology,
                   const std::string& path) {
  auto fail = [&](const std::string& what) {
    Error e;
    e.message = what;
    e.file = path;
    return e;
  };
  const std::string text = trace_json(result, topology);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return fail("cannot create the temporary trace file " + tmp);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.flush();
    if (!f) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return fail("cannot write the trace (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return fail("cannot move the trace into place: " + ec.message());
  }
  return Status::success();
}

}  // namespace aoizora::sim
