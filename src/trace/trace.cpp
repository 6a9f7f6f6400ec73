// mlbs — the trace recorder (include/mlbs/trace.hpp, docs/tracing.md).
//
// Every thread that records gets its own event buffer, registered once in a
// process-wide list. Recording appends to the calling thread's buffer under
// that buffer's own mutex, which only an exporter (chrome_json, clear) ever
// contends for: threads never wait for each other, and the global list's
// mutex is taken only when a thread first records or names itself, when it
// exits, and by the exporters. Events hold interned string ids, so a span
// costs one 32-byte slot and no allocation once its names have been seen.
// When tracing is off every entry point returns after one relaxed load.
#include "mlbs/trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "mlbs/errors.hpp"
#include "trace/recorder.hpp"

namespace mlbs::trace {
namespace {

std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Hot-path state: constant-initialised atomics, no guard on access.
std::atomic<bool> g_enabled{false};
std::atomic<std::size_t> g_recorded{0};  ///< events held by all buffers (+ reservations in flight)
std::atomic<std::size_t> g_max_events{kDefaultMaxEvents};
std::atomic<std::uint64_t> g_dropped{0};

struct Event {
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint64_t bytes;
  std::uint64_t record;    ///< the record's id + 1; 0 = none (span_record())
  std::uint32_t name;      ///< index into Buffer::strings
  std::uint32_t category;  ///< index into Buffer::strings
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// One thread's events. Everything below `mu` is guarded by it.
class Buffer {
 public:
  static constexpr std::size_t kChunkEvents = 4096;  // 160 KiB: growth never copies old events

  explicit Buffer(std::uint32_t tid) : tid(tid) {}
  const std::uint32_t tid;  ///< the "tid" of this thread's events in the trace

  std::mutex mu;
  std::string thread_name;
  bool thread_alive = true;
  std::size_t count = 0;
  std::vector<std::unique_ptr<Event[]>> chunks;
  std::vector<std::string> strings;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> ids;

  std::uint32_t intern(std::string_view s) {
    if (auto it = ids.find(s); it != ids.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(strings.size());
    strings.emplace_back(s);
    ids.emplace(strings.back(), id);
    return id;
  }
  void push(const Event& e) {
    if (count == chunks.size() * kChunkEvents)
      chunks.push_back(std::make_unique_for_overwrite<Event[]>(kChunkEvents));
    chunks[count / kChunkEvents][count % kChunkEvents] = e;
    ++count;
  }
  const Event& at(std::size_t i) const { return chunks[i / kChunkEvents][i % kChunkEvents]; }
  /// Forgets the events; returns how many there were.
  std::size_t reset() {
    const std::size_t n = count;
    count = 0;
    chunks.clear();
    strings.clear();
    ids.clear();
    return n;
  }
};

/// The list of every thread's buffer. Leaked on purpose: threads that exit
/// during static destruction still find it.
struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::uint32_t next_tid = 1;
  const std::uint64_t origin_ns = steady_ns();  ///< "ts" 0 of the exported trace
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}
// Fix the origin at start-up rather than at the first export.
[[maybe_unused]] const Registry& g_registry_at_startup = registry();

void forget(const std::shared_ptr<Buffer>& buffer) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::erase(r.buffers, buffer);
}

/// Owns the thread's registration; at thread exit a buffer with nothing to
/// export leaves the list at once, one with events stays until clear().
struct ThreadHandle {
  std::shared_ptr<Buffer> buffer;
  ~ThreadHandle() {
    if (!buffer) return;
    bool empty;
    {
      std::lock_guard lock(buffer->mu);
      buffer->thread_alive = false;
      empty = buffer->count == 0;
    }
    if (empty) forget(buffer);
  }
};

thread_local Buffer* t_buffer = nullptr;  // trivially destructible: cheap to reach
thread_local ThreadHandle t_handle;       // touched only when a thread registers

Buffer& local_buffer() {
  if (t_buffer) return *t_buffer;
  Registry& r = registry();
  std::shared_ptr<Buffer> buffer;
  {
    std::lock_guard lock(r.mu);
    buffer = std::make_shared<Buffer>(r.next_tid++);
    r.buffers.push_back(buffer);
  }
  t_handle.buffer = buffer;
  t_buffer = buffer.get();
  return *t_buffer;
}

std::vector<std::shared_ptr<Buffer>> snapshot() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.buffers;
}

// --- JSON -----------------------------------------------------------------------

/// Length of the well-formed UTF-8 sequence at s[i] (lead byte >= 0x80), 0 if none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

/// Appends `s` as a JSON string; invalid UTF-8 becomes U+FFFD.
void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (const std::size_t n = utf8_length(s, i)) {
        out.append(s, i, n);
        i += n;
      } else {
        out += "\\ufffd";
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

/// Microseconds since the trace origin, as Chrome's "ts" wants them.
double micros(std::uint64_t ns, std::uint64_t origin_ns) {
  return ns >= origin_ns ? double(ns - origin_ns) / 1e3 : -double(origin_ns - ns) / 1e3;
}

void append_metadata(std::string& out, std::string_view what, std::uint32_t tid, std::string_view key,
                     std::string_view value) {
  out += ",\n{\"name\":";
  append_string(out, what);
  fmt::format_to(std::back_inserter(out), ",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{", tid);
  append_string(out, key);
  out += ':';
  out += value;
  out += "}}";
}

std::string quoted(std::string_view s) {
  std::string out;
  append_string(out, s);
  return out;
}

}  // namespace

// --- recording ------------------------------------------------------------------

void enable(bool on) noexcept { g_enabled.store(on, std::memory_order_relaxed); }

bool enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

std::uint64_t now_ns() noexcept { return steady_ns(); }

namespace {

void record_span(std::string_view name, std::string_view category, std::uint64_t start_ns, std::uint64_t end_ns,
                 std::uint64_t bytes, std::uint64_t record) {
  // Reserve a place under the bound first, so the bound holds across threads.
  if (g_recorded.fetch_add(1, std::memory_order_relaxed) >= g_max_events.load(std::memory_order_relaxed)) {
    g_recorded.fetch_sub(1, std::memory_order_relaxed);
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    Buffer& b = local_buffer();
    std::lock_guard lock(b.mu);
    b.push({start_ns, std::max(start_ns, end_ns), bytes, record, b.intern(name), b.intern(category)});
  } catch (...) {  // out of memory: a lost event, never a lost application
    g_recorded.fetch_sub(1, std::memory_order_relaxed);
    g_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

void span(std::string_view name, std::string_view category, std::uint64_t start_ns, std::uint64_t end_ns,
          std::uint64_t bytes) {
  if (enabled()) record_span(name, category, start_ns, end_ns, bytes, 0);
}

void span_record(std::string_view name, std::string_view category, std::uint64_t start_ns, std::uint64_t end_ns,
                 std::uint64_t bytes, std::uint64_t record_id) {
  if (enabled()) record_span(name, category, start_ns, end_ns, bytes, record_id + 1);
}

void name_thread(std::string_view name) {
  // Recorded even while tracing is off: helpers name themselves when they
  // start, which may be before tracing is turned on.
  Buffer& b = local_buffer();
  std::lock_guard lock(b.mu);
  b.thread_name.assign(name);
}

void clear() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::erase_if(r.buffers, [](const std::shared_ptr<Buffer>& b) {
    std::lock_guard buffer_lock(b->mu);
    g_recorded.fetch_sub(b->reset(), std::memory_order_relaxed);
    return !b->thread_alive;
  });
  g_dropped.store(0, std::memory_order_relaxed);
}

std::size_t event_count() noexcept { return g_recorded.load(std::memory_order_relaxed); }

void set_max_events(std::size_t n) noexcept { g_max_events.store(n, std::memory_order_relaxed); }

std::size_t max_events() noexcept { return g_max_events.load(std::memory_order_relaxed); }

std::uint64_t dropped_count() noexcept { return g_dropped.load(std::memory_order_relaxed); }

// --- export ---------------------------------------------------------------------

std::string chrome_json() {
  const std::uint64_t origin = registry().origin_ns;
  const std::uint64_t dropped = dropped_count();
  std::string out;
  out += "{\"displayTimeUnit\":\"ms\",\n";
  fmt::format_to(std::back_inserter(out),
                 "\"otherData\":{{\"producer\":\"mlbs\",\"clock\":\"steady\",\"origin_ns\":{},"
                 "\"dropped_events\":{},\"max_events\":{}}},\n",
                 origin, dropped, max_events());
  out += "\"traceEvents\":[\n";
  out += R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"mlbs"}})";
  if (dropped)
    append_metadata(out, "mlbs_dropped_events", 0, "dropped", std::to_string(dropped));

