// ghostline-reparse-bench: the incremental reparse after a keystroke in a 5,000-line Python file
// and a 5,000-line C++ file. At random places a character is typed and deleted again, each edit
// through DocumentTree::edit (ts_tree_edit + reparse with the old tree), as the I/O thread does
// for each didChange. Prints p50/p99/max of the reparse alone (wall clock) and of the whole edit
// (points, text splice, reparse) in this thread's CPU time, which a busy shared machine distorts
// less, and the time of a full parse for comparison. Budget: p99 under 2 ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "syntax/context_builder.h"
#include "syntax/cross_file.h"
#include "syntax/document_tree.h"
#include "syntax/language.h"

namespace ghostline::bench {
namespace {

using syntax::DocumentTree;

// Realistic Python: classes of methods with docstrings, comments, loops, comprehensions, dicts.
std::string python_file(int lines) {
  std::string out = "\"\"\"Generated service module.\"\"\"\n\nimport json\nimport logging\nfrom "
                    "dataclasses import dataclass\n\nlog = logging.getLogger(__name__)\n\n";
  for (int c = 0; std::count(out.begin(), out.end(), '\n') < lines; ++c) {
    std::string n = std::to_string(c);
    out += "\n@dataclass\nclass Record" + n + ":\n    \"\"\"A record of table " + n +
           ".\"\"\"\n\n    key: str\n    value: int = 0\n    tags: list[str] | None = None\n\n";
    for (int m = 0; m < 4; ++m) {
      std::string f = "method_" + std::to_string(m);
      out += "    def " + f + "(self, items: list[int], limit: int = " + std::to_string(10 + m) +
             ") -> dict[str, int]:\n"
             "        # Keep the items under the limit, counted by parity.\n"
             "        counts = {\"even\": 0, \"odd\": 0}\n"
             "        for item in items:\n"
             "            if item > limit:\n"
             "                log.debug(\"skipping %d in " + f + "\", item)\n"
             "                continue\n"
             "            counts[\"even\" if item % 2 == 0 else \"odd\"] += 1\n"
             "        total = sum(value for value in counts.values())\n"
             "        return {**counts, \"total\": total, \"key\": len(self.key)}\n\n";
    }
    out += "\ndef load_" + n + "(path: str) -> list[Record" + n + "]:\n"
           "    with open(path, encoding=\"utf-8\") as f:\n"
           "        return [Record" + n + "(**row) for row in json.load(f)]\n\n";
  }
  return out;
}

// Realistic C++: a namespace of classes with inline methods, free functions, loops, lambdas.
std::string cpp_file(int lines) {
  std::string out = "// Generated geometry module.\n#include <algorithm>\n#include <string>\n"
                    "#include <vector>\n\nnamespace geometry {\n";
  for (int c = 0; std::count(out.begin(), out.end(), '\n') < lines; ++c) {
    std::string n = std::to_string(c);
    out += "\n/// A polygon of kind " + n + ".\nclass Shape" + n + " {\n public:\n"
           "  explicit Shape" + n + "(std::vector<double> xs) : xs_(std::move(xs)) {}\n\n"
           "  double area() const {\n"
           "    double sum = 0;\n"
           "    for (size_t i = 0; i + 1 < xs_.size(); ++i) {\n"
           "      sum += xs_[i] * xs_[i + 1] - xs_[i + 1] * xs_[i];  // shoelace\n"
           "    }\n"
           "    return sum / 2.0;\n"
           "  }\n\n"
           "  std::string name() const { return \"shape-" + n + "\"; }\n\n"
           " private:\n"
           "  std::vector<double> xs_;\n"
           "};\n\n";
    for (int f = 0; f < 3; ++f) {
      std::string fn = "scale_" + n + "_" + std::to_string(f);
      out += "std::vector<double> " + fn + "(const std::vector<double>& in, double k) {\n"
             "  std::vector<double> out;\n"
             "  out.reserve(in.size());\n"
             "  std::transform(in.begin(), in.end(), std::back_inserter(out),\n"
             "                 [k](double x) { return x * k + " + std::to_string(f) + "; });\n"
             "  if (out.empty()) {\n"
             "    return {0.0};\n"
             "  }\n"
             "  return out;\n"
             "}\n\n";
    }
  }
  return out + "}  // namespace geometry\n";
}

double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Stats {
  double p50, p99, max;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  return {at(0.50), at(0.99), ms.back()};
}

// Whether `at` is inside a line's leading indentation (not where a typist types: an edit
// there re-indents the rest of a Python block).
bool in_indentation(const std::string& text, size_t at) {
  if (at >= text.size() || (text[at] != ' ' && text[at] != '\t')) return false;
  while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
  return at == 0 || text[at - 1] == '\n';
}

void run(const char* language_id, const std::string& text, int edits, uint32_t seed,
         const std::string& typed, bool anywhere) {
  const syntax::Language* lang = syntax::find_language(language_id);
  if (!lang) {
    std::fprintf(stderr, "no grammar for %s\n", language_id);
    std::exit(1);
  }
  auto t0 = std::chrono::steady_clock::now();
  DocumentTree doc(*lang, text);
  double full_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));

