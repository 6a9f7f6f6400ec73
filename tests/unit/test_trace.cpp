// The trace recorder: off by default, cheap spans on every thread, Chrome
// Trace Event JSON out (src/trace/trace.cpp, docs/tracing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlbs/errors.hpp"
#include "mlbs/trace.hpp"
#include "support/temp_dir.hpp"
#include "support/trace_json.hpp"
#include "trace/recorder.hpp"

namespace {

namespace trace = mlbs::trace;
using nlohmann::json;
using mlbs::test::spans;
using mlbs::test::thread_names;

/// Every test starts and ends with tracing off, nothing recorded, the default bound.
class Trace : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    trace::enable(false);
    trace::set_max_events(trace::kDefaultMaxEvents);
    trace::clear();
  }
};

json parsed() { return json::parse(trace::chrome_json()); }

const json* find_span(const std::vector<json>& all, const std::string& name) {
  for (const json& e : all)
    if (e.at("name") == name) return &e;
  return nullptr;
}

// Tracing is off by default: spans and Scopes record nothing and the trace has no spans.
TEST_F(Trace, OffByDefaultRecordsNothing) {
  EXPECT_FALSE(trace::enabled());
  trace::span("ignored", "compute", trace::now_ns(), trace::now_ns(), 42);
  { trace::Scope s("also ignored"); }
  { trace::Scope s("ignored too", "io"); }
  EXPECT_EQ(trace::event_count(), 0u);
  EXPECT_TRUE(spans(parsed()).empty());
}

// A Scope opened while tracing is on but closed after it was turned off records nothing.
TEST_F(Trace, ScopeClosedAfterDisableRecordsNothing) {
  trace::enable();
  {
    trace::Scope s("cut short");
    trace::enable(false);
  }
  EXPECT_EQ(trace::event_count(), 0u);
}

// Spans keep their category, duration and nesting; the trace lists them by start time.
TEST_F(Trace, RecordsSpansWithOrderAndDuration) {
  trace::enable();
  EXPECT_TRUE(trace::enabled());
  const std::uint64_t t0 = trace::now_ns();
  trace::span("inner", "io", t0 + 1'000, t0 + 3'500, 4096);  // recorded before its parent ends
  trace::span("outer", "compute", t0, t0 + 10'000);
  trace::span("later", "compute", t0 + 20'000, t0 + 20'000);
  std::uint64_t scope_start = 0, scope_end = 0;
  {
    scope_start = trace::now_ns();
    trace::Scope s("scoped");
    scope_end = trace::now_ns();
  }
  EXPECT_EQ(trace::event_count(), 4u);

  const json doc = parsed();
  const auto all = spans(doc);
  ASSERT_EQ(all.size(), 4u);
  std::vector<std::string> names;
  for (const json& e : all)
    if (e.at("name") != "scoped") names.push_back(e.at("name").get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"outer", "inner", "later"}));

  const json& outer = *find_span(all, "outer");
  const json& inner = *find_span(all, "inner");
  EXPECT_EQ(outer.at("cat"), "compute");
  EXPECT_EQ(inner.at("cat"), "io");
  EXPECT_NEAR(outer.at("dur").get<double>(), 10.0, 1e-9);  // microseconds
  EXPECT_NEAR(inner.at("dur").get<double>(), 2.5, 1e-9);
  EXPECT_NEAR(inner.at("ts").get<double>() - outer.at("ts").get<double>(), 1.0, 0.002);
  EXPECT_NEAR(find_span(all, "later")->at("dur").get<double>(), 0.0, 1e-9);

  // "ts" counts microseconds from otherData.origin_ns on the now_ns() clock.
  const json& scoped = *find_span(all, "scoped");
  EXPECT_EQ(scoped.at("cat"), "compute");  // Scope's default category
  EXPECT_GE(scoped.at("dur").get<double>(), 0.0);
  const double origin = doc.at("otherData").at("origin_ns").get<double>();
  const double start_ns = origin + scoped.at("ts").get<double>() * 1e3;
  EXPECT_GE(start_ns, double(scope_start) - 1.0);
  EXPECT_LE(start_ns, double(scope_end) + 1.0);
}

