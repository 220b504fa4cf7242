#include "daemon/replay/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace ghostline::daemon {
namespace {

using nlohmann::json;

// Pipeline stages as the daemon reports them in ghostline/stats, in pipeline order.
struct Stage {
  const char* key;
  const char* label;
};
constexpr Stage kStages[] = {
    {"queueMs", "queue (debounce + wait)"},
    {"promptMs", "prompt assembly"},
    {"prefillMs", "prefill"},
    {"decodeMs", "decode"},
    {"completeMs", "in the completer"},
    {"totalMs", "engine total"},
};

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string ms_text(std::optional<double> v) {
  return v ? fmt("%.1f", *v) : "-";
}

struct Summary {
  int keystrokes = 0, requests = 0, answered = 0, with_text = 0, superseded = 0, invalidated = 0,
      cancelled_by_client = 0, dropped = 0, failed = 0, unanswered = 0, stale = 0;
  int shown = 0, would_accept = 0, accepted_full = 0, accepted_line = 0, accepted_word = 0,
      saved = 0;
  std::vector<double> latencies;
  std::map<std::string, std::vector<double>> stages;
  double prompt_tokens = 0, matched_tokens = 0, prefilled_tokens = 0, generated_tokens = 0;
  int matched_stats = 0;
  int prompts_cut = 0;  // answers whose prompt lost context to the deadline (prefillBound)
  double draft_tokens = 0, accepted_draft_tokens = 0;
  bool has_speculation = false;
};

Summary summarize(const ReplayReport& report, int session) {
  Summary s;
  for (size_t k = 0; k < report.sessions.size(); ++k) {
    if (session >= 0 && static_cast<int>(k) != session) continue;
    const auto& sr = report.sessions[k];
    s.keystrokes += sr.keystrokes;
    s.stale += sr.stale_answers;
    s.shown += sr.shown;
    s.would_accept += sr.would_accept;
    s.accepted_full += sr.accepted_full;
    s.accepted_line += sr.accepted_line;
    s.accepted_word += sr.accepted_word;
    s.saved += sr.keystrokes_saved;
  }
  for (const auto& r : report.requests) {
    if (session >= 0 && r.session != session) continue;
    ++s.requests;
    switch (r.result) {
      case RequestResult::Pending:
        ++s.unanswered;
        break;
      case RequestResult::Answered:
        ++s.answered;
        if (!r.insert_text.empty()) ++s.with_text;
        s.latencies.push_back(r.latency_ms);
        break;
      case RequestResult::Superseded:
        ++s.superseded;
        break;
      case RequestResult::Invalidated:
        ++s.invalidated;
        break;
      case RequestResult::CancelledByClient:
        ++s.cancelled_by_client;
        break;
      case RequestResult::Dropped:
        ++s.dropped;
        break;
      case RequestResult::Failed:
        ++s.failed;
        break;
    }
    if (!r.stats.is_object() || r.stats.empty()) continue;
    ++s.matched_stats;
    for (const auto& st : kStages)
      if (auto it = r.stats.find(st.key); it != r.stats.end() && it->is_number())
        s.stages[st.key].push_back(it->get<double>());
    s.prompt_tokens += r.stats.value("promptTokens", 0.0);
    s.matched_tokens += r.stats.value("matchedTokens", 0.0);
    s.prefilled_tokens += r.stats.value("prefilledTokens", 0.0);
    s.generated_tokens += r.stats.value("generatedTokens", 0.0);
    if (r.stats.contains("prefillBound")) ++s.prompts_cut;
    if (r.stats.contains("draftTokens") && r.stats.contains("acceptedDraftTokens")) {
      s.has_speculation = true;
      s.draft_tokens += r.stats.value("draftTokens", 0.0);
      s.accepted_draft_tokens += r.stats.value("acceptedDraftTokens", 0.0);
    }
  }
  return s;
}

json optional_json(std::optional<double> v) {
  return v ? json(*v) : json(nullptr);
}

json summary_json(const Summary& s) {
  json stages = json::object();
  for (const auto& st : kStages) {
    auto it = s.stages.find(st.key);
    if (it == s.stages.end() || it->second.empty()) continue;
    double sum = 0;
    for (double v : it->second) sum += v;
    stages[st.key] = {{"mean", sum / it->second.size()},
                      {"p50", optional_json(percentile(it->second, 50))},
                      {"p90", optional_json(percentile(it->second, 90))}};
  }
  json accepted = {{"full", s.accepted_full}, {"line", s.accepted_line}, {"word", s.accepted_word}};
  return {
      {"keystrokes", s.keystrokes},
      {"requests", s.requests},
      {"answered", s.answered},
      {"answeredWithText", s.with_text},
      {"superseded", s.superseded},
      {"invalidatedByEdit", s.invalidated},
      {"cancelledByClient", s.cancelled_by_client},
      {"dropped", s.dropped},
      {"failed", s.failed},
      {"unanswered", s.unanswered},
      {"staleAnswers", s.stale},
      {"latencyMs",
       {{"p50", optional_json(percentile(s.latencies, 50))},
        {"p90", optional_json(percentile(s.latencies, 90))},
        {"p99", optional_json(percentile(s.latencies, 99))},
        {"max", optional_json(percentile(s.latencies, 100))}}},
      {"stagesMs", stages},
      {"statsMatched", s.matched_stats},
      {"promptsCutByDeadline", s.prompts_cut},
      {"prefilledTokensPerKeystroke",
       s.keystrokes ? json(s.prefilled_tokens / s.keystrokes) : json(nullptr)},
      {"cacheHitRate",
       s.prompt_tokens > 0 ? json(s.matched_tokens / s.prompt_tokens) : json(nullptr)},
      {"generatedTokensPerAnswer",
       s.matched_stats ? json(s.generated_tokens / s.matched_stats) : json(nullptr)},
      {"speculativeAcceptance", s.has_speculation && s.draft_tokens > 0
                                    ? json(s.accepted_draft_tokens / s.draft_tokens)
                                    : json("n/a")},
      {"shown", s.shown},
      {"wouldAccept", s.would_accept},
      {"wouldAcceptShare",
       s.shown ? json(static_cast<double>(s.would_accept) / s.shown) : json(nullptr)},
      {"accepted", accepted},
      {"keystrokesSaved", s.saved},
  };
}

std::string pct(double num, double den) {
  return den > 0 ? fmt("%.1f%%", 100.0 * num / den) : "-";
}

// "Nice" axis ticks covering [0, hi].
std::vector<double> ticks(double hi) {
  if (hi <= 0) hi = 1;
  double raw = hi / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / mag < 1.5   ? mag
                : raw / mag < 3.5 ? 2 * mag
                : raw / mag < 7.5 ? 5 * mag
                                  : 10 * mag;
  std::vector<double> t;
  for (double v = 0; v <= hi * 1.0001; v += step) t.push_back(v);
  return t;
}

std::string num(double v) {
  if (std::fabs(v) >= 100 || v == std::floor(v)) return fmt("%.0f", v);
  return fmt("%.2g", v);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string_view to_string(RequestResult r) {
  switch (r) {
    case RequestResult::Pending:
      return "unanswered";
    case RequestResult::Answered:
      return "answered";
    case RequestResult::Superseded:
      return "superseded";
    case RequestResult::Invalidated:
      return "invalidated-by-edit";
    case RequestResult::CancelledByClient:
      return "cancelled-by-client";
    case RequestResult::Dropped:
      return "dropped";
    case RequestResult::Failed:
      return "failed";
  }
  return "?";
}

std::optional<double> percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * values.size()));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