  std::mt19937 rng(seed);
  std::vector<double> reparse_ms, edit_ms;
  // Warm up the parser's allocations and the caches before timing.
  for (int i = 0; i < 20; ++i) {
    doc.edit(text.size() / 2, text.size() / 2, "x");
    doc.edit(text.size() / 2, text.size() / 2 + 1, "");
  }
  for (int i = 0; i < edits; i += 2) {
    size_t at = std::uniform_int_distribution<size_t>(0, doc.text().size())(rng);
    while (!anywhere && in_indentation(doc.text(), at)) ++at;
    std::string c(1, typed[std::uniform_int_distribution<size_t>(0, typed.size() - 1)(rng)]);
    for (int step = 0; step < 2; ++step) {
      double cpu0 = thread_cpu_ms();
      if (step == 0) {
        doc.edit(at, at, c);  // type a character ...
      } else {
        doc.edit(at, at + 1, "");  // ... and delete it
      }
      edit_ms.push_back(thread_cpu_ms() - cpu0);
      reparse_ms.push_back(doc.last_parse_ms());
    }
  }
  Stats r = stats(reparse_ms), e = stats(edit_ms);
  std::printf(
      "| %-6s | %5d | %7zu | %13.2f | %5zu | %14.3f | %6.3f | %6.3f | %15.3f | %6.3f | %6.3f |\n",
      lang->name.c_str(), lines, text.size(), full_ms, reparse_ms.size(), r.p50, r.p99, r.max,
      e.p50, e.p99, e.max);
}

// The syntax work of one completion request at a random cursor, in this thread's CPU time: on
// the I/O thread a copy of the tree, the names used in the 64 rows before the cursor's 16-row
// grid line and their definitions in another open document (as the daemon attaches them); on the
// engine thread the ContextBuilder's decision. Budget: p99 under 2 ms.
void context_run(const char* language_id, const std::string& text, int requests, uint32_t seed) {
  syntax::DocumentTrees trees;
  syntax::CrossFileIndex index;
  trees.open("doc", language_id, "file:///p/doc", text);
  trees.open("other", language_id, "file:///p/other", text);
  index.opened("doc", "p/doc");
  index.opened("other", "p/other");
  std::mt19937 rng(seed);
  std::vector<double> attach_ms, build_ms;
  std::vector<size_t> line_starts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts.push_back(i + 1);
  for (int i = -10; i < requests; ++i) {  // the first ten warm up (and index the other document)
    const size_t row = std::uniform_int_distribution<size_t>(1, line_starts.size() - 2)(rng);
    const size_t cursor = line_starts[row + 1] - 1;  // the end of a line, where the user types
    double cpu0 = thread_cpu_ms();
    auto tree = trees.snapshot("doc", 1);
    const size_t end_row = row / 16 * 16, begin_row = end_row > 64 ? end_row - 64 : 0;
    auto names =
        syntax::referenced_names(*tree, text, line_starts[begin_row], line_starts[end_row]);
    const auto files = index.context_for("doc", names, trees, syntax::CrossFileLimits{});
    double cpu1 = thread_cpu_ms();
    const auto context =
        syntax::build_context(tree.get(), text, cursor, syntax::ContextOptions{.fim = true});
    double cpu2 = thread_cpu_ms();
    (void)files, (void)context;  // timed for their work, not their result
    if (i < 0) continue;
    attach_ms.push_back(cpu1 - cpu0);
    build_ms.push_back(cpu2 - cpu1);
  }
  Stats a = stats(attach_ms), b = stats(build_ms);
  std::printf("| %-6s | %8d | %9.3f | %6.3f | %6.3f | %11.3f | %6.3f | %6.3f |\n", language_id,
              requests, a.p50, a.p99, a.max, b.p50, b.p99, b.max);
}

int main(int argc, char** argv) {
  int edits = 1000, lines = 5000;
  uint32_t seed = 1;
  bool anywhere = false;
  // What a typist types: mostly letters and digits, some punctuation that opens or closes.
  std::string typed = "abcdefghijklmnopqrstuvwxyz_0123456789 ().,:=+";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--edits") && i + 1 < argc) {
      edits = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--lines") && i + 1 < argc) {
      lines = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--chars") && i + 1 < argc && argv[i + 1][0]) {
      typed = argv[++i];
    } else if (!std::strcmp(argv[i], "--anywhere")) {
      anywhere = true;
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else {
      std::printf("usage: %s [--edits N] [--lines N] [--seed N] [--chars CHARS] [--anywhere]\n"
                  "Reparse time after one-character edits (type, then delete) at random places\n"
                  "of generated Python and C++ files (default: 1000 edits, 5000 lines), and the\n"
                  "syntax work of a completion request. Edits go where a typist types: not into a\n"
                  "line's leading indentation unless --anywhere.\n",
                  argv[0]);
      return std::strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (edits < 2 || lines < 10) {
    std::fprintf(stderr, "--edits must be at least 2 and --lines at least 10\n");
    return 2;
  }
  std::printf(
      "| lang   | lines |   bytes | full parse ms | edits | reparse ms p50 |    p99 |    max "
      "| edit cpu ms p50 |    p99 |    max |\n");
  std::printf(
      "|--------|------:|--------:|--------------:|------:|---------------:|-------:|-------:"
      "|----------------:|-------:|-------:|\n");
  run("python", python_file(lines), edits, seed, typed, anywhere);
  run("cpp", cpp_file(lines), edits, seed, typed, anywhere);
  std::printf("\nSyntax work per completion request (CPU ms):\n\n");
  std::printf(
      "| lang   | requests | attach p50 |    p99 |    max | context p50 |    p99 |    max |\n");
  std::printf(
      "|--------|---------:|-----------:|-------:|-------:|------------:|-------:|-------:|\n");
  context_run("python", python_file(lines), edits / 2, seed);
  context_run("cpp", cpp_file(lines), edits / 2, seed);
  return 0;
}

}  // namespace
}  // namespace ghostline::bench

int main(int argc, char** argv) { return ghostline::bench::main(argc, argv); }
