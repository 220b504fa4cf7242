#include "daemon/pipeline/prompt_assembler.h"

#include <algorithm>

#include <xxhash.h>

#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {

namespace {

// Bytes that comfortably hold `tokens` tokens of code, so that only the text near the cursor
// is tokenized.
size_t bytes_for(int tokens) { return static_cast<size_t>(tokens) * 6 + 256; }

// Window edges snap to this grid so that they stay put while the user types.
constexpr size_t kWindowGrid = 4096;
// Segments end at the first line end after this many bytes.
constexpr size_t kSegmentBytes = 256;
constexpr size_t kMaxCachedSegments = 8192;
// PSM's far suffix starts on this grid, counted from the end of the file.
constexpr size_t kFarGrid = 256;

size_t line_start_at_or_after(std::string_view text, size_t pos) {
  if (pos == 0) return 0;
  size_t nl = text.find('\n', pos - 1);
  return nl == std::string_view::npos ? text.size() : nl + 1;
}

}  // namespace

PromptAssembler::PromptAssembler(const engine::Tokenizer& tokenizer, FimTokens fim, FimMode mode)
    : tokenizer_(tokenizer),
      fim_(std::move(fim)),
      mode_(fim_.pre < 0 ? FimMode::PrefixOnly : mode),
      repo_context_(fim_.file_sep >= 0) {}

PromptAssembler::PromptAssembler(const engine::Tokenizer& tokenizer, const engine::FimTemplate& fim)
    : PromptAssembler(tokenizer, fim.tokens, fim.mode) {
  repo_context_ = fim.repo_context;
  family_ = fim.family;
}

// `continuation` is false only for the segment that opens the prefix: a SentencePiece
// vocabulary puts a space in front of a text, and only there (for byte-level BPE the two are
// the same).
const std::vector<int32_t>& PromptAssembler::segment_tokens(std::string_view segment,
                                                            bool continuation, int* tokenized) {
  uint64_t key = XXH3_64bits_withSeed(segment.data(), segment.size(), continuation ? 1 : 0);
  auto it = segment_cache_.find(key);
  if (it != segment_cache_.end()) return it->second;
  if (segment_cache_.size() >= kMaxCachedSegments) segment_cache_.clear();
  ++*tokenized;
  auto tokens = continuation ? tokenizer_.encode_continuation(segment) : tokenizer_.encode(segment);
  return segment_cache_.emplace(key, std::move(tokens)).first->second;
}

void PromptAssembler::append_segments(std::string_view text, bool opens_prefix,
                                      std::vector<std::vector<int32_t>>& out, int* tokenized) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.size();
    if (text.size() - pos > kSegmentBytes) {
      // Cut after a line end where separate encoding gives the tokens of the whole text, if
      // one comes soon; otherwise after the first line end.
      size_t nl = text.find('\n', pos + kSegmentBytes);
      size_t exact = nl;
      while (exact != std::string_view::npos && exact < pos + 4 * kSegmentBytes &&
             !tokenizer_.splits_exactly_at(text, exact + 1))
        exact = text.find('\n', exact + 1);
      if (exact != std::string_view::npos && exact < pos + 4 * kSegmentBytes) nl = exact;
      if (nl != std::string_view::npos) end = nl + 1;
    }
    out.push_back(
        segment_tokens(text.substr(pos, end - pos), !(opens_prefix && pos == 0), tokenized));
    pos = end;
  }
}

