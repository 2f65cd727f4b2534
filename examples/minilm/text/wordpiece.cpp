#include "text/wordpiece.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include <fstream>

#include "qforge/error.h"

namespace qforge::minilm {
namespace {

// `tokenizers` reads a word of more characters as [UNK] without trying pieces.
constexpr std::size_t kMaxWordChars = 100;
const char* const kSpecialTokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

bool is_whitespace(UChar32 c) { return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(c); }

// Unicode's "Other" categories but unassigned (Cc, Cf, Cs, Co), tab, newline and return
// excepted: the characters BertNormalizer's clean_text drops. `tokenizers` keeps unassigned
// code points (they become [UNK]); checked against it, not only read from its source.
bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR: return true;
    default: return false;
  }
}

// The CJK Unified Ideographs blocks and their extensions and compatibility blocks, as BERT
// lists them (not Hiragana, Katakana or Hangul, which are split like other letters).
bool is_cjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ASCII punctuation (which includes $+<=>^`| from the symbol categories) or any P* category.
bool is_punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126))
    return true;
  switch (u_charType(c)) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION: return true;
    default: return false;
  }
}

void append_utf8(std::string& out, char32_t c) {
  char buf[U8_MAX_LENGTH];
  std::int32_t n = 0;
  // Code points come from decoding or ICU, so they are valid scalar values: the unsafe form
  // (no error flag) is enough.
  U8_APPEND_UNSAFE(reinterpret_cast<std::uint8_t*>(buf), n, static_cast<UChar32>(c));
  out.append(buf, static_cast<std::size_t>(n));
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

// Code points of UTF-8 text; invalid sequences are an error naming the byte offset.
std::u32string decode_utf8(std::string_view text, std::size_t base) {
  std::u32string out;
  const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto len = static_cast<std::int32_t>(text.size());
  for (std::int32_t i = 0; i < len;) {
    const std::int32_t at = i;
    UChar32 c;
    U8_NEXT(p, i, len, c);
    if (c < 0)
      throw Error(ErrorCode::invalid_argument,
                  "text is not valid UTF-8: bad byte sequence at byte " +
                      std::to_string(base + static_cast<std::size_t>(at)));
    out.push_back(static_cast<char32_t>(c));
  }
  return out;
}

// BertNormalizer: clean, pad CJK ideographs, NFD, drop non-spacing marks, lower-case (each code
// point on its own, as `tokenizers` does: a final capital sigma becomes σ, not ς).
std::u32string normalize(const std::u32string& in) {
  icu::UnicodeString cleaned;
  for (char32_t c32 : in) {
    const auto c = static_cast<UChar32>(c32);
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) cleaned.append(static_cast<UChar32>(' '));
    else if (is_cjk(c)) cleaned.append(static_cast<UChar32>(' ')).append(c).append(UChar32{' '});
    else cleaned.append(c);
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  icu::UnicodeString decomposed;
  if (U_SUCCESS(status)) decomposed = nfd->normalize(cleaned, status);
  if (U_FAILURE(status))
    throw Error(ErrorCode::internal,
                std::string("ICU's NFD normalisation failed: ") + u_errorName(status));
  std::u32string out;
  for (std::int32_t i = 0; i < decomposed.length();) {
    const UChar32 c = decomposed.char32At(i);
    i += U16_LENGTH(c);
    if (u_charType(c) == U_NON_SPACING_MARK) continue;
    UChar src[2], dst[8];
    std::int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, c);
    UErrorCode st = U_ZERO_ERROR;
    const std::int32_t m = u_strToLower(dst, 8, src, n, "", &st);
    if (U_FAILURE(st))
      throw Error(ErrorCode::internal,
                  std::string("ICU's lower-casing failed: ") + u_errorName(st));
    for (std::int32_t j = 0; j < m;) {
      UChar32 l;
      U16_NEXT(dst, j, m, l);
      out.push_back(static_cast<char32_t>(l));
    }
  }
  return out;
}

}  // namespace

WordPiece WordPiece::from_tokens(std::vector<std::string> tokens, std::string_view source) {
  if (tokens.empty())
    throw Error(ErrorCode::invalid_argument, std::string(source) + ": the vocabulary is empty");
  WordPiece wp;
  wp.tokens_ = std::move(tokens);
  for (std::size_t i = 0; i < wp.tokens_.size(); ++i)
    if (!wp.ids_.emplace(wp.tokens_[i], static_cast<std::int64_t>(i)).second)
      throw Error(ErrorCode::corrupt_data, std::string(source) + ": token '" + wp.tokens_[i] +
                                               "' appears twice (line " + std::to_string(i + 1) +
                                               ")");
  for (const char* t : kSpecialTokens)
    if (wp.ids_.contains(t)) wp.specials_.emplace_back(t);
  auto required = [&](const char* t) {
    const std::int64_t id = wp.id(t);
    if (id < 0)
      throw Error(ErrorCode::corrupt_data,
                  std::string(source) + ": the vocabulary has no " + t + " token");
    return id;
  };
  wp.cls_ = required("[CLS]");
  wp.sep_ = required("[SEP]");
  wp.unk_ = required("[UNK]");
  wp.pad_ = std::max<std::int64_t>(wp.id("[PAD]"), 0);
  return wp;
}

WordPiece WordPiece::from_vocab_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, path.string() + ": cannot open the vocabulary");
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(std::move(line));
  }
  if (in.bad()) throw Error(ErrorCode::io, path.string() + ": read error");
  return from_tokens(std::move(tokens), path.string());
}

std::int64_t WordPiece::id(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

std::vector<WordPiece::Segment> WordPiece::segments(std::string_view text) const {
  std::vector<Segment> out;
  auto split = [&](std::string_view chunk, std::size_t base) {
    std::u32string word;
    auto flush = [&] {
      if (!word.empty()) out.push_back({-1, std::move(word)});
      word.clear();
    };
    for (char32_t c : normalize(decode_utf8(chunk, base))) {
      if (is_whitespace(static_cast<UChar32>(c))) {
        flush();
      } else if (is_punctuation(static_cast<UChar32>(c))) {
        flush();
        out.push_back({-1, std::u32string(1, c)});
      } else {
        word.push_back(c);
      }
    }
    flush();
  };
  // Special tokens are found in the raw text first, leftmost first; the text between them is
  // normalised and split.
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t best = std::string_view::npos;
    const std::string* which = nullptr;
    for (const std::string& s : specials_) {
      const std::size_t at = text.find(s, pos);
      if (at < best) best = at, which = &s;
    }
    split(text.substr(pos, best == std::string_view::npos ? std::string_view::npos : best - pos),
          pos);
    if (!which) break;
    out.push_back({id(*which), {}});
    pos = best + which->size();
  }
  return out;
}

void WordPiece::word_ids(const std::u32string& word, std::vector<std::int64_t>& out) const {
  if (word.size() > kMaxWordChars) {
    out.push_back(unk_);
    return;
  }
  const std::size_t first = out.size();
  for (std::size_t start = 0; start < word.size();) {
    std::int64_t found = -1;
    std::size_t end = word.size();
    for (; end > start; --end) {
      const std::string piece =
          (start > 0 ? "##" : "") + to_utf8({word.data() + start, end - start});
      if (const auto it = ids_.find(piece); it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // no piece fits: the whole word is unknown
      out.resize(first);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<std::int64_t> WordPiece::encode(std::string_view text, std::size_t max_length) const {
  if (max_length < 2)
    throw Error(ErrorCode::invalid_argument,
                "max_length " + std::to_string(max_length) + " leaves no room for [CLS] and [SEP]");
  std::vector<std::int64_t> ids{cls_};
  for (const Segment& s : segments(text)) {
    if (s.special >= 0) ids.push_back(s.special);
    else word_ids(s.word, ids);
  }
  if (ids.size() > max_length - 1) ids.resize(max_length - 1);
  ids.push_back(sep_);
  return ids;
}

std::vector<std::string> WordPiece::words(std::string_view text) const {
  std::vector<std::string> out;
  for (const Segment& s : segments(text))
    out.push_back(s.special >= 0 ? tokens_[static_cast<std::size_t>(s.special)] : to_utf8(s.word));
  return out;
}

std::vector<std::string> WordPiece::pieces(std::string_view text) const {
  std::vector<std::int64_t> ids;
  for (const Segment& s : segments(text)) {
    if (s.special >= 0) ids.push_back(s.special);
    else word_ids(s.word, ids);
  }
  std::vector<std::string> out;
  for (std::int64_t i : ids) out.push_back(tokens_[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace qforge::minilm
