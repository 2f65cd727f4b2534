// load_recipe / save_recipe: bounded reads of regular files, the path in every error, atomic
// writes; and every JSON example in docs/RECIPES.md parses.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "qforge/model/recipe.h"
#include "test_support.h"

namespace qforge::model {
namespace {

namespace fs = std::filesystem;
using test::expect_error;

class RecipeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("qforge_recipe_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(RecipeFile, SavesAtomicallyAndLoadsBack) {
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "LayerNorm|Softmax"}, "keep float"));
  r.default_quantize = LayerQuantization{};
  const fs::path p = dir_ / "recipe.json";
  save_recipe(r, p);
  EXPECT_EQ(load_recipe(p), r);
  r.rules[0].optional = true;
  save_recipe(r, p);  // replaces the file
  EXPECT_EQ(load_recipe(p), r);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u);  // no temporary left behind

  Recipe invalid = r;
  invalid.rules[0].match.name_regex = "(";
  expect_error([&] { save_recipe(invalid, p); }, ErrorCode::invalid_argument,
               {"rules[0].match.name_regex"});
  EXPECT_EQ(load_recipe(p), r);  // the old file is untouched
}

TEST_F(RecipeFile, ErrorsNameTheFile) {
  const fs::path missing = dir_ / "missing.json";
  expect_error([&] { load_recipe(missing); }, ErrorCode::io,
               {missing.string() + ": cannot open the recipe: No such file or directory"});
  expect_error([&] { load_recipe(dir_); }, ErrorCode::io,
               {dir_.string() + ": a directory; expected a regular file"});
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { load_recipe(fifo); }, ErrorCode::io, {fifo.string() + ": a FIFO"});
  expect_error([&] { load_recipe("/dev/null"); }, ErrorCode::io, {"/dev/null: a character device"});

  const fs::path big = dir_ / "big.json";
  write(big, "");
  fs::resize_file(big, kMaxRecipeFileBytes + 1);  // sparse: costs no disk
  expect_error([&] { load_recipe(big); }, ErrorCode::io, {big.string() + ": larger than 16 MiB"});

  const fs::path bad = dir_ / "bad.json";
  write(
      bad,
      R"({"format": "qforge.recipe", "version": 1, "rules": [{"match": {"op_types": ["Conv"]}, "weights": {"dtype": "int3"}}]})");
  expect_error([&] { load_recipe(bad); }, ErrorCode::invalid_argument,
               {bad.string() + ": rules[0].weights.dtype: unknown dtype 'int3'"});
  write(bad, "{");
  expect_error([&] { load_recipe(bad); }, ErrorCode::corrupt_data,
               {bad.string() + ": recipe: not valid JSON"});
  expect_error([&] { save_recipe(Recipe{}, dir_ / "no" / "such" / "dir.json"); }, ErrorCode::io,
               {"dir.json"});
}

// The documentation's examples are recipes that parse, not prose that drifts.
TEST(RecipeDocs, EveryJsonExampleParses) {
  std::ifstream in(QFORGE_RECIPES_DOC);
  ASSERT_TRUE(in) << "cannot read " << QFORGE_RECIPES_DOC;
  std::string line, block;
  bool inside = false;
  int examples = 0;
  while (std::getline(in, line)) {
    if (!inside && line == "```json") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      ++examples;
      EXPECT_NO_THROW(recipe_from_json(block)) << block;
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_GE(examples, 3);
}

}  // namespace
}  // namespace qforge::model
