// mlbs Python bindings — Config and Tier (config.hpp).
#include "config.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "codec/spec.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::python {

namespace nb = nanobind;

namespace {

// The fields Config(**kwargs) sets (the properties bound below).
constexpr const char* kConfigFields[] = {
    "tiers",          "schedule",     "durability",   "helper_core",  "helper_threads",
    "checksums",      "layout",       "io_chunk_bytes", "shutdown_timeout_ms", "page_cache",
    "live_catalog",   "live_records", "reader_retention", "codec", "codec_when", "copy_ahead"};

// A byte count given as an int or a size string ("64GiB").
std::uint64_t to_bytes(nb::handle v, const std::string& field) {
  if (nb::isinstance<nb::str>(v)) return parse_size(nb::cast<std::string>(v), field);
  long long n = 0;
  if (!nb::try_cast<long long>(v, n, false) || n < 0)
    throw ConfigError(field, "expected a byte count (a non-negative int or a size such as \"64GiB\"), got " +
                                 std::string(nb::str(nb::repr(v)).c_str()));
  return static_cast<std::uint64_t>(n);
}

std::vector<Tier> to_tiers(nb::handle v) {
  if (nb::isinstance<nb::str>(v)) return parse_tier_spec(nb::cast<std::string>(v));
  std::vector<Tier> tiers;
  for (nb::handle item : v) {
    if (nb::isinstance<nb::str>(item)) {
      for (Tier& t : parse_tier_spec(nb::cast<std::string>(item))) tiers.push_back(std::move(t));
    } else if (nb::isinstance<Tier>(item)) {
      tiers.push_back(nb::cast<Tier>(item));
    } else {
      throw ConfigError("tiers", "expected a tier spec string or a list of mlbs.Tier or spec strings, got a " +
                                     std::string(nb::type_name(item.type()).c_str()));
    }
  }
  return tiers;
}

Schedule to_schedule(nb::handle v) {
  if (nb::isinstance<nb::str>(v)) return parse_schedule(nb::cast<std::string>(v));
  std::vector<std::uint64_t> order;
  try {
    for (nb::handle id : v) order.push_back(nb::cast<std::uint64_t>(id));
  } catch (const std::exception&) {
    throw ConfigError("schedule", "expected \"fifo\", \"fifo:N\", \"lifo\", \"lifo:N\", \"unknown\" or a list of ids, got " +
                                      std::string(nb::str(nb::repr(v)).c_str()));
  }
  if (order.empty()) throw ConfigError("schedule", "an explicit order needs at least one id");
  return Schedule::explicit_order(std::move(order));
}

nb::object from_schedule(const Schedule& s) {
  if (s.kind == Schedule::Kind::explicit_order) return nb::cast(s.order);
  std::string text = to_string(s.kind);
  if (s.expected_records) text += ":" + std::to_string(s.expected_records);  // lifo:N, fifo:N
  return nb::str(text.c_str());
}

Durability to_durability(const std::string& v) {
  if (v == "scratch") return Durability::scratch;
  if (v == "persistent") return Durability::persistent;
  throw ConfigError("durability", "'" + v + "' is not a durability (expected scratch or persistent)");
}

std::string tier_repr(const Tier& t) {
  std::string spec;
  try {
    spec = format_tier_spec({t});
  } catch (const Error&) {
    spec = t.kind + ":" + t.path;
  }
  return "mlbs.Tier('" + spec + "')";
}

nb::dict tier_dict(const TierStats& t) {
  nb::dict d;
  d["kind"] = t.kind;
  d["path"] = t.path;
  d["capacity_bytes"] = t.capacity_bytes;
  d["used_bytes"] = t.used_bytes;
  d["peak_used_bytes"] = t.peak_used_bytes;
  d["records"] = t.records;
  d["bytes_in"] = t.bytes_in;
  d["bytes_out"] = t.bytes_out;
  d["raw_bytes_in"] = t.raw_bytes_in;
  d["raw_bytes_out"] = t.raw_bytes_out;
  d["codec_ns"] = t.codec_ns;
  d["ops_in"] = t.ops_in;
  d["ops_out"] = t.ops_out;
  d["busy_ns"] = t.busy_ns;
  d["stalls"] = t.stalls;
  d["skipped_too_large"] = t.skipped_too_large;
  d["errors"] = t.errors;
  d["io_backend"] = t.io_backend;
  d["io_fallback"] = t.io_fallback;
  d["bandwidth_bytes_per_s"] = t.bandwidth_bytes_per_s();
  return d;
}

}  // namespace

