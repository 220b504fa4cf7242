// A small command-line parser shared by every subcommand, so that each `--help` is generated
// from the same declarations that parse the options and stays true.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::daemon {

class ArgParser {
 public:
  // `command` is e.g. "ghostline serve"; `summary` is one line printed under the usage line.
  ArgParser(std::string command, std::string summary);

  // `names` is "--long" or "-s,--long". Flags take no value.
  void flag(std::string names, std::string help, bool* out);
  // Options take a value: "--name VALUE" or "--name=VALUE". The default is what *out holds.
  void option(std::string names, std::string metavar, std::string help, std::string* out);
  void option(std::string names, std::string metavar, std::string help, int* out);
  void option(std::string names, std::string metavar, std::string help, double* out);
  // One of a fixed set of words, e.g. an enum: `parse` stores the value and returns false for a
  // word it does not know, or throws std::invalid_argument with the reason (the usage error's
  // message); `default_text` is shown in --help.
  void option(std::string names, std::string metavar, std::string help,
              std::function<bool(std::string_view)> parse, std::string default_text) {
    add_option(std::move(names), std::move(metavar), std::move(help), std::move(parse),
               std::move(default_text));
  }
  // Positionals are filled in order; a required one missing is a usage error.
  void positional(std::string name, std::string help, std::string* out, bool required = true);
  // Collects all remaining positionals (for commands taking several files).
  void rest(std::string name, std::string help, std::vector<std::string>* out);

  // Parses args (without the program and command names). Returns nullopt when the command
  // should run, or the exit code to return now: 0 after printing --help, 2 after a usage error
  // (the message goes to stderr).
  std::optional<int> parse(std::span<char* const> args);

  std::string help() const;

 private:
  struct Option {
    std::string short_name, long_name, metavar, help;
    std::function<bool(std::string_view)> set;  // false when the value does not parse
    bool takes_value;
    std::string default_text;
  };
  struct Positional {
    std::string name, help;
    std::string* out;
    bool required;
  };
  const Option* find(std::string_view name) const;
  void add_option(std::string names, std::string metavar, std::string help,
                  std::function<bool(std::string_view)> set, std::string default_text);

  std::string command_, summary_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::string>* rest_ = nullptr;
  std::string rest_name_, rest_help_;
};

}  // namespace ghostline::daemon
