#include "daemon/cli/arg_parser.h"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace ghostline::daemon {
namespace {

void split_names(const std::string& names, std::string& short_name, std::string& long_name) {
  auto comma = names.find(',');
  if (comma == std::string::npos) {
    (names.rfind("--", 0) == 0 ? long_name : short_name) = names;
  } else {
    short_name = names.substr(0, comma);
    long_name = names.substr(comma + 1);
  }
}

template <typename T>
bool parse_number(std::string_view text, T* out) {
  if constexpr (std::is_same_v<T, double>) {
    try {
      size_t used = 0;
      double v = std::stod(std::string(text), &used);
      if (used != text.size()) return false;
      *out = v;
      return true;
    } catch (...) {
      return false;
    }
  } else {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return ec == std::errc() && p == text.data() + text.size();
  }
}

}  // namespace

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {
  options_.push_back({"-h", "--help", "", "show this help and exit", nullptr, false, ""});
}

void ArgParser::flag(std::string names, std::string help, bool* out) {
  Option o{"", "", "", std::move(help), [out](std::string_view) { return *out = true; }, false, ""};
  split_names(names, o.short_name, o.long_name);
  options_.push_back(std::move(o));
}

void ArgParser::add_option(std::string names, std::string metavar, std::string help,
                           std::function<bool(std::string_view)> set, std::string default_text) {
  Option o{
      "", "", std::move(metavar), std::move(help), std::move(set), true, std::move(default_text)};
  split_names(names, o.short_name, o.long_name);
  options_.push_back(std::move(o));
}

void ArgParser::option(std::string names, std::string metavar, std::string help, std::string* out) {
  add_option(std::move(names), std::move(metavar), std::move(help),
             [out](std::string_view v) {
               *out = std::string(v);
               return true;
             },
             *out);
}

void ArgParser::option(std::string names, std::string metavar, std::string help, int* out) {
  add_option(std::move(names), std::move(metavar), std::move(help),
             [out](std::string_view v) { return parse_number(v, out); }, std::to_string(*out));
}

void ArgParser::option(std::string names, std::string metavar, std::string help, double* out) {
  std::ostringstream def;
  def << *out;
  add_option(std::move(names), std::move(metavar), std::move(help),
             [out](std::string_view v) { return parse_number(v, out); }, def.str());
}

void ArgParser::positional(std::string name, std::string help, std::string* out, bool required) {
  positionals_.push_back({std::move(name), std::move(help), out, required});
}

void ArgParser::rest(std::string name, std::string help, std::vector<std::string>* out) {
  rest_ = out;
  rest_name_ = std::move(name);
  rest_help_ = std::move(help);
}

const ArgParser::Option* ArgParser::find(std::string_view name) const {
  for (const auto& o : options_)
    if (name == o.long_name || (!o.short_name.empty() && name == o.short_name)) return &o;
  return nullptr;
}

std::optional<int> ArgParser::parse(std::span<char* const> args) {
  auto usage_error = [&](const std::string& msg) {
    std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", command_.c_str(), msg.c_str(),
                 command_.c_str());
    return 2;
  };
  size_t next_positional = 0;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (!only_positionals && arg == "--") {
      only_positionals = true;
      if (rest_) {  // everything after `--` belongs to the trailing list
        for (++i; i < args.size(); ++i) rest_->emplace_back(args[i]);
        break;
      }
      continue;
    }
    if (!only_positionals && arg.size() > 1 && arg[0] == '-') {
      std::string_view name = arg, value;
      bool inline_value = false;
      if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
      if (name == "-h" || name == "--help") {
        std::fputs(help().c_str(), stdout);
        return 0;
      }
      const Option* o = find(name);
      if (!o) return usage_error("unknown option '" + std::string(name) + "'");
      if (o->takes_value) {
        if (!inline_value) {
          if (i + 1 >= args.size())
            return usage_error("option '" + std::string(name) + "' needs a value");
          value = args[++i];
        }
        try {
          if (!o->set(value))
            return usage_error("invalid value '" + std::string(value) + "' for " +
                               std::string(name));
        } catch (const std::invalid_argument& e) {  // a setter that can say why
          return usage_error(e.what());
        }
      } else {
        if (inline_value) return usage_error("option '" + std::string(name) + "' takes no value");
        o->set({});
      }
      continue;
    }
    if (next_positional < positionals_.size()) {
      *positionals_[next_positional++].out = std::string(arg);
    } else if (rest_) {
      rest_->emplace_back(arg);
    } else {
      return usage_error("unexpected argument '" + std::string(arg) + "'");
    }
  }
  for (size_t i = next_positional; i < positionals_.size(); ++i)
    if (positionals_[i].required) return usage_error("missing " + positionals_[i].name);
  return std::nullopt;
}

std::string ArgParser::help() const {
  std::ostringstream out;
  out << "Usage: " << command_ << " [OPTIONS]";
  for (const auto& p : positionals_)
    out << (p.required ? " " : " [") << p.name << (p.required ? "" : "]");
  if (rest_) out << " [" << rest_name_ << "...]";
  out << "\n\n" << summary_ << "\n";
  if (!positionals_.empty() || rest_) {
    out << "\nArguments:\n";
    for (const auto& p : positionals_) out << "  " << p.name << "\n      " << p.help << "\n";
    if (rest_) out << "  " << rest_name_ << "...\n      " << rest_help_ << "\n";
  }
  out << "\nOptions:\n";
  for (const auto& o : options_) {
    out << "  ";
    if (!o.short_name.empty()) out << o.short_name << (o.long_name.empty() ? "" : ", ");
    out << o.long_name;
    if (o.takes_value) out << " " << o.metavar;
    out << "\n      " << o.help;
    if (o.takes_value && !o.default_text.empty()) out << " (default: " << o.default_text << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace ghostline::daemon
