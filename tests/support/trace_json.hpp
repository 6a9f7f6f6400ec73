// Test helper: pick apart a Chrome Trace Event JSON document.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlbs::test {

/// The complete ("X") events of a parsed trace.
inline std::vector<nlohmann::json> spans(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") out.push_back(e);
  return out;
}

/// tid -> name, from the thread_name metadata events.
inline std::map<int, std::string> thread_names(const nlohmann::json& doc) {
  std::map<int, std::string> out;
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      out[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  return out;
}

}  // namespace mlbs::test
