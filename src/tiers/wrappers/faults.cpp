#include "tiers/wrappers/faults.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

namespace mlbs::tiers {
namespace {

using Op = FaultRule::Op;
using Effect = FaultRule::Effect;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool to_u64(std::string_view s, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

struct Named {
  std::string_view name;
  int value;
};
constexpr Named kErrors[] = {{"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},
                             {"EACCES", EACCES}, {"EROFS", EROFS},   {"ENOENT", ENOENT}};
constexpr std::pair<std::string_view, Op> kOps[] = {{"create", Op::create}, {"write", Op::write},
                                                    {"commit", Op::commit}, {"open", Op::open},
                                                    {"read", Op::read},     {"remove", Op::remove},
                                                    {"any", Op::any}};

const char* op_name(Op op) {
  for (const auto& [name, o] : kOps)
    if (o == op) return name.data();
  return "?";
}

/// Why a plan does not parse.
struct PlanError {
  std::string why;
};

FaultRule parse_rule(std::string_view text) {
  auto fail = [&](const std::string& why) -> FaultRule {
    throw PlanError{fmt::format("'{}': {} (expected <op>:<effect>[@<after>][*<count>][?<path>], e.g. "
                                         "write:ENOSPC@4, read:corrupt*1, any:delay=50ms, write:ENOSPC?/tmp/full)",
                                text, why)};
  };
  FaultRule rule;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return fail("no ':' between operation and effect");
  const std::string_view op = trim(text.substr(0, colon));
  std::string_view rest = trim(text.substr(colon + 1));
  bool known = false;
  for (const auto& [name, o] : kOps)
    if (op == name) {
      rule.op = o;
      known = true;
    }
  if (!known) return fail(fmt::format("unknown operation '{}' (create, write, commit, open, read, remove, any)", op));
  // The path goes first: it may hold '@' or '*' itself.
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    rule.while_exists = std::string(trim(rest.substr(q + 1)));
    if (rule.while_exists.empty()) return fail("?<path> names no file");
    rest = trim(rest.substr(0, q));
  }
  if (const auto star = rest.rfind('*'); star != std::string_view::npos) {
    if (!to_u64(rest.substr(star + 1), rule.count) || rule.count == 0) return fail("*<count> is not a count > 0");
    rest = rest.substr(0, star);
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    if (!to_u64(rest.substr(at + 1), rule.after)) return fail("@<after> is not a count");
    rest = rest.substr(0, at);
  }
  if (rest == "short") {
    rule.effect = Effect::short_;
    if (rule.op != Op::write) return fail("short applies to write");
  } else if (rest == "corrupt") {
    rule.effect = Effect::corrupt;
    if (rule.op != Op::write && rule.op != Op::read) return fail("corrupt applies to write or read");
  } else if (rest.rfind("delay=", 0) == 0) {
    rule.effect = Effect::delay;
    std::string_view d = rest.substr(6);
    std::uint64_t n = 0;
    std::uint64_t unit_us = 0;
    if (d.size() > 2 && d.substr(d.size() - 2) == "ms") unit_us = 1000, d.remove_suffix(2);
    else if (d.size() > 2 && d.substr(d.size() - 2) == "us") unit_us = 1, d.remove_suffix(2);
    else if (d.size() > 1 && d.back() == 's') unit_us = 1000000, d.remove_suffix(1);
    if (!unit_us || !to_u64(d, n) || n > 3600ull * 1000000 / unit_us)
      return fail("delay= needs a duration such as 50ms, 200us or 2s (at most an hour)");
    rule.delay = std::chrono::microseconds(n * unit_us);
  } else {
    for (const auto& [name, value] : kErrors)
      if (rest == name) {
        rule.effect = Effect::error;
        rule.error = value;
        return rule;
      }
    return fail(fmt::format("unknown effect '{}' (EIO, ENOSPC, EDQUOT, EACCES, EROFS, ENOENT, short, corrupt, "
                            "delay=<time>)",
                            rest));
  }
  return rule;
}

/// Owned copy of an ObjectRef's names, for objects that outlive the call.
struct RefCopy {
  std::string space, store;
  std::uint64_t id, generation;
  explicit RefCopy(const ObjectRef& r) : space(r.space), store(r.store), id(r.id), generation(r.generation) {}
  ObjectRef ref() const { return {space, id, generation, store}; }
};

class FaultyWriter final : public ObjectWriter {
 public:
  FaultyWriter(FaultyBackend& tier, std::unique_ptr<ObjectWriter> inner, const ObjectRef& ref)
      : tier_(tier), inner_(std::move(inner)), ref_(ref) {}
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    const ObjectRef ref = ref_.ref();
    const auto fired = tier_.fire(Op::write, &ref);
    if (lost_) return;  // a torn write lost the rest of the object
    if (fired.short_) {
      lost_ = true;
      bytes /= 2;
    }
    if (fired.corrupt && bytes > 0) {
      scratch_.assign(data, data + bytes);
      scratch_[bytes / 2] = ~scratch_[bytes / 2];
      data = scratch_.data();
    }
    inner_->write(offset, data, bytes);
  }
  void commit(bool durable) override {
    const ObjectRef ref = ref_.ref();
    tier_.fire(Op::commit, &ref);
    inner_->commit(durable);
  }

 private:
  FaultyBackend& tier_;
  std::unique_ptr<ObjectWriter> inner_;
  RefCopy ref_;
  bool lost_ = false;
  std::vector<std::byte> scratch_;
};

class FaultyReader final : public ObjectReader {
 public:
  FaultyReader(FaultyBackend& tier, std::unique_ptr<ObjectReader> inner, const ObjectRef& ref)
      : tier_(tier), inner_(std::move(inner)), ref_(ref) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    const ObjectRef ref = ref_.ref();
    const auto fired = tier_.fire(Op::read, &ref);
    inner_->read(offset, data, bytes);
    if (fired.corrupt && bytes > 0) data[bytes / 2] = ~data[bytes / 2];
  }

