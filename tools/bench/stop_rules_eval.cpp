// ghostline-stop-rules-eval: where completions of blocks end, with a model that writes exactly
// the right body and then goes on with the code that followed it in the file. Input: JSON lines
// of block samples (`tools/train/eval_context.py --dump-blocks FILE`): the text with the body
// removed, the cursor (bytes) at the end of the line opening the block, the expected body and
// the original continuation. A sample is cut right when what is shown equals the body. Prints
// the share cut right, overall and per language.
//
// Built against syntax/ (the ContextBuilder on the tree); with -DGHOSTLINE_TEXT_ONLY it uses
// only shape_at() and finish_completion(), the interface every version of syntax/post_process
// has, so that older versions can be measured with the same program.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "syntax/post_process.h"
#ifndef GHOSTLINE_TEXT_ONLY
#include "syntax/context_builder.h"
#include "syntax/document_tree.h"
#include "syntax/language.h"
#endif

namespace {

std::string rtrim(std::string s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.pop_back();
  return s;
}

std::string shown(const nlohmann::json& sample) {
  const std::string text = sample["text"], continuation = sample["continuation"];
  const size_t cursor = sample["cursor"];
#ifdef GHOSTLINE_TEXT_ONLY
  return ghostline::syntax::finish_completion(ghostline::syntax::shape_at(text, cursor),
                                              continuation);
#else
  using namespace ghostline::syntax;
  std::shared_ptr<const TreeSnapshot> tree;
  std::unique_ptr<DocumentTree> doc;
  if (const Language* language = find_language("", sample["path"].get<std::string>())) {
    doc = std::make_unique<DocumentTree>(*language, text);
    tree = doc->snapshot(1);
  }
  const CompletionContext c = build_context(tree.get(), text, cursor, ContextOptions{.fim = true});
  if (c.decision == Decision::None) return "";
  return finish(c.shape, continuation).text;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const bool show_wrong = argc == 3 && std::string(argv[2]) == "--show-wrong";
  if (argc != 2 && !show_wrong) {
    std::fprintf(stderr,
                 "usage: %s BLOCKS.jsonl [--show-wrong]   (from tools/train/eval_context.py "
                 "--dump-blocks)\n",
                 argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  std::map<std::string, std::pair<int, int>> by_lang;  // right, total
  int right = 0, total = 0, single = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto sample = nlohmann::json::parse(line);
    const std::string got = shown(sample);
    const bool ok = rtrim(got) == rtrim(sample["expected"].get<std::string>());
    if (!ok && show_wrong)
      std::fprintf(
          stderr, "%s: expected %s\n  shown %s\n", sample["lang"].get<std::string>().c_str(),
          nlohmann::json(sample["expected"]).dump().c_str(), nlohmann::json(got).dump().c_str());
    auto& l = by_lang[sample["lang"].get<std::string>()];
    l.first += ok;
    ++l.second;
    right += ok;
    single += got.find('\n') == std::string::npos;
    ++total;
  }
  std::printf(
      "{\"samples\": %d, \"cut_right\": %.3f, \"shown_as_one_line\": %.3f, \"per_language\": {",
      total, total ? double(right) / total : 0.0, total ? double(single) / total : 0.0);
  const char* sep = "";
  for (const auto& [lang, rt] : by_lang) {
    std::printf("%s\"%s\": %.3f", sep, lang.c_str(), double(rt.first) / rt.second);
    sep = ", ";
  }
  std::printf("}}\n");
  return 0;
}