json to_json(const ReplayReport& report) {
  json sessions = json::array(), problems = json::array();
  for (size_t k = 0; k < report.sessions.size(); ++k) {
    const auto& sr = report.sessions[k];
    Summary s = summarize(report, static_cast<int>(k));
    sessions.push_back({{"name", sr.name},
                        {"wallMs", sr.wall_ms},
                        {"textMatches", sr.text_matches},
                        {"textProblem", sr.text_problem},
                        {"daemonErrors", sr.daemon_errors},
                        {"daemonWarnings", sr.daemon_warnings},
                        {"summary", summary_json(s)}});
    auto problem = [&](const std::string& what) { problems.push_back(sr.name + ": " + what); };
    if (s.unanswered) problem(std::to_string(s.unanswered) + " requests got no answer");
    if (s.failed) problem(std::to_string(s.failed) + " requests failed");
    if (sr.stale_answers)
      problem(std::to_string(sr.stale_answers) +
              " answers came after an answer to a newer request");
    if (!sr.text_checked)
      problem("the daemon's document text was not checked");
    else if (!sr.text_matches)
      problem(sr.text_problem);
    for (const auto& e : sr.daemon_errors) problem("daemon error: " + e);
  }
  json requests = json::array();
  for (const auto& r : report.requests) {
    json j = {{"session", r.session},
              {"event", r.event},
              {"sentMs", r.sent_ms},
              {"result", to_string(r.result)},
              {"latencyMs", r.latency_ms >= 0 ? json(r.latency_ms) : json(nullptr)},
              {"current", r.current}};
    if (!r.insert_text.empty())
      j[r.result == RequestResult::Failed ? "error" : "insertText"] = r.insert_text;
    if (r.stats.is_object() && !r.stats.empty()) j["stats"] = r.stats;
    requests.push_back(std::move(j));
  }
  return {{"settings", report.settings},
          {"summary", summary_json(summarize(report, -1))},
          {"sessions", sessions},
          {"problems", problems},
          {"requests", requests}};
}

