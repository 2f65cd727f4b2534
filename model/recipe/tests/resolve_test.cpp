// resolve(): first match wins, matching on names, op types or both, the default, skip, and the
// errors for rules that decide nothing.
#include <gtest/gtest.h>

#include <string>

#include "qforge/model/recipe.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using test::expect_error;

LayerQuantization int16_activations() {
  LayerQuantization l;
  l.activations->dtype = DType::int16;
  l.activations->mapping = Mapping::symmetric;
  return l;
}

TEST(RecipeResolve, FirstMatchingRuleWins) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe r;
  r.rules.push_back({.label = "sensitive",
                     .match = {.name_regex = "layer\\.1/output"},
                     .quantize = int16_activations()});
  r.rules.push_back({.label = "linear",
                     .match = {.op_types = {"Gemm", "MatMul"}},
                     .quantize = LayerQuantization{}});
  const RecipeResolution res = resolve(r, nodes);
  ASSERT_EQ(res.nodes.size(), nodes.size());
  EXPECT_EQ(res.nodes[7].rule, 0u);
  EXPECT_EQ(res.nodes[7].quantize, int16_activations());
  EXPECT_EQ(res.nodes[5].rule, 1u);
  EXPECT_EQ(res.nodes[5].quantize, LayerQuantization{});
  EXPECT_EQ(res.rules[0].decided, (std::vector<std::size_t>{7}));
  EXPECT_EQ(res.rules[1].decided, (std::vector<std::size_t>{2, 5, 6, 9}));
  EXPECT_EQ(res.rules[1].shadowed, (std::vector<std::size_t>{7}));

  // The same rules in the other order: the general rule takes node 7 and the specific one
  // decides nothing, which is the ordering mistake resolve() reports.
  std::swap(r.rules[0], r.rules[1]);
  expect_error([&] { resolve(r, nodes); }, ErrorCode::invalid_argument,
               {"rules[1] 'sensitive'", "'/encoder/layer.1/output/dense' (Gemm)",
                "earlier rules decided them all: rules[0] 'linear' (1)", "move it before"});
}

TEST(RecipeResolve, MatchesOnNameOnlyOpOnlyOrBoth) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe by_name;
  by_name.rules.push_back(Rule::skip({.name_regex = "attention"}));
  EXPECT_EQ(resolve(by_name, nodes).rules[0].decided, (std::vector<std::size_t>{2, 3, 6}));

  Recipe by_op;
  by_op.rules.push_back(Rule::skip({.op_types = {"MatMul"}}));
  EXPECT_EQ(resolve(by_op, nodes).rules[0].decided, (std::vector<std::size_t>{2, 6}));

  Recipe both;
  both.rules.push_back(Rule::skip({.name_regex = "layer\\.0", .op_types = {"MatMul", "Gemm"}}));
  EXPECT_EQ(resolve(both, nodes).rules[0].decided, (std::vector<std::size_t>{2, 5}));
}

TEST(RecipeResolve, PatternsSearchTheNameAndAnchorsRestrictThem) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "query"}));  // anywhere in the name
  EXPECT_EQ(resolve(r, nodes).rules[0].decided, (std::vector<std::size_t>{2, 6}));
  r.rules[0].match.name_regex = "^query";  // anchored: no name starts with it
  expect_error([&] { resolve(r, nodes); }, ErrorCode::invalid_argument,
               {"no node name matches '^query'",
                "closest names:", "'/encoder/layer.0/attention/query' (MatMul)"});
  r.rules[0].match.name_regex = "^/stem/conv$";
  EXPECT_EQ(resolve(r, nodes).rules[0].decided, (std::vector<std::size_t>{0}));
  r.rules[0].match.name_regex = "^$";  // the unnamed node
  EXPECT_EQ(resolve(r, nodes).rules[0].decided, (std::vector<std::size_t>{8}));
  r.rules[0].match.name_regex = "(?i)LAYERNORM";  // RE2's case-insensitive flag
  EXPECT_EQ(resolve(r, nodes).rules[0].decided, (std::vector<std::size_t>{4}));
}