 private:
  FaultyBackend& tier_;
  std::unique_ptr<ObjectReader> inner_;
  RefCopy ref_;
};

}  // namespace

namespace {
std::vector<FaultRule> parse_plan(std::string_view spec) {
  std::vector<FaultRule> plan;
  while (!trim(spec).empty()) {
    const auto comma = spec.find(',');
    const std::string_view rule = trim(spec.substr(0, comma));
    if (rule.empty()) throw PlanError{"empty fault rule (two ',' in a row?)"};
    plan.push_back(parse_rule(rule));
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
    if (trim(spec).empty()) throw PlanError{"empty fault rule after the last ','"};
  }
  return plan;
}
}  // namespace

std::vector<FaultRule> parse_fault_plan(std::string_view spec, const std::string& field) {
  try {
    return parse_plan(spec);
  } catch (const PlanError& e) {
    throw ConfigError(field, e.why);
  }
}

std::string fault_plan_error(std::string_view spec) {
  try {
    parse_plan(spec);
    return {};
  } catch (const PlanError& e) {
    return e.why;
  }
}

FaultyBackend::FaultyBackend(std::unique_ptr<Backend> inner, std::vector<FaultRule> plan)
    : WrappedBackend(std::move(inner)) {
  for (FaultRule& r : plan) {
    auto armed = std::make_unique<Armed>();
    armed->rule = r;
    rules_.push_back(std::move(armed));
  }
}

FaultyBackend::Fired FaultyBackend::fire(Op op, const ObjectRef* ref) {
  Fired fired;
  for (auto& a : rules_) {
    const FaultRule& r = a->rule;
    if (r.op != op && r.op != Op::any) continue;
    const std::uint64_t n = a->seen.fetch_add(1, std::memory_order_relaxed);
    if (n < r.after || n - r.after >= r.count) continue;
    if (!r.while_exists.empty() && ::access(r.while_exists.c_str(), F_OK) != 0) continue;
    injected_.fetch_add(1, std::memory_order_relaxed);
    switch (r.effect) {
      case Effect::delay:  // the latency spike is the fault; a runtime giving up cuts it short
        if (!delay_.until(CancellableWait::Clock::now() + r.delay))
          fail(ECANCELED, fmt::format("injected delay of {} cancelled: the runtime is shutting down", op_name(op)),
               ref);
        break;
      case Effect::error:
        fail(r.error, fmt::format("injected fault: {} failed with {} (Tier::faults)", op_name(op),
                                  std::strerror(r.error)),
             ref);
      case Effect::short_:
        fired.short_ = true;
        break;
      case Effect::corrupt:
        fired.corrupt = true;
        break;
    }
  }
  return fired;
}

std::unique_ptr<ObjectWriter> FaultyBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  fire(Op::create, &ref);
  return std::make_unique<FaultyWriter>(*this, WrappedBackend::do_create(ref, size), ref);
}

std::unique_ptr<ObjectReader> FaultyBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  fire(Op::open, &ref);
  return std::make_unique<FaultyReader>(*this, WrappedBackend::do_open(ref, size), ref);
}

void FaultyBackend::do_remove(const ObjectRef& ref) {
  fire(Op::remove, &ref);
  WrappedBackend::do_remove(ref);
}

}  // namespace mlbs::tiers
