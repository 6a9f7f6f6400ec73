// mlbs_crash, the child: writes, erases, reads and flushes records of the
// persistent store until the parent kills it, announcing every operation
// before it starts and every flush() after it returns.
#include <cstdio>
#include <map>
#include <random>

#include <fmt/format.h>

#include "crash.hpp"
#include "protocol.hpp"
#include "records.hpp"

namespace mlbs::crash {

int run_child(const Options& o) {
  try {
    const Reporter out(o.report_fd);
    Runtime rt(make_config(o));
    Store<std::byte> s(rt, kStoreName);
    out.send(fmt::format("R {}", s.ids().size()));

    std::mt19937_64 rng(o.child_seed);
    std::map<std::uint64_t, std::uint64_t> mine;  // ids written by this child -> salt: reads check them
    std::uint64_t salt = o.salt_base;
    unsigned since_flush = 0;
    unsigned flush_every = 1 + rng() % 8;
    // A full device (o.faults) refuses writes that find no room and
    // flushes that cannot make records durable: both say so and go on.
    auto write = [&](std::uint64_t id) {
      ++salt;
      s.resize(record_size(id, salt));
      fill_record(id, salt, s.data(), s.size());
      out.send(fmt::format("W {} {}", id, salt));
      try {
        s.write(id);
      } catch (const DeviceFullError&) {
        out.send(fmt::format("N {}", id));
        return false;
      } catch (const CapacityError&) {
        out.send(fmt::format("N {}", id));
        return false;
      }
      mine[id] = salt;
      return true;
    };
    auto erase = [&](std::uint64_t id) {
      out.send(fmt::format("E {}", id));
      s.erase(id);
      mine.erase(id);
    };
    for (;;) {  // until SIGKILL
      const std::uint64_t id = rng() % o.id_space;
      const unsigned dice = rng() % 100;
      if (s.contains(id)) {
        if (dice < 45) {
          erase(id);  // an old id: recovered, or written before the last flush
        } else if (dice < 60 && mine.count(id)) {
          s.read(id);
          if (s.size() != record_size(id, mine[id]) ||
              first_difference(id, mine[id], s.data(), s.size()) != s.size()) {
            out.send(fmt::format("X read of id {} returned {} bytes that are not version {:#x}", id, s.size(),
                                 mine[id]));
            return 1;
          }
          out.send(fmt::format("V {}", id));
          continue;
        } else {
          continue;
        }
      } else {
        // A new id, or a rewrite of an erased one under a new salt, erased
        // at once 15% of the time, while its copy down is likely in flight.
        if (write(id) && dice < 15) erase(id);
      }
      if (++since_flush >= flush_every) {
        try {
          s.flush();
          out.send("F");
        } catch (const DeviceFullError&) {
          out.send("D");
        }
        since_flush = 0;
        flush_every = 1 + rng() % 8;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs_crash child: %s\n", e.what());
    return 3;
  }
}

}  // namespace mlbs::crash