TEST(RecipeResolve, DefaultDecidesUnmatchedNodesAndIsFloatUnlessSet) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "LayerNorm|Softmax"}, "keep float"));
  RecipeResolution res = resolve(r, nodes);
  EXPECT_EQ(res.rules[0].decided, (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(res.by_default, (std::vector<std::size_t>{0, 1, 2, 5, 6, 7, 8, 9}));
  for (std::size_t n : res.by_default) {
    EXPECT_TRUE(res.nodes[n].by_default());
    EXPECT_FALSE(res.nodes[n].quantize.has_value()) << "node " << n;
  }
  EXPECT_FALSE(res.nodes[3].quantize.has_value());  // skipped: float by the rule
  EXPECT_EQ(res.nodes[3].rule, 0u);

  r.default_quantize = LayerQuantization{};
  res = resolve(r, nodes);
  for (std::size_t n : res.by_default) EXPECT_EQ(res.nodes[n].quantize, LayerQuantization{});
  EXPECT_FALSE(res.nodes[4].quantize.has_value());
}

TEST(RecipeResolve, RecipeWithoutRulesAndGraphWithoutNodes) {
  Recipe r;
  r.default_quantize = LayerQuantization{};
  EXPECT_TRUE(resolve(r, {}).nodes.empty());
  r.rules.push_back(Rule::skip({.op_types = {"Conv"}}));
  expect_error([&] { resolve(r, {}); }, ErrorCode::invalid_argument,
               {"rules[0] (op_types [Conv])", "the graph has no nodes"});
  r.rules[0].optional = true;
  EXPECT_TRUE(resolve(r, {}).rules[0].decided.empty());
}

TEST(RecipeResolve, UnmatchedRulesAreListedWithHints) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "layer\\.1/atention"}, "typo"));        // 0
  r.rules.push_back(Rule::skip({.op_types = {"conv"}}));                              // 1
  r.rules.push_back(Rule::skip({.name_regex = "dense", .op_types = {"Transpose"}}));  // 2
  r.rules.push_back(Rule::skip({.name_regex = "xyzzy", .op_types = {"Gemm"}}));       // 3
  r.rules.push_back(Rule::skip({.op_types = {"Relu"}}));                              // 4: fine
  Rule optional = Rule::skip({.name_regex = "decoder"});
  optional.optional = true;
  r.rules.push_back(optional);                                                     // 5: fine
  r.rules.push_back(Rule::skip({.name_regex = "dense", .op_types = {"MatMul"}}));  // 6
  const std::string message = expect_error(
      [&] { resolve(r, nodes); }, ErrorCode::invalid_argument,
      {"5 of 7 rule(s) decide no node of the 10-node graph", "\"optional\": true",
       "rules[0] 'typo' (name_regex 'layer\\.1/atention'): no node name matches",
       "closest names: '/encoder/layer.1/attention/query' (MatMul)",
       "rules[1] (op_types [conv]): no node has op type in [conv]", "did you mean 'Conv'",
       "rules[2] (name_regex 'dense', op_types [Transpose]): name_regex 'dense' matches",
       "'/encoder/layer.0/output/dense' (Gemm)", "but none has op type in [Transpose]",
       "rules[6] (name_regex 'dense', op_types [MatMul]): name_regex 'dense' matches",
       "and op_types [MatMul] match '/encoder/layer.0/attention/query' (MatMul)",
       "but no node matches both",
       "rules[3] (name_regex 'xyzzy', op_types [Gemm]): op_types [Gemm] match 3 node(s) but no "
       "name among them matches 'xyzzy'"});
  EXPECT_EQ(message.find("rules[4]"), std::string::npos) << message;
  EXPECT_EQ(message.find("rules[5]"), std::string::npos) << message;
}

TEST(RecipeResolve, ManyUnmatchedRulesAreCappedInTheMessage) {
  const test::Graph g = test::small_graph();
  Recipe r;
  for (int i = 0; i < 50; ++i)
    r.rules.push_back(Rule::skip({.op_types = {"Op" + std::to_string(i)}}));
  const std::string message =
      expect_error([&] { resolve(r, g.refs()); }, ErrorCode::invalid_argument,
                   {"50 of 50 rule(s)", "rules[19] (op_types [Op19])", "... and 30 more"});
  EXPECT_EQ(message.find("rules[20]"), std::string::npos);
}

