#include "mlbs/errors.hpp"

#include <cstring>

#include <fmt/format.h>

namespace mlbs {
namespace {

std::string describe(int errno_value, const std::string& message, const ErrorContext& ctx) {
  std::string where;
  auto add = [&](const std::string& part) {
    where += where.empty() ? " [" : ", ";
    where += part;
  };
  if (!ctx.store.empty()) add(fmt::format("store '{}'", ctx.store));
  if (ctx.id) add(fmt::format("id {}", *ctx.id));
  if (!ctx.tier.empty()) add(ctx.tier);
  if (!where.empty()) where += "]";
  std::string text = fmt::format("mlbs: {}{}", message, where);
  if (errno_value != 0) text += fmt::format(": {}", std::strerror(errno_value));
  return text;
}

}  // namespace

Error::Error(int errno_value, std::string message, ErrorContext ctx)
    : std::runtime_error(describe(errno_value, message, ctx)),
      errno_(errno_value),
      message_(std::move(message)),
      ctx_(std::move(ctx)) {}

Error::Error(int errno_value, std::string what, std::string message, ErrorContext ctx)
    : std::runtime_error(std::move(what)),
      errno_(errno_value),
      message_(std::move(message)),
      ctx_(std::move(ctx)) {}

namespace {
std::string config_message(const std::string& field, const std::string& message,
                           const std::string& source, std::uint32_t line) {
  return fmt::format("invalid configuration: {}{}{}: {}", field,
                     source.empty() ? "" : fmt::format(" in {}", source),
                     line ? fmt::format(" line {}", line) : "", message);
}
}  // namespace

// No strerror suffix: "Invalid argument" would add nothing to the field and line.
ConfigError::ConfigError(std::string field, std::string message, std::string source,
                         std::uint32_t line)
    : Error(EINVAL, "mlbs: " + config_message(field, message, source, line),
            config_message(field, message, source, line), {}),
      field_(std::move(field)),
      source_(std::move(source)),
      line_(line) {}

}  // namespace mlbs
