#include "workloads.hpp"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

#include <mlbs/trace.hpp>

namespace mlbs_bench {

std::string to_string(Workload w) {
  switch (w) {
    case Workload::micro: return "micro";
    case Workload::rtm: return "rtm";
    case Workload::writeonly: return "writeonly";
    case Workload::readafterwrite: return "readafterwrite";
    case Workload::insitu: return "insitu";
  }
  return "?";
}

std::optional<Workload> parse_workload(const std::string& name) {
  for (Workload w : {Workload::micro, Workload::rtm, Workload::writeonly, Workload::readafterwrite, Workload::insitu})
    if (to_string(w) == name) return w;
  return std::nullopt;
}

Dims dims_for_bytes(std::uint64_t grid_bytes) {
  const std::uint64_t points = grid_bytes / sizeof(float);
  std::size_t n = 1;
  while (std::uint64_t(2 * n) * (2 * n) * (2 * n) <= points) n *= 2;
  Dims d{n, n, std::size_t(points / (std::uint64_t(n) * n))};
  if (d.nx < 3 || d.nz < 3)
    throw std::invalid_argument("grid of " + std::to_string(grid_bytes) +
                                " bytes is too small: at least 3x3x3 floats (108 bytes) needed");
  return d;
}

Plan make_plan(Workload w, const Options& o, unsigned io_ratio, unsigned rank) {
  Plan p;
  p.workload = w;
  p.rank = rank;
  p.dims = dims_for_bytes(o.grid_bytes);
  p.steps = o.steps;
  p.io_ratio = std::max(1u, io_ratio);
  p.snapshots = p.steps / p.io_ratio;
  switch (w) {
    case Workload::micro: p.fifo = o.order == ReadOrder::fifo; break;
    case Workload::rtm: p.fifo = false; break;
    case Workload::writeonly: p.fifo = true; break;   // nothing is read; the order is moot
    case Workload::readafterwrite: p.fifo = true; break;
    case Workload::insitu: p.fifo = true; break;       // the writer reads nothing back; its reader reads in write order
  }
  if (w != Workload::writeonly && w != Workload::insitu) {
    for (unsigned k = 0; k < p.snapshots; ++k) p.read_order.push_back(p.fifo ? k : p.snapshots - 1 - k);
  }
  return p;
}

// --- kernels ----------------------------------------------------------------------

namespace {

constexpr float kC0 = 0.4f;    // micro stencil: a diffusion, c0 + 6 c1 = 1 keeps values bounded
constexpr float kC1 = 0.1f;
constexpr float kC2 = 0.15f;   // rtm: (c dt / h)^2, stable below 1/3
constexpr float kBackwardWeight = 0.01f;

using sidx = std::ptrdiff_t;

template <bool Add>
void stencil7_impl(const Dims& d, const float* in, float* out, const float* add, float w) {
  const sidx nx = sidx(d.nx), ny = sidx(d.ny), nz = sidx(d.nz), sj = nx, sk = nx * ny;
#pragma omp parallel for schedule(static)
  for (sidx k = 0; k < nz; ++k) {
    for (sidx j = 0; j < ny; ++j) {
      const sidx row = k * sk + j * sj;
      const float* c = in + row;
      float* o = out + row;
      const float* a = Add ? add + row : nullptr;
      if (k == 0 || k == nz - 1 || j == 0 || j == ny - 1) {
        for (sidx i = 0; i < nx; ++i) o[i] = Add ? c[i] + w * a[i] : c[i];
        continue;
      }
      o[0] = Add ? c[0] + w * a[0] : c[0];
      const float last = Add ? c[nx - 1] + w * a[nx - 1] : c[nx - 1];
      for (sidx i = 1; i + 1 < nx; ++i) {
        float v = kC0 * c[i] + kC1 * (c[i - 1] + c[i + 1] + c[i - sj] + c[i + sj] + c[i - sk] + c[i + sk]);
        if constexpr (Add) v += w * a[i];
        o[i] = v;
      }
      o[nx - 1] = last;
    }
  }
}

}  // namespace

void stencil7(const Dims& d, const float* in, float* out, const float* add, float w) {
  if (add) stencil7_impl<true>(d, in, out, add, w);
  else stencil7_impl<false>(d, in, out, nullptr, 0.0f);
}

void leapfrog(const Dims& d, const float* cur, const float* prev, float* out) {
  const sidx nx = sidx(d.nx), ny = sidx(d.ny), nz = sidx(d.nz), sj = nx, sk = nx * ny;
#pragma omp parallel for schedule(static)
  for (sidx k = 0; k < nz; ++k) {
    for (sidx j = 0; j < ny; ++j) {
      const sidx row = k * sk + j * sj;
      float* o = out + row;
      if (k == 0 || k == nz - 1 || j == 0 || j == ny - 1) {
        std::fill(o, o + nx, 0.0f);
        continue;
      }
      const float* c = cur + row;
      const float* p = prev + row;
      o[0] = 0.0f;
      for (sidx i = 1; i + 1 < nx; ++i) {
        const float lap = c[i - 1] + c[i + 1] + c[i - sj] + c[i + sj] + c[i - sk] + c[i + sk] - 6.0f * c[i];
        o[i] = 2.0f * c[i] - p[i] + kC2 * lap;
      }
      o[nx - 1] = 0.0f;
    }
  }
}

void accumulate_image(const Dims& d, const float* u, const float* v, float* img) {
  const sidx n = sidx(d.points());
  const sidx plane = sidx(d.nx * d.ny);
#pragma omp parallel for schedule(static)
  for (sidx k = 0; k < sidx(d.nz); ++k)
    for (sidx i = k * plane; i < std::min(n, (k + 1) * plane); ++i) img[i] += u[i] * v[i];
}

std::uint64_t hash_bytes(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

// --- the workloads -------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

/// An aligned float array (the workload's own fields), untouched until
/// zero(): the first touch is the application's compute, timed as such.
class Field {
 public:
  explicit Field(std::size_t n) : n_(n), p_(static_cast<float*>(std::aligned_alloc(4096, round(n)))) {
    if (!p_) throw std::bad_alloc();
  }
  void zero() { std::fill(p_, p_ + n_, 0.0f); }
  ~Field() { std::free(p_); }
  Field(const Field&) = delete;
  Field& operator=(const Field&) = delete;
  float* data() { return p_; }

 private:
  static std::size_t round(std::size_t n) { return (n * sizeof(float) + 4095) / 4096 * 4096; }
  std::size_t n_;
  float* p_;
};

/// Ricker wavelet, peak frequency f (cycles per step), delayed by 1/f.
float ricker(double t, double f = 0.04) {
  const double a = std::numbers::pi * f * (t - 1.0 / f);
  return float((1.0 - 2.0 * a * a) * std::exp(-a * a));
}

/// A deterministic, non-trivial initial condition in [0, 1), its own for every `seed` (rank).
void initial_condition(const Dims& d, float* f, unsigned seed) {
  const sidx n = sidx(d.points());
  const std::uint64_t offset = std::uint64_t(seed) * 0xD1B54A32D192ED03ull;
#pragma omp parallel for schedule(static)
  for (sidx i = 0; i < n; ++i) {
    std::uint64_t x = (std::uint64_t(i) + offset) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    f[i] = float(x >> 40) / float(1ull << 24);
  }
}

class Runner {
 public:
  Runner(const Plan& plan, const Options& o, SnapshotIo& io)
      : p_(plan), o_(o), io_(io), n_(plan.dims.points()), bytes_(plan.snapshot_bytes()),
        sums_(plan.snapshots, 0), read_back_(plan.snapshots, false) {}

  WorkloadResult run() {
    // Every mode's application pays the first touch of its fields and of the
    // mode's snapshot buffer here: compute, so that the physical bound counts
    // it (it is no I/O library's to save), and in the same place in every
    // mode (a buffer touched while the mode is made would be setup in one
    // mode and a stalled kernel step in another).
    compute("alloc", [&] {
      a_.zero();
      b_.zero();
      std::fill_n(io_.buffer(), n_, 0.0f);
    });
    switch (p_.workload) {
      case Workload::micro: forward_stencil(); read_phase([&] { backward_stencil(); }); break;
      case Workload::writeonly: forward_stencil(); break;
      case Workload::readafterwrite: read_after_write(); break;
      case Workload::rtm: rtm(); break;
      case Workload::insitu:
        final_checksum(rtm_forward());
        break;
    }
    if (r_.reads > 0 && std::find(read_back_.begin(), read_back_.end(), false) == read_back_.end())
      r_.tail_compute_s = r_.kernel_s - kernel_at_last_read_;
    return r_;
  }

 private:
  /// Times `fn` as application compute ("compute" in the trace).
  template <class Fn>
  void compute(const char* name, Fn&& fn) {
    mlbs::trace::Scope scope(name, "compute");
    const auto t0 = Clock::now();
    fn();
    r_.kernel_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  /// Times `fn` as the read-back phase (wall time: reads, kernels, verification).
  template <class Fn>
  void read_phase(Fn&& fn) {
    const auto t0 = Clock::now();
    fn();
    r_.read_phase_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  template <class Fn>
  void kernel(const char* name, Fn&& fn) {
    if (o_.compute) compute(name, std::forward<Fn>(fn));
  }

  void write_snapshot(std::uint64_t id, float* s) {
    compute("checksum", [&] {
      const auto t0 = Clock::now();
      sums_[id] = hash_bytes(s, bytes_);
      r_.hash_s += std::chrono::duration<double>(Clock::now() - t0).count();
    });
    if (r_.writes == 0) r_.lead_compute_s = r_.kernel_s;
    io_.write(id);
    kernel_at_last_write_ = r_.kernel_s;
    ++r_.writes;
    r_.bytes_written += bytes_;
  }
  /// Reads snapshot `id` and verifies it; returns the working buffer.
  float* read_snapshot(std::uint64_t id) {
    if (r_.reads == 0 && r_.writes == p_.snapshots) r_.turn_compute_s = r_.kernel_s - kernel_at_last_write_;
    io_.read(id);
    kernel_at_last_read_ = r_.kernel_s;
    read_back_[id] = true;
    float* s = io_.buffer();
    ++r_.reads;
    r_.bytes_read += bytes_;
    compute("verify", [&] {
      const auto t0 = Clock::now();
      if (hash_bytes(s, bytes_) != sums_[id]) ++(io_.lossy() ? r_.inexact : r_.mismatches);
      r_.hash_s += std::chrono::duration<double>(Clock::now() - t0).count();
    });
    return s;
  }
  /// Marks a snapshot when no kernel runs, so that every snapshot differs.
  void stamp(float* s, std::uint64_t id, unsigned t) {
    s[0] = float(id);
    s[n_ - 1] = float(t);
    if (p_.rank) s[1] = float(p_.rank);   // and every rank's differ
  }
  void final_checksum(const float* f) {
    compute("checksum", [&] { r_.result_checksum = hash_bytes(f, bytes_); });
  }

  // micro forward / writeonly: a stencil step per step; every io_ratio steps
  // the step's output goes straight into the snapshot buffer and is written.
  void forward_stencil() {
    kernel("init", [&] { initial_condition(p_.dims, a_.data(), p_.rank); });
    float* cur = a_.data();
    std::uint64_t id = 0;
    for (unsigned t = 1; t <= p_.steps; ++t) {
      float* s = io_.buffer();
      const bool snap = t % p_.io_ratio == 0 && id < p_.snapshots;
      if (!snap) {
        float* out = cur == a_.data() ? b_.data() : a_.data();
        kernel("stencil", [&] { stencil7(p_.dims, cur, out); });
        cur = out;
        continue;
      }
      if (!o_.compute) {
        stamp(s, id, t);
      } else if (cur == s) {
        // The snapshot buffer holds the input (io_ratio 1): compute beside it,
        // then stage the result into it.
        compute("stencil", [&] {
          stencil7(p_.dims, cur, a_.data());
          std::memcpy(s, a_.data(), bytes_);
        });
        cur = a_.data();
      } else {
        compute("stencil", [&] { stencil7(p_.dims, cur, s); });
        cur = s;
      }
      write_snapshot(id++, s);
    }
    // The backward phase may read into the snapshot buffer: keep the state out of it.
    if (cur != a_.data()) compute("stage", [&] { std::memcpy(a_.data(), cur, bytes_); });
    if (p_.workload == Workload::writeonly) final_checksum(a_.data());
  }

  // micro backward: a stencil step per step on a second field (starting from
  // the final forward state); every io_ratio steps a snapshot is read back in
  // the plan's order and added into the step's output.
  void backward_stencil() {
    float* cur = a_.data();
    std::size_t next = 0;
    for (unsigned t = 1; t <= p_.steps; ++t) {
      float* out = cur == a_.data() ? b_.data() : a_.data();
      if (t % p_.io_ratio == 0 && next < p_.read_order.size()) {
        float* s = read_snapshot(p_.read_order[next++]);
        kernel("stencil", [&] { stencil7(p_.dims, cur, out, s, kBackwardWeight); });
      } else {
        kernel("stencil", [&] { stencil7(p_.dims, cur, out); });
      }
      cur = out;
    }
    final_checksum(cur);
  }

  // readafterwrite: every io_ratio steps, read back the snapshot the previous
  // snapshot step wrote, add it into this step's output (computed in place in
  // the snapshot buffer), and write that as the next snapshot.
  void read_after_write() {
    kernel("init", [&] { initial_condition(p_.dims, a_.data(), p_.rank); });
    float* cur = a_.data();
    std::uint64_t id = 0;
    for (unsigned t = 1; t <= p_.steps; ++t) {
      const bool snap = t % p_.io_ratio == 0 && id < p_.snapshots;
      if (!snap) {
        float* out = cur == a_.data() ? b_.data() : a_.data();
        kernel("stencil", [&] { stencil7(p_.dims, cur, out); });
        cur = out;
        continue;
      }
      float* s = io_.buffer();
      if (id > 0) {
        // The read replaces (mlbs: swaps away) the snapshot buffer: move the state out first.
        if (cur == s) {
          compute("stage", [&] { std::memcpy(a_.data(), s, bytes_); });
          cur = a_.data();
        }
        s = read_snapshot(id - 1);
        if (o_.compute) kernel("stencil", [&] { stencil7(p_.dims, cur, s, s, kBackwardWeight); });
        else stamp(s, id, t);
      } else if (o_.compute) {
        kernel("stencil", [&] { stencil7(p_.dims, cur, s); });
      } else {
        stamp(s, id, t);
      }
      write_snapshot(id, s);
      ++id;
      cur = s;
    }
    if (id > 0) {   // the last snapshot is read back too
      if (cur == io_.buffer()) {
        compute("stage", [&] { std::memcpy(a_.data(), cur, bytes_); });
        cur = a_.data();
      }
      read_snapshot(id - 1);
    }
    final_checksum(cur);
  }

  // rtm: forward propagation from a source, snapshot of the newest wavefield
  // every io_ratio steps; backward propagation from a receiver, reading the
  // snapshots in reverse and accumulating image += u_saved * v.
  void rtm() {
    const Dims& d = p_.dims;
    const std::size_t rcv = d.nx / 2 + d.nx * (d.ny / 2 + d.ny * (d.nz / 4));
    const float amplitude = float(1 + p_.rank);   // every rank propagates its own wavefield
    rtm_forward();
    rtm_backward(rcv, amplitude);
  }

  /// rtm's forward phase (also --workload insitu): (cur, prev) rotate among
  /// a, b and the snapshot buffer s. Returns the final wavefield.
  const float* rtm_forward() {
    const Dims& d = p_.dims;
    const std::size_t src = d.nx / 2 + d.nx * (d.ny / 2 + d.ny * (d.nz / 2));
    const float amplitude = float(1 + p_.rank);   // every rank propagates its own wavefield
    {
      float* s = io_.buffer();
      float* cur = a_.data();
      float* prev = b_.data();
      std::uint64_t id = 0;
      for (unsigned t = 1; t <= p_.steps; ++t) {
        const bool snap = t % p_.io_ratio == 0 && id < p_.snapshots;
        float* out;
        if (!snap) {
          out = prev;                         // in place
        } else if (cur == s) {
          // io_ratio 1: s holds cur; move it to the free field, compute into s.
          float* fr = free_of(cur, prev);
          compute("stage", [&] { std::memcpy(fr, s, bytes_); });
          cur = fr;
          out = s;
        } else {
          out = s;                            // in place if s is prev, else out of place
        }
        kernel("propagate", [&] {
          leapfrog(d, cur, prev, out);
          out[src] += amplitude * ricker(t);
        });
        prev = cur;
        cur = out;
        if (snap) {
          if (!o_.compute) stamp(s, id, t);
          write_snapshot(id++, s);
        }
      }
      return cur;
    }
  }

  // Backward: v in a and b; the snapshot buffer only feeds the image.
  void rtm_backward(std::size_t rcv, float amplitude) {
    const Dims& d = p_.dims;
    // The image is the result the run returns (image errors of lossy runs).
    compute("alloc", [&] { r_.image.assign(n_, 0.0f); });
    float* image = r_.image.data();
    read_phase([&] {
      kernel("init", [&] {
        std::fill(a_.data(), a_.data() + n_, 0.0f);
        std::fill(b_.data(), b_.data() + n_, 0.0f);
      });
      float* cur = a_.data();
      float* prev = b_.data();
      std::size_t next = 0;
      for (unsigned t = p_.steps; t >= 1; --t) {
        if (t % p_.io_ratio == 0 && next < p_.read_order.size()) {
          const float* s = read_snapshot(p_.read_order[next++]);
          kernel("image", [&] { accumulate_image(d, s, cur, image); });
        }
        kernel("propagate", [&] {
          leapfrog(d, cur, prev, prev);
          prev[rcv] += amplitude * ricker(double(p_.steps - t + 1));
        });
        std::swap(cur, prev);
      }
      final_checksum(cur);
    });
    compute("checksum", [&] { r_.image_checksum = hash_bytes(image, bytes_); });
  }

  /// The one of a and b that is neither x nor y (x or y is the snapshot buffer).
  float* free_of(const float* x, const float* y) { return x != a_.data() && y != a_.data() ? a_.data() : b_.data(); }

  const Plan& p_;
  const Options& o_;
  SnapshotIo& io_;
  std::size_t n_;
  std::uint64_t bytes_;
  std::vector<std::uint64_t> sums_;
  std::vector<bool> read_back_;       ///< per snapshot: read back at least once
  double kernel_at_last_read_ = 0;    ///< kernel_s when the last read returned
  double kernel_at_last_write_ = 0;   ///< kernel_s when the last write returned
  Field a_{n_}, b_{n_};
  WorkloadResult r_;
};

}  // namespace

WorkloadResult run_workload(const Plan& plan, const Options& o, SnapshotIo& io) {
  return Runner(plan, o, io).run();
}

}  // namespace mlbs_bench