TEST(RecipeResolve, ReportListsWhatEachRuleMatched) {
  const test::Graph g = test::small_graph();
  const auto nodes = g.refs();
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "LayerNorm|Softmax"}, "keep float"));
  r.rules.push_back(
      {.match = {.op_types = {"Gemm", "MatMul", "Softmax"}}, .quantize = LayerQuantization{}});
  r.default_quantize = std::nullopt;
  const RecipeResolution res = resolve(r, nodes);
  const std::string report = format_report(r, res, nodes);
  EXPECT_NE(report.find("rules[0] 'keep float' -> float\n  decided (2):\n    "
                        "'/encoder/layer.0/attention/Softmax' (Softmax)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("rules[1] -> weights int8 symmetric per_channel(output channel) | "
                        "activations static int8 affine (entropy) | requantization "
                        "float_multiplier\n  decided (5):"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("  also matched, but decided by an earlier rule (1):\n    "
                        "'/encoder/layer.0/attention/Softmax' (Softmax)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("default -> float\n  decided (3):\n    '/stem/conv' (Conv)\n    "
                        "'/stem/relu' (Relu)\n    node #8 (Add)\n"),
            std::string::npos)
      << report;
  const RecipeResolution other = resolve(r, std::span(nodes).first(5));
  expect_error([&] { format_report(r, other, nodes); }, ErrorCode::invalid_argument,
               {"format_report", "covers 5 nodes"});
}

TEST(RecipeResolve, PathologicalPatternRunsInLinearTime) {
  // (a*)*b backtracks exponentially in PCRE-style engines on a run of a's without b, so such an
  // engine would never finish this test (ctest's timeout fails it); RE2 is linear in the name's
  // length, so 200k characters take milliseconds.
  const std::string long_name(200000, 'a');
  test::Graph g;
  g.add(long_name, "MatMul");
  g.add(long_name + "b", "MatMul");
  Recipe r;
  r.rules.push_back(Rule::skip({.name_regex = "^(a*)*b$"}));
  r.rules.push_back(Rule::skip({.name_regex = "(a|aa)*c", .op_types = {"MatMul"}}));
  r.rules.back().optional = true;
  const RecipeResolution res = resolve(r, g.refs());
  EXPECT_EQ(res.rules[0].decided, (std::vector<std::size_t>{1}));
  EXPECT_TRUE(res.rules[1].decided.empty());
}

TEST(RecipeResolve, HundredThousandRules) {
  // Op-type rules over a small graph: resolve is nodes x rules, no worse.
  test::Graph g = test::small_graph();
  Recipe r;
  for (int i = 0; i < 100000; ++i) {
    Rule rule = Rule::skip({.op_types = {"Custom" + std::to_string(i)}});
    rule.optional = true;
    r.rules.push_back(std::move(rule));
  }
  r.rules.push_back(Rule::skip({.op_types = {"Relu"}}));
  const RecipeResolution res = resolve(r, g.refs());
  EXPECT_EQ(res.nodes[1].rule, 100000u);
  EXPECT_EQ(res.by_default.size(), 9u);
}

TEST(RecipeResolve, RandomRecipesAgreeWithAPlainFirstMatchLoop) {
  // Random graphs and recipes; the oracle is the definition: the first rule whose op types
  // contain the node's op type and whose pattern occurs in its name.
  auto gen = test::rng(11);
  const std::vector<std::string> ops = {"Conv", "Gemm", "MatMul", "Relu", "Add"};
  const std::vector<std::string> words = {"enc", "dec", "attn", "mlp", "0", "1", "2"};
  for (int round = 0; round < 50; ++round) {
    test::Graph g;
    const int n_nodes = 1 + static_cast<int>(gen() % 40);
    for (int i = 0; i < n_nodes; ++i)
      g.add("/" + words[gen() % words.size()] + "/" + words[gen() % words.size()] + "/" +
                ops[gen() % ops.size()],
            ops[gen() % ops.size()]);
    Recipe r;
    const int n_rules = static_cast<int>(gen() % 6);
    for (int k = 0; k < n_rules; ++k) {
      Rule rule;
      rule.optional = true;
      if (gen() % 2) rule.match.name_regex = words[gen() % words.size()];
      if (!rule.match.name_regex || gen() % 2) rule.match.op_types = {ops[gen() % ops.size()]};
      if (gen() % 2) rule.quantize = LayerQuantization{};
      r.rules.push_back(rule);
    }
    const auto nodes = g.refs();
    const RecipeResolution res = resolve(r, nodes);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      std::size_t expected = kDefaultRule;
      for (std::size_t k = 0; k < r.rules.size() && expected == kDefaultRule; ++k) {
        const NodeMatch& m = r.rules[k].match;
        const bool name_ok = !m.name_regex || g.names[i].find(*m.name_regex) != std::string::npos;
        const bool op_ok = m.op_types.empty() || m.op_types[0] == g.ops[i];
        if (name_ok && op_ok) expected = k;
      }
      ASSERT_EQ(res.nodes[i].rule, expected) << "node " << g.names[i] << ", " << test::seed_text();
    }
  }
}

}  // namespace
}  // namespace qforge::model