Prompt PromptAssembler::build(std::string_view text, size_t cursor, const PromptLimits& limits,
                              std::span<const syntax::FileContext> other_files,
                              std::string_view repo) {
  Prompt p;
  p.mode = mode_;
  cursor = std::min(cursor, text.size());

  // Prefix: from a line start on the grid before the budget, to the cursor. Whole lines before
  // the cursor's line are cached segments; the cursor's line up to the cursor is tokenized
  // afresh (a keystroke changes only it).
  size_t budget = bytes_for(limits.max_prefix_tokens);
  size_t begin = 0;
  if (cursor > budget) {
    begin = line_start_at_or_after(text, (cursor - budget) / kWindowGrid * kWindowGrid);
    begin = std::min(begin, cursor);
    p.truncated = true;
  }
  size_t line_begin = cursor == 0 ? std::string_view::npos : text.rfind('\n', cursor - 1);
  line_begin = std::max(begin, line_begin == std::string_view::npos ? 0 : line_begin + 1);
  std::vector<std::vector<int32_t>> prefix_segments;
  append_segments(text.substr(begin, line_begin - begin), true, prefix_segments,
                  &p.segments_tokenized);
  std::string_view line = text.substr(line_begin, cursor - line_begin);
  std::vector<int32_t> current_line =
      line_begin == begin ? tokenizer_.encode(line) : tokenizer_.encode_continuation(line);
  ++p.segments_tokenized;

  // Drop whole leading segments until the prefix fits its token limit.
  size_t total = current_line.size();
  for (const auto& s : prefix_segments) total += s.size();
  size_t first = 0;
  while (total > static_cast<size_t>(limits.max_prefix_tokens) && first < prefix_segments.size()) {
    total -= prefix_segments[first++].size();
    p.truncated = true;
  }
  std::vector<int32_t> prefix;
  prefix.reserve(total);
  for (size_t i = first; i < prefix_segments.size(); ++i)
    prefix.insert(prefix.end(), prefix_segments[i].begin(), prefix_segments[i].end());
  prefix.insert(prefix.end(), current_line.begin(), current_line.end());
  if (static_cast<int>(prefix.size()) > limits.max_prefix_tokens) {  // one enormous line
    prefix.erase(prefix.begin(), prefix.end() - limits.max_prefix_tokens);
  }
  p.segments = static_cast<int>(prefix_segments.size() - first) + 1;

  std::vector<int32_t> suffix, far;
  if (p.mode == FimMode::Spm) {
    suffix = suffix_tokens(text, cursor, limits.max_suffix_tokens, p);
  } else if (p.mode == FimMode::Psm && cursor < text.size()) {
    if (!repo_context_) {
      suffix = suffix_tokens(text, cursor, limits.max_local_suffix_tokens, p);
    } else {
      // The FIM suffix runs from the cursor to where the far suffix starts (at least the rest of
      // the line), as far as its limit allows; the far suffix goes before the prefix.
      const size_t rest_end = line_start_at_or_after(text, cursor + 1);
      const size_t far_begin = far_suffix_start(text, rest_end);
      // Only the text the limit can use is tokenized on each keystroke: up to a line end past
      // its byte budget, or the budget itself on a very long (minified) line.
      size_t local_end = far_begin;
      if (const size_t budget = bytes_for(limits.max_local_suffix_tokens);
          local_end - cursor > budget) {
        const size_t line_end = line_start_at_or_after(text, cursor + budget);
        local_end =
            line_end - cursor <= 4 * budget ? std::min(line_end, far_begin) : cursor + budget;
      }
      suffix = tokenizer_.encode_continuation(text.substr(cursor, local_end - cursor));
      ++p.segments_tokenized;
      ++p.segments;
      if (static_cast<int>(suffix.size()) > limits.max_local_suffix_tokens) {
        suffix.resize(static_cast<size_t>(std::max(0, limits.max_local_suffix_tokens)));
        p.truncated = true;
      }
      far = far_suffix_tokens(text, far_begin, limits.max_far_suffix_tokens, p);
    }
  }
  p.prefix_tokens = static_cast<int>(prefix.size());
  p.suffix_tokens = static_cast<int>(suffix.size());
  p.far_suffix_tokens = static_cast<int>(far.size());

  // Other files, each `<file_sep>path\ntext\n`, as many whole ones as the limit holds. Their
  // order and text change only when the context chosen changes, not while the user types.
  std::vector<int32_t> files;
  if (repo_context_ && p.mode != FimMode::PrefixOnly && fim_.file_sep >= 0) {
    for (const syntax::FileContext& f : other_files) {
      std::string section = f.path + "\n" + f.text + "\n";
      const auto& tokens = segment_tokens(section, /*continuation=*/true, &p.segments_tokenized);
      if (files.size() + tokens.size() + 1 >
          static_cast<size_t>(std::max(0, limits.max_other_files_tokens))) {
        p.truncated = true;
        continue;
      }
      files.push_back(fim_.file_sep);
      files.insert(files.end(), tokens.begin(), tokens.end());
      ++p.other_files;
      ++p.segments;
    }
    if (!files.empty() && fim_.repo >= 0 && !repo.empty()) {
      std::vector<int32_t> head{fim_.repo};
      // Qwen2.5-Coder puts a line break after the name; StarCoder2 the file separator.
      const auto& name =
          segment_tokens(std::string(repo) + (family_ == engine::FimFamily::QwenCoder ? "\n" : ""),
                         true, &p.segments_tokenized);
      head.insert(head.end(), name.begin(), name.end());
      files.insert(files.begin(), head.begin(), head.end());
    }
  }
  p.other_files_tokens = static_cast<int>(files.size());

  const FimTokens& fim = fim_;
  auto& t = p.tokens;
  t.reserve(files.size() + far.size() + prefix.size() + suffix.size() + 5);
  if (fim.add_bos) t.push_back(fim.bos);
  t.insert(t.end(), files.begin(), files.end());
  switch (p.mode) {
    case FimMode::PrefixOnly:
      t.insert(t.end(), prefix.begin(), prefix.end());
      break;
    case FimMode::Psm:
      if (!far.empty()) {
        t.push_back(fim.file_sep);
        t.insert(t.end(), far.begin(), far.end());
      }
      t.push_back(fim.pre);
      t.insert(t.end(), prefix.begin(), prefix.end());
      t.push_back(fim.suf);
      t.insert(t.end(), suffix.begin(), suffix.end());
      t.push_back(fim.mid);
      break;
    case FimMode::Spm:
      t.push_back(fim.suf);
      t.insert(t.end(), suffix.begin(), suffix.end());
      t.push_back(fim.pre);
      t.insert(t.end(), prefix.begin(), prefix.end());
      t.push_back(fim.mid);
      break;
  }
  return p;
}