// The JSON has Chrome's fields: ph X, ts/dur in µs, pid 1, small tids, bytes only when non-zero.
TEST_F(Trace, ChromeJsonHasTheExpectedFields) {
  trace::enable();
  const std::uint64_t t = trace::now_ns();
  trace::span("with bytes", "tier1", t, t + 2'000, 1 << 20);
  trace::span("without bytes", "copy", t, t + 1'000);
  const json doc = parsed();
  EXPECT_EQ(doc.at("displayTimeUnit"), "ms");
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 0);
  const auto all = spans(doc);
  ASSERT_EQ(all.size(), 2u);
  for (const json& e : all) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_EQ(e.at("pid"), 1);
    EXPECT_TRUE(e.at("tid").is_number_integer());
    EXPECT_GE(e.at("tid").get<int>(), 1);
    EXPECT_LT(e.at("tid").get<int>(), 1000) << "tids are small per-thread numbers";
    EXPECT_TRUE(e.at("ts").is_number());
    EXPECT_TRUE(e.at("dur").is_number());
    EXPECT_TRUE(e.at("cat").is_string());
  }
  EXPECT_EQ(find_span(all, "with bytes")->at("args").at("bytes"), 1 << 20);
  EXPECT_FALSE(find_span(all, "without bytes")->contains("args"));
  EXPECT_EQ(all[0].at("tid"), all[1].at("tid"));  // one thread, one tid
}

// A helper's span of one record carries its id beside its bytes; id 0 is an id, not "none".
TEST_F(Trace, RecordSpansNameTheirRecord) {
  trace::enable();
  const std::uint64_t t = trace::now_ns();
  trace::span_record("writeback 0->1", "tier1", t, t + 2'000, 4096, 7);
  trace::span_record("remove 1", "tier1", t + 3'000, t + 4'000, 0, 0);
  const auto all = spans(parsed());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(find_span(all, "writeback 0->1")->at("args"), (json{{"bytes", 4096}, {"id", 7}}));
  EXPECT_EQ(find_span(all, "remove 1")->at("args"), (json{{"id", 0}}));
}

// Names and categories with quotes, backslashes, control characters and UTF-8 stay valid JSON.
TEST_F(Trace, EscapesNames) {
  trace::enable();
  const std::string nasty = "say \"hi\" \\ path\n\ttab \x01 ctl π ✓";
  trace::span(nasty, "cat \"q\"", 1, 2);
  trace::span(std::string("bad \xff utf8 \xe2\x82"), "c", 1, 2);
  const auto all = spans(parsed());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NE(find_span(all, nasty), nullptr);
  EXPECT_EQ(find_span(all, nasty)->at("cat"), "cat \"q\"");
  EXPECT_NE(find_span(all, "bad \xef\xbf\xbd utf8 \xef\xbf\xbd\xef\xbf\xbd"), nullptr)
      << "invalid UTF-8 bytes become U+FFFD";
}

// name_thread() appears as thread_name metadata on the thread's tid.
TEST_F(Trace, NameThreadIsMetadata) {
  trace::enable();
  trace::name_thread("app");
  trace::span("work", "compute", 10, 20);
  const json doc = parsed();
  const auto all = spans(doc);
  ASSERT_EQ(all.size(), 1u);
  const auto names = thread_names(doc);
  const int tid = all[0].at("tid").get<int>();
  ASSERT_TRUE(names.count(tid));
  EXPECT_EQ(names.at(tid), "app");
  trace::name_thread("app \"renamed\"");
  EXPECT_EQ(thread_names(parsed()).at(tid), "app \"renamed\"");
}

// Spans from many threads at once all arrive, each thread under its own tid and name.
TEST_F(Trace, ConcurrentThreadsRecordIndependently) {
  trace::enable();
  constexpr int kThreads = 8;
  constexpr int kSpans = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      trace::name_thread("worker " + std::to_string(t));
      for (int i = 0; i < kSpans; ++i) {
        trace::Scope s("step", "compute");
        trace::span("io " + std::to_string(i % 7), "tier1", trace::now_ns(), trace::now_ns(), 64);
      }
    });
  // Export while they record: consistent snapshots, no data race.
  for (int i = 0; i < 3; ++i) EXPECT_NO_THROW(parsed());
  for (auto& th : threads) th.join();
  EXPECT_EQ(trace::event_count(), std::size_t{kThreads} * kSpans * 2);

  const json doc = parsed();
  std::map<int, int> per_tid;
  for (const json& e : spans(doc)) ++per_tid[e.at("tid").get<int>()];
  ASSERT_EQ(per_tid.size(), std::size_t{kThreads});
  const auto names = thread_names(doc);
  std::set<std::string> workers;
  for (const auto& [tid, n] : per_tid) {
    EXPECT_EQ(n, 2 * kSpans) << "tid " << tid;
    ASSERT_TRUE(names.count(tid)) << "tid " << tid;
    workers.insert(names.at(tid));
  }
  EXPECT_EQ(workers.size(), std::size_t{kThreads});
  EXPECT_TRUE(workers.count("worker 0"));
}

