// BERT's tokenizer (Hugging Face `tokenizers`' BertNormalizer + BertPreTokenizer + WordPiece +
// the [CLS] ... [SEP] template) in C++, for the MiniLM example:
//   1. the special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) are matched in the raw text and
//      kept whole, as `tokenizers` does for added tokens;
//   2. normalisation: NUL, U+FFFD and control/format/unassigned/private-use characters are
//      dropped, whitespace becomes a space, CJK ideographs get a space on each side, the text is
//      decomposed (Unicode NFD) and non-spacing marks dropped (accents), then lower-cased;
//   3. pre-tokenisation: split at whitespace, and every punctuation character (ASCII
//      punctuation or a Unicode P* category) is a word of its own;
//   4. WordPiece: greedy longest match from the vocabulary, continuation pieces prefixed "##";
//      a word with no full match, or over 100 characters, is [UNK].
// Unicode data (categories, NFD, case mapping) comes from ICU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qforge::minilm {

class WordPiece {
 public:
  // One token per line; the line number (from 0) is the id. Throws qforge::Error when the file
  // cannot be read, is empty, has a duplicate token, or lacks [CLS], [SEP] or [UNK].
  static WordPiece from_vocab_file(const std::filesystem::path& path);
  static WordPiece from_tokens(std::vector<std::string> tokens, std::string_view source);

  // [CLS] pieces... [SEP], cut to at most max_length ids (>= 2) by dropping trailing pieces.
  // Throws qforge::Error on text that is not valid UTF-8.
  std::vector<std::int64_t> encode(std::string_view text, std::size_t max_length = 512) const;
  // The normalised, pre-tokenised words (step 2 and 3), for tests and inspection.
  std::vector<std::string> words(std::string_view text) const;
  // The word pieces of the text without [CLS]/[SEP] and without truncation.
  std::vector<std::string> pieces(std::string_view text) const;

  std::int64_t id(std::string_view token) const;  // -1 when absent
  const std::string& token(std::int64_t id) const { return tokens_.at(id); }
  std::size_t size() const noexcept { return tokens_.size(); }
  std::int64_t pad_id() const noexcept { return pad_; }

 private:
  WordPiece() = default;
  // A special token matched in the raw text, or one normalised word.
  struct Segment {
    std::int64_t special = -1;
    std::u32string word;
  };
  std::vector<Segment> segments(std::string_view text) const;
  // Appends the ids of one normalised word.
  void word_ids(const std::u32string& word, std::vector<std::int64_t>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::int64_t> ids_;
  std::vector<std::string> specials_;  // matched whole in the raw text
  std::int64_t cls_ = -1, sep_ = -1, unk_ = -1, pad_ = 0;
};

}  // namespace qforge::minilm