int PromptAssembler::max_suffix_tokens(const PromptLimits& limits) const {
  switch (mode_) {
    case FimMode::PrefixOnly:
      return 0;
    case FimMode::Spm:
      return limits.max_suffix_tokens + (repo_context_ ? limits.max_other_files_tokens : 0);
    case FimMode::Psm:
      return limits.max_local_suffix_tokens +
             (repo_context_ ? limits.max_far_suffix_tokens + limits.max_other_files_tokens : 0);
  }
  return limits.max_suffix_tokens;
}

// Suffix: from the cursor to a line end past the budget, its end on the grid too.
std::vector<int32_t> PromptAssembler::suffix_tokens(std::string_view text, size_t cursor,
                                                    int max_tokens, Prompt& p) {
  std::vector<int32_t> suffix;
  if (max_tokens <= 0 || cursor >= text.size()) return suffix;
  size_t end = text.size();
  const size_t sbudget = bytes_for(max_tokens);
  if (text.size() - cursor > sbudget) {
    end = std::min(text.size(), line_start_at_or_after(text, (cursor + sbudget + kWindowGrid - 1) /
                                                                 kWindowGrid * kWindowGrid));
    p.truncated = true;
  }
  // The rest of the cursor's line is its own segment; whole lines after it are cached.
  const size_t line_end = std::min(end, line_start_at_or_after(text, cursor + 1));
  suffix = tokenizer_.encode_continuation(text.substr(cursor, line_end - cursor));
  ++p.segments_tokenized;
  std::vector<std::vector<int32_t>> segments;
  append_segments(text.substr(line_end, end - line_end), false, segments, &p.segments_tokenized);
  for (const auto& s : segments) {
    if (suffix.size() >= static_cast<size_t>(max_tokens)) break;
    suffix.insert(suffix.end(), s.begin(), s.end());
  }
  p.segments += 1 + static_cast<int>(segments.size());
  if (static_cast<int>(suffix.size()) > max_tokens) {
    suffix.resize(static_cast<size_t>(max_tokens));
    p.truncated = true;
  }
  return suffix;
}

// Typing before `from` shifts the rest of the file as a whole, so a start at a fixed distance
// from the end of the file selects the same text while the user types; it moves only when the
// cursor's line crosses a grid line.
size_t PromptAssembler::far_suffix_start(std::string_view text, size_t from) {
  const size_t from_end = (text.size() - std::min(from, text.size())) / kFarGrid * kFarGrid;
  return line_start_at_or_after(text, text.size() - from_end);
}

std::vector<int32_t> PromptAssembler::far_suffix_tokens(std::string_view text, size_t begin,
                                                        int max_tokens, Prompt& p) {
  std::vector<int32_t> far;
  if (max_tokens <= 0 || begin >= text.size()) return far;
  // An end at a fixed distance from the start selects the same text too.
  const size_t end =
      std::min(text.size(), line_start_at_or_after(text, begin + bytes_for(max_tokens)));
  std::vector<std::vector<int32_t>> segments;
  append_segments(text.substr(begin, end - begin), false, segments, &p.segments_tokenized);
  for (const auto& s : segments) {
    if (far.size() + s.size() > static_cast<size_t>(max_tokens)) {
      p.truncated = true;
      break;
    }
    far.insert(far.end(), s.begin(), s.end());
    ++p.segments;
  }
  if (end < text.size()) p.truncated = true;
  return far;
}

}  // namespace ghostline::daemon