// A thread's spans outlive the thread; clear() then forgets them and the thread.
TEST_F(Trace, EventsOutliveTheirThreadUntilClear) {
  trace::enable();
  std::thread([] {
    trace::name_thread("short-lived");
    trace::span("done", "compute", 1, 2);
  }).join();
  auto named = [](const json& doc) {
    for (const auto& [tid, name] : thread_names(doc))
      if (name == "short-lived") return true;
    return false;
  };
  json doc = parsed();
  EXPECT_EQ(spans(doc).size(), 1u);
  EXPECT_TRUE(named(doc));
  trace::clear();
  doc = parsed();
  EXPECT_TRUE(spans(doc).empty());
  EXPECT_FALSE(named(doc));
}

// clear() forgets every event, keeps tracing on and the thread's name.
TEST_F(Trace, ClearForgetsEvents) {
  trace::enable();
  trace::name_thread("main");
  for (int i = 0; i < 10; ++i) trace::span("x", "compute", 1, 2);
  EXPECT_EQ(trace::event_count(), 10u);
  trace::clear();
  EXPECT_EQ(trace::event_count(), 0u);
  EXPECT_TRUE(trace::enabled());
  const json doc = parsed();
  EXPECT_TRUE(spans(doc).empty());
  trace::span("y", "compute", 1, 2);
  const json after = parsed();
  ASSERT_EQ(spans(after).size(), 1u);
  EXPECT_EQ(thread_names(after).at(spans(after)[0].at("tid").get<int>()), "main");
}

// Beyond the bound, spans are dropped and counted; the count is in the trace; clear() resets it.
TEST_F(Trace, BoundDropsAndReportsEvents) {
  EXPECT_EQ(trace::max_events(), std::size_t{4} << 20);
  trace::set_max_events(100);
  trace::enable();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 50; ++i) trace::span("s", "compute", 1, 2);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(trace::event_count(), 100u);
  EXPECT_EQ(trace::dropped_count(), 100u);
  const json doc = parsed();
  EXPECT_EQ(spans(doc).size(), 100u);
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 100);
  bool metadata = false;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "mlbs_dropped_events") {
      metadata = true;
      EXPECT_EQ(e.at("args").at("dropped"), 100);
    }
  EXPECT_TRUE(metadata);
  trace::clear();
  EXPECT_EQ(trace::dropped_count(), 0u);
  trace::span("fits again", "compute", 1, 2);
  EXPECT_EQ(trace::event_count(), 1u);
}

// write_chrome_json writes the same JSON to a file; an unwritable path is an IoError naming it.
TEST_F(Trace, WritesFileOrThrowsIoError) {
  mlbs::test::TempDir dir;
  trace::enable();
  trace::span("saved", "compute", 1, 2);
  const std::string path = dir / "trace.json";
  trace::write_chrome_json(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str());
  EXPECT_NE(find_span(spans(doc), "saved"), nullptr);

  const std::string bad = dir / "missing-folder/trace.json";
  try {
    trace::write_chrome_json(bad);
    FAIL() << "expected an IoError";
  } catch (const mlbs::IoError& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace
