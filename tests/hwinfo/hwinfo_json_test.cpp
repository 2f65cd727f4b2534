// qforge-hwinfo --json: the document parses and follows the schema of docs/HWINFO.md.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qforge/hardware.h"
#include "tool_runner.h"

namespace {

using json = nlohmann::ordered_json;
using qforge::test::run_hwinfo_json;

// Asserts that `j[key]` exists and has the type `check` accepts.
template <class Check>
void expect_field(const json& j, const char* key, Check check, const char* type_name,
                  const std::string& where) {
  ASSERT_TRUE(j.is_object()) << where << " is not an object";
  ASSERT_TRUE(j.contains(key)) << where << " lacks \"" << key << "\"";
  EXPECT_TRUE(check(j.at(key))) << where << "." << key << " is not " << type_name << ": "
                                << j.at(key).dump();
}

auto is_string = [](const json& v) { return v.is_string(); };
auto is_bool = [](const json& v) { return v.is_boolean(); };
auto is_int = [](const json& v) { return v.is_number_integer(); };
auto is_array = [](const json& v) { return v.is_array(); };
auto is_object = [](const json& v) { return v.is_object(); };

void check_cpu(const json& cpu) {
  for (const char* key : {"vendor", "model", "architecture"})
    expect_field(cpu, key, is_string, "a string", "cpu");
  for (const char* key : {"packages", "cores", "logical_processors"})
    expect_field(cpu, key, is_int, "an integer", "cpu");
  expect_field(cpu, "caches", is_array, "an array", "cpu");
  for (const json& c : cpu.at("caches")) {
    expect_field(c, "name", is_string, "a string", "cpu.caches[]");
    expect_field(c, "type", is_string, "a string", "cpu.caches[]");
    for (const char* key : {"level", "size_bytes", "shared_by"})
      expect_field(c, key, is_int, "an integer", "cpu.caches[]");
  }
  expect_field(cpu, "features", is_object, "an object", "cpu");
}

void check_plugin(const json& p) {
  for (const char* key : {"name", "version", "path"})
    expect_field(p, key, is_string, "a string", "plugins[]");
  const std::string where = "plugins[" + p.value("name", std::string("?")) + "]";
  expect_field(p, "availability", is_object, "an object", where);
  const json& a = p.at("availability");
  expect_field(a, "usable", is_bool, "a boolean", where + ".availability");
  expect_field(a, "score", is_int, "an integer", where + ".availability");
  expect_field(a, "reason", is_string, "a string", where + ".availability");
  if (!a.at("usable").get<bool>())
    EXPECT_FALSE(a.at("reason").get<std::string>().empty()) << where << ": unusable, no reason";
  expect_field(p, "errors", is_array, "an array", where);
  expect_field(p, "devices", is_array, "an array", where);
  for (const json& d : p.at("devices")) {
    expect_field(d, "name", is_string, "a string", where + ".devices[]");
    expect_field(d, "kind", is_string, "a string", where + ".devices[]");
    expect_field(d, "memory_bytes", is_int, "an integer", where + ".devices[]");
    expect_field(d, "properties", is_object, "an object", where + ".devices[]");
  }
  expect_field(p, "capabilities", is_array, "an array", where);
  EXPECT_FALSE(p.at("capabilities").empty()) << where;
  for (const json& c : p.at("capabilities")) {
    const std::string cw = where + ".capabilities[" + c.value("case", std::string("?")) + "]";
    for (const char* key : {"op", "case", "description"})
      expect_field(c, key, is_string, "a string", cw);
    expect_field(c, "supported", is_bool, "a boolean", cw);
    if (c.value("supported", false)) {
      expect_field(c, "kernels", is_array, "an array", cw);
      EXPECT_FALSE(c.value("kernels", json::array()).empty()) << cw << ": supported, no kernel";
    } else {
      expect_field(c, "reason", is_string, "a string", cw);
      EXPECT_FALSE(c.value("reason", std::string()).empty()) << cw << ": unsupported, no reason";
    }
  }
}

TEST(HwinfoJson, FollowsTheSchema) {
  const json doc = run_hwinfo_json();
  expect_field(doc, "qforge_version", is_string, "a string", "document");
  expect_field(doc, "cpu", is_object, "an object", "document");
  expect_field(doc, "search_path", is_array, "an array", "document");
  expect_field(doc, "plugins", is_array, "an array", "document");
  expect_field(doc, "failures", is_array, "an array", "document");
  if (HasFailure()) return;
  check_cpu(doc.at("cpu"));
  for (const json& p : doc.at("plugins")) check_plugin(p);
  for (const json& f : doc.at("failures"))
    for (const char* key : {"path", "kind", "message"})
      expect_field(f, key, is_string, "a string", "failures[]");
}

TEST(HwinfoJson, CpuSectionMatchesTheLibrary) {
  const json doc = run_hwinfo_json();
  ASSERT_TRUE(doc.contains("cpu"));
  const json& cpu = doc.at("cpu");
  const auto& info = qforge::cpu_info();
  EXPECT_EQ(cpu.value("model", std::string()), info.model);
  EXPECT_EQ(cpu.value("vendor", std::string()), info.vendor);
  EXPECT_EQ(cpu.value("cores", -1), info.cores);
  EXPECT_EQ(cpu.value("logical_processors", -1), info.logical_processors);
  EXPECT_EQ(cpu.at("caches").size(), info.caches.size());
  // Features keep the documented order in the document, not alphabetical order.
  std::vector<std::pair<std::string, bool>> features;
  for (const auto& item : cpu.at("features").items())
    features.emplace_back(item.key(), item.value().get<bool>());
  EXPECT_EQ(features, info.features);
}

TEST(HwinfoJson, ScalarPluginIsUsableAndRunsTheBasics) {
  const json doc = run_hwinfo_json();
  ASSERT_TRUE(doc.contains("plugins"));
  const json* scalar = nullptr;
  for (const json& p : doc.at("plugins"))
    if (p.value("name", std::string()) == "cpu_scalar") scalar = &p;
  ASSERT_NE(scalar, nullptr) << "cpu_scalar not among the plugins:\n" << doc.dump(2);
  EXPECT_TRUE(scalar->at("availability").at("usable").get<bool>());
  EXPECT_FALSE(scalar->at("devices").empty());
  // The reference backend runs everything the reference defines; these two are the core of it.
  int checked = 0;
  for (const json& c : scalar->at("capabilities")) {
    const auto label = c.at("case").get<std::string>();
    const auto op = c.at("op").get<std::string>();
    if ((op == "quantize" && label == "int8 per_tensor_symmetric") ||
        (op == "matmul_integer" && label.starts_with("u8xs8 kn b=per_tensor"))) {
      EXPECT_TRUE(c.at("supported").get<bool>()) << op << " " << label << ": " << c.dump();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2) << "the grid no longer has the cases this test looks for";
}

}  // namespace