std::string format_table(const ReplayReport& report) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line,
                "%-22s %5s %5s %6s %6s %6s %5s %7s %7s %7s %7s %9s %6s %7s %5s\n", "session",
                "keys", "reqs", "answer", "supers", "edited", "other", "p50 ms", "p90 ms", "p99 ms",
                "max ms", "prefill/k", "cache", "accept", "text");
  out << line;
  auto row = [&](const std::string& name, const Summary& s, const char* text) {
    auto p = [&](double q) { return ms_text(percentile(s.latencies, q)); };
    std::snprintf(
        line, sizeof line, "%-22s %5d %5d %6d %6d %6d %5d %7s %7s %7s %7s %9s %6s %7s %5s\n",
        name.substr(0, 22).c_str(), s.keystrokes, s.requests, s.answered, s.superseded,
        s.invalidated, s.cancelled_by_client + s.dropped + s.failed + s.unanswered, p(50).c_str(),
        p(90).c_str(), p(99).c_str(), p(100).c_str(),
        s.keystrokes ? fmt("%.1f", s.prefilled_tokens / s.keystrokes).c_str() : "-",
        pct(s.matched_tokens, s.prompt_tokens).c_str(), pct(s.would_accept, s.shown).c_str(), text);
    out << line;
  };
  for (size_t k = 0; k < report.sessions.size(); ++k) {
    const auto& sr = report.sessions[k];
    row(sr.name, summarize(report, static_cast<int>(k)),
        !sr.text_checked  ? "-"
        : sr.text_matches ? "ok"
                          : "DIFF");
  }
  Summary all = summarize(report, -1);
  bool all_ok =
      std::all_of(report.sessions.begin(), report.sessions.end(),
                  [](const SessionReport& s) { return s.text_checked && s.text_matches; });
  row("all", all, all_ok ? "ok" : "DIFF");

  out << "\nlatency: keystroke to the inline-completion reply for it (answered requests only)\n";
  out << "cache: matched / prompt tokens; prefill/k: tokens prefilled per keystroke\n";
  out << "accept: share of shown completions that what the person typed next starts with\n";
  out << "\npipeline stage (ms, " << all.matched_stats
      << " answers matched)     mean      p50      p90\n";
  for (const auto& st : kStages) {
    auto it = all.stages.find(st.key);
    if (it == all.stages.end() || it->second.empty()) continue;
    double sum = 0;
    for (double v : it->second) sum += v;
    std::snprintf(line, sizeof line, "  %-36s %8.1f %8s %8s\n", st.label, sum / it->second.size(),
                  ms_text(percentile(it->second, 50)).c_str(),
                  ms_text(percentile(it->second, 90)).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line,
                "\nrequests %d: answered %d (%d with text), superseded %d, invalidated by an edit "
                "%d, cancelled "
                "by the client %d, failed %d, unanswered %d; stale answers %d\n",
                all.requests, all.answered, all.with_text, all.superseded, all.invalidated,
                all.cancelled_by_client, all.failed, all.unanswered, all.stale);
  out << line;
  std::snprintf(
      line, sizeof line,
      "shown %d, would accept %d (%s); accepted: full %d, line %d, word %d; keystrokes saved %d\n",
      all.shown, all.would_accept, pct(all.would_accept, all.shown).c_str(), all.accepted_full,
      all.accepted_line, all.accepted_word, all.saved);
  out << line;
  std::snprintf(line, sizeof line, "prompts cut to fit the deadline: %d of %d answers\n",
                all.prompts_cut, all.matched_stats);
  out << line;
  if (auto sched = report.settings.find("daemonScheduler");
      sched != report.settings.end() && sched->is_object() && sched->contains("stoppedRuns")) {
    auto n = [&](const char* key) { return sched->value(key, 0); };
    std::snprintf(
        line, sizeof line,
        "daemon: %d runs stopped by cancellation, %d model steps finished after the cancel "
        "(at most %d in one run); answered from memory %d; kept while typed through %d; "
        "prefetch started %d, finished %d, preempted %d; context cut by the deadline filled in "
        "idle time: started %d, finished %d, preempted %d\n",
        n("stoppedRuns"), n("stepsAfterCancel"), n("maxStepsAfterCancel"), n("answeredFromMemory"),
        n("keptRunning"), n("prefetchStarted"), n("prefetchFinished"), n("prefetchPreempted"),
        n("contextStarted"), n("contextFinished"), n("contextPreempted"));
    out << line;
  }
  out << "speculative acceptance: "
      << (all.has_speculation && all.draft_tokens > 0
              ? pct(all.accepted_draft_tokens, all.draft_tokens)
              : "n/a")
      << "\n";
  json problems = to_json(report)["problems"];
  if (!problems.empty()) {
    out << "\nproblems:\n";
    for (const auto& p : problems) out << "  " << p.get<std::string>() << "\n";
  }
  return out.str();
}