  std::vector<Event> events;
  std::vector<std::string> strings;
  for (const auto& buffer : snapshot()) {
    std::string thread_name;
    {
      // Copy out under the buffer's lock; format without holding it.
      std::lock_guard lock(buffer->mu);
      thread_name = buffer->thread_name;
      events.resize(buffer->count);
      for (std::size_t i = 0; i < buffer->count; ++i) events[i] = buffer->at(i);
      strings = buffer->strings;
    }
    if (!thread_name.empty()) {
      append_metadata(out, "thread_name", buffer->tid, "name", quoted(thread_name));
      append_metadata(out, "thread_sort_index", buffer->tid, "sort_index", std::to_string(buffer->tid));
    }
    // Start order, an enclosing span before the spans it contains.
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.end_ns > b.end_ns;
    });
    for (const Event& e : events) {
      out += ",\n{\"name\":";
      append_string(out, strings[e.name]);
      out += ",\"cat\":";
      append_string(out, strings[e.category]);
      fmt::format_to(std::back_inserter(out), ",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":1,\"tid\":{}",
                     micros(e.start_ns, origin), double(e.end_ns - e.start_ns) / 1e3, buffer->tid);
      // The args that are set, each after a ',' or the object's opening '{'.
      char sep = '{';
      if (e.bytes || e.record) out += ",\"args\":";
      if (e.bytes) fmt::format_to(std::back_inserter(out), "{}\"bytes\":{}", std::exchange(sep, ','), e.bytes);
      if (e.record) fmt::format_to(std::back_inserter(out), "{}\"id\":{}", std::exchange(sep, ','), e.record - 1);
      if (sep == ',') out += '}';
      out += '}';
    }
  }
  out += "\n]}\n";
  return out;
}

void write_chrome_json(const std::string& path) {
  const std::string json = chrome_json();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(errno, fmt::format("cannot create the trace file {}", path));
  const char* p = json.data();
  std::size_t left = json.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw IoError(err, fmt::format("cannot write the trace file {}", path));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw IoError(errno, fmt::format("cannot write the trace file {}", path));
}

}  // namespace mlbs::trace