nb::dict to_dict(const Stats& s) {
  nb::dict d;
  nb::list tiers;
  for (const TierStats& t : s.tiers) tiers.append(tier_dict(t));
  d["tiers"] = tiers;
  d["writes"] = s.writes;
  d["reads"] = s.reads;
  d["write_block_ns"] = s.write_block_ns;
  d["read_block_ns"] = s.read_block_ns;
  d["copy_ns"] = s.copy_ns;
  d["copy_hash_ns"] = s.copy_hash_ns;
  d["rereads"] = s.rereads;
  d["write_stalls"] = s.write_stalls;
  d["read_stalls"] = s.read_stalls;
  d["prefetches"] = s.prefetches;
  d["demand_fetches"] = s.demand_fetches;
  d["writebacks"] = s.writebacks;
  d["cancelled_copies"] = s.cancelled_copies;
  d["buffer_swaps"] = s.buffer_swaps;
  d["direct_reads"] = s.direct_reads;
  d["checksum_failures"] = s.checksum_failures;
  d["helper_cpu_ns"] = s.helper_cpu_ns;
  d["live_records"] = s.live_records;
  d["retention_copies"] = s.retention_copies;
  d["retention_moves"] = s.retention_moves;
  d["retention_bytes"] = s.retention_bytes;
  d["awaiting_readers"] = s.awaiting_readers;
  d["encoded_records"] = s.encoded_records;
  d["encoded_raw_bytes"] = s.encoded_raw_bytes;
  d["encoded_bytes"] = s.encoded_bytes;
  d["raw_records"] = s.raw_records;
  d["bypassed_records"] = s.bypassed_records;
  d["unneeded_records"] = s.unneeded_records;
  d["encode_ns"] = s.encode_ns;
  d["decode_ns"] = s.decode_ns;
  d["helper_cores"] = nb::cast(s.helper_cores);
  return d;
}

nb::dict to_dict(const RecordInfo& info) {
  nb::dict d;
  d["id"] = info.id;
  d["size_bytes"] = info.size_bytes;
  d["checksum"] = info.has_checksum ? nb::object(nb::int_(info.checksum)) : nb::none();
  d["stored_bytes"] = info.stored_bytes;
  d["tiers"] = nb::cast(info.tiers);
  if (!info.part_tiers.empty()) {  // a store in parts
    d["part_tiers"] = nb::cast(info.part_tiers);
    d["part_bytes"] = nb::cast(info.part_bytes);
  }
  d["durable"] = info.durable;
  nb::list lineage;
  for (const RecordInfo::Move& mv : info.lineage)
    lineage.append(nb::make_tuple(mv.time_ns, mv.from_tier, mv.to_tier));
  d["lineage"] = lineage;
  return d;
}

void bind_config(nb::module_& m) {
  nb::class_<Tier>(m, "Tier", "One storage layer (DESIGN §2); tiers are ordered fastest first.")
      .def(nb::init<>())
      .def_static("memory", [](nb::handle capacity) { return Tier::memory(to_bytes(capacity, "capacity")); },
                  nb::arg("capacity"), nb::sig("@staticmethod\ndef memory(capacity: int | str) -> Tier"),
                  "The DRAM slot pool (the first tier); capacity in bytes or \"256MiB\".")
      .def_static(
          "directory",
          [](std::string path, nb::handle capacity) {
            return Tier::directory(std::move(path), to_bytes(capacity, "capacity"));
          },
          nb::arg("path"), nb::arg("capacity") = 0,
          nb::sig("@staticmethod\ndef directory(path: str, capacity: int | str = 0) -> Tier"), "A file tier under path; capacity 0 = unlimited.")
      .def_static("parse", [](const std::string& spec) { return parse_tier_spec(spec); }, nb::arg("spec"),
                  "\"mem:256MiB,dir:/nvme/run:4GiB\" -> a list of Tier.")
      .def_rw("kind", &Tier::kind)
      .def_rw("path", &Tier::path)
      .def_prop_rw("capacity_bytes", [](const Tier& t) { return t.capacity_bytes; },
                   [](Tier& t, nb::handle v) { t.capacity_bytes = to_bytes(v, "capacity_bytes"); })
      .def_prop_rw("bandwidth_bytes_per_s", [](const Tier& t) { return t.bandwidth_bytes_per_s; },
                   [](Tier& t, nb::handle v) { t.bandwidth_bytes_per_s = to_bytes(v, "bandwidth_bytes_per_s"); })
      .def_rw("block_bytes", &Tier::block_bytes)
      .def_rw("shared", &Tier::shared)
      .def_rw("high_water", &Tier::high_water)
      .def_rw("low_water", &Tier::low_water)
      .def_rw("page_cache", &Tier::page_cache)
      .def_prop_rw("io_backend", [](const Tier& t) { return to_string(t.io_backend); },
                   [](Tier& t, const std::string& v) { t.io_backend = parse_io_backend(v); })
      .def_rw("queue_depth", &Tier::queue_depth)
      .def_rw("io_request_bytes", &Tier::io_request_bytes)
      .def_prop_rw(
          "layout", [](const Tier& t) { return t.layout ? std::optional<std::string>(to_string(*t.layout)) : std::nullopt; },
          [](Tier& t, std::optional<std::string> v) { t.layout = v ? std::optional<Layout>(parse_layout(*v)) : std::nullopt; },
          nb::arg("value").none())
      .def_rw("faults", &Tier::faults)
      .def("__repr__", &tier_repr);

  nb::class_<Config>(m, "Config",
                     "Configuration as plain data (docs/python.md). Keywords set the attributes of the same name:\n"
                     "Config(tiers=\"mem:256MiB,dir:/nvme/run\", schedule=\"lifo\", durability=\"scratch\").")
      .def(
          "__init__",
          [](nb::handle self_obj, nb::kwargs kwargs) {
            Config* self = nb::inst_ptr<Config>(self_obj);
            new (self) Config();
            nb::inst_mark_ready(self_obj);
            for (auto [key, value] : kwargs) {
              const std::string name = nb::cast<std::string>(key);
              if (std::find(std::begin(kConfigFields), std::end(kConfigFields), name) == std::end(kConfigFields))
                throw nb::type_error(("Config() got an unknown keyword '" + name + "'").c_str());
              nb::setattr(self_obj, key, value);
            }
          },
          nb::sig("def __init__(self, *, tiers: str | collections.abc.Sequence[Tier | str] = ..., "
                  "schedule: str | collections.abc.Sequence[int] = ..., durability: str = ..., "
                  "helper_core: int = ..., helper_threads: int = ..., checksums: bool = ..., layout: str = ..., "
                  "io_chunk_bytes: int | str = ..., shutdown_timeout_ms: int = ..., page_cache: bool = ..., "
                  "live_catalog: bool = ..., live_records: int = ..., reader_retention: str = ..., "
                  "codec: str = ..., codec_when: str = ..., copy_ahead: bool = ...) -> None"))
      .def_static("from_file", &Config::from_file, nb::arg("path"), "Reads a TOML file (docs/configuration.md).")
      .def_static("from_toml", &Config::from_toml, nb::arg("text"), nb::arg("source") = "<string>")
      .def_static("from_env", &Config::from_env, "MLBS_CONFIG, then the MLBS_* variables.")
      .def("validate", &Config::validate, "Raises ConfigError naming the field when something is wrong.")
      .def_prop_rw("tiers", [](const Config& c) { return c.tiers; },
                   [](Config& c, nb::handle v) { c.tiers = to_tiers(v); }, "A spec string or a list of Tier.")
      .def_prop_rw("schedule", [](const Config& c) { return from_schedule(c.schedule); },
                   [](Config& c, nb::handle v) { c.schedule = to_schedule(v); },
                   "\"fifo\", \"lifo\", \"fifo:N\" or \"lifo:N\" (N records expected), \"unknown\" or a list "
                   "of ids.")
      .def_prop_rw("durability", [](const Config& c) { return to_string(c.durability); },
                   [](Config& c, const std::string& v) { c.durability = to_durability(v); },
                   "\"scratch\" or \"persistent\".")
      .def_rw("helper_core", &Config::helper_core)
      .def_rw("helper_threads", &Config::helper_threads)
      .def_rw("checksums", &Config::checksums)
      .def_prop_rw("layout", [](const Config& c) { return to_string(c.layout); },
                   [](Config& c, const std::string& v) { c.layout = parse_layout(v); })
      .def_prop_rw("io_chunk_bytes", [](const Config& c) { return c.io_chunk_bytes; },
                   [](Config& c, nb::handle v) { c.io_chunk_bytes = to_bytes(v, "io_chunk_bytes"); })
      .def_rw("shutdown_timeout_ms", &Config::shutdown_timeout_ms)
      .def_rw("page_cache", &Config::page_cache)
      .def_rw("live_catalog", &Config::live_catalog)
      .def_rw("live_records", &Config::live_records)
      .def_prop_rw("reader_retention", [](const Config& c) { return to_string(c.reader_retention); },
                   [](Config& c, const std::string& v) { c.reader_retention = parse_reader_retention(v); })
      .def_prop_rw("codec", [](const Config& c) { return c.codec; },
                   [](Config& c, const std::string& v) { c.codec = codec::to_string(codec::parse(v)); },
                   "\"none\", \"lz4\", \"zstd[:LEVEL]\", \"zfp:accuracy=X\", \"zfp:precision=BITS\" or "
                   "\"zfp:rate=BITS\" (docs/codecs.md).")
      .def_prop_rw("codec_when", [](const Config& c) { return to_string(c.codec_when); },
                   [](Config& c, const std::string& v) { c.codec_when = parse_codec_when(v); },
                   "\"needed\" (encode only while the application waits for the tiers) or \"always\".")
      .def_rw("copy_ahead", &Config::copy_ahead,
              "Slower tiers copy ahead what the faster ones will give up (docs/architecture.md).")
      .def("__repr__", [](const Config& c) {
        std::string tiers;
        try {
          tiers = format_tier_spec(c.tiers);
        } catch (const Error&) {
          tiers = "...";
        }
        const nb::object schedule = from_schedule(c.schedule);
        return "mlbs.Config(tiers='" + tiers + "', schedule=" + nb::str(nb::repr(schedule)).c_str() +
               ", durability='" + to_string(c.durability) + "')";
      });
}

}  // namespace mlbs::python