std::string render_svg(const ReplayReport& report) {
  std::vector<std::pair<double, double>> points;  // (time s, latency ms)
  std::vector<double> lat;
  double t_max = 1;
  for (const auto& r : report.requests) {
    if (r.result != RequestResult::Answered) continue;
    points.push_back({r.sent_ms / 1000.0, r.latency_ms});
    lat.push_back(r.latency_ms);
    t_max = std::max(t_max, r.sent_ms / 1000.0);
  }
  double y_max = std::max(1.0, percentile(lat, 100).value_or(1.0));
  auto yt = ticks(y_max);
  y_max = yt.back() < y_max ? y_max : yt.back();
  auto xt = ticks(t_max);
  t_max = std::max(t_max, xt.back());

  const double W = 1000, H = 420, top = 40, bottom = 360, l1 = 70, r1 = 560, l2 = 640, r2 = 970;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
       "fill=\"white\"/>\n";
  Summary all = summarize(report, -1);
  s << "<text x=\"" << l1
    << "\" y=\"20\" font-size=\"13\">ghostline replay: " << report.sessions.size() << " sessions, "
    << all.answered << " answers; latency p50 " << ms_text(percentile(lat, 50)) << " ms, p90 "
    << ms_text(percentile(lat, 90)) << " ms, p99 " << ms_text(percentile(lat, 99)) << " ms; speed "
    << xml_escape(report.settings.is_object() ? report.settings.value("speed", json("?")).dump()
                                              : "?")
    << "</text>\n";
  auto axis = [&](double l, double r, const std::vector<double>& xs, double x_hi,
                  const std::vector<double>& ys, double y_hi, bool y_fraction, const char* x_label,
                  const char* y_label) {
    s << "<line x1=\"" << l << "\" y1=\"" << bottom << "\" x2=\"" << r << "\" y2=\"" << bottom
      << "\" stroke=\"black\"/>\n";
    s << "<line x1=\"" << l << "\" y1=\"" << top << "\" x2=\"" << l << "\" y2=\"" << bottom
      << "\" stroke=\"black\"/>\n";
    for (double x : xs) {
      double px = l + (r - l) * x / x_hi;
      s << "<line x1=\"" << px << "\" y1=\"" << bottom << "\" x2=\"" << px << "\" y2=\""
        << bottom + 4 << "\" stroke=\"black\"/><text x=\"" << px << "\" y=\"" << bottom + 16
        << "\" text-anchor=\"middle\">" << num(x) << "</text>\n";
    }
    for (double y : ys) {
      double py = bottom - (bottom - top) * y / y_hi;
      s << "<line x1=\"" << l << "\" y1=\"" << py << "\" x2=\"" << r << "\" y2=\"" << py
        << "\" stroke=\"#ddd\"/><text x=\"" << l - 6 << "\" y=\"" << py + 4
        << "\" text-anchor=\"end\">" << (y_fraction ? num(y * 100) + "%" : num(y)) << "</text>\n";
    }
    s << "<text x=\"" << (l + r) / 2 << "\" y=\"" << bottom + 34 << "\" text-anchor=\"middle\">"
      << x_label << "</text>\n";
    s << "<text transform=\"translate(" << l - 48 << "," << (top + bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << y_label << "</text>\n";
  };
  axis(l1, r1, xt, t_max, yt, y_max, false, "replay time (s)", "keystroke to reply (ms)");
  // Session boundaries.
  for (size_t k = 1; k < report.sessions.size(); ++k) {
    auto first =
        std::find_if(report.requests.begin(), report.requests.end(),
                     [&](const RequestRecord& r) { return r.session == static_cast<int>(k); });
    if (first == report.requests.end()) continue;
    double px = l1 + (r1 - l1) * first->sent_ms / 1000.0 / t_max;
    s << "<line x1=\"" << px << "\" y1=\"" << top << "\" x2=\"" << px << "\" y2=\"" << bottom
      << "\" stroke=\"#bbb\" stroke-dasharray=\"3,3\"/>\n";
  }
  s << "<g fill=\"#1f77b4\" fill-opacity=\"0.5\">\n";
  for (auto [t, l] : points)
    s << "<circle cx=\"" << fmt("%.1f", l1 + (r1 - l1) * t / t_max) << "\" cy=\""
      << fmt("%.1f", bottom - (bottom - top) * l / y_max) << "\" r=\"1.6\"/>\n";
  s << "</g>\n";

  axis(l2, r2, yt, y_max, ticks(1.0), 1.0, true, "keystroke to reply (ms)", "share of answers");
  std::sort(lat.begin(), lat.end());
  if (!lat.empty()) {
    s << "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" points=\"";
    s << l2 << "," << bottom << " ";
    for (size_t k = 0; k < lat.size(); ++k) {
      double px = l2 + (r2 - l2) * lat[k] / y_max;
      s << fmt("%.1f", px) << "," << fmt("%.1f", bottom - (bottom - top) * (double)k / lat.size())
        << " " << fmt("%.1f", px) << ","
        << fmt("%.1f", bottom - (bottom - top) * (double)(k + 1) / lat.size()) << " ";
    }
    s << "\"/>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace ghostline::daemon
