// Starts tools/remote-server (llama.cpp through node-llama-cpp, serving a shared small model) as
// a real server process for the remote-backend tests, and reads its /stats.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/remote/http_client.h"

extern char** environ;

namespace ghostline::test {

// A model without fill-in-the-middle tokens (the prompt is the text before the cursor, so the
// random weights continue each document differently), and one with them for /infill.
inline constexpr const char* kPrefixModel = "../shared/data/models/ref-llama-spm-q4_k_m.gguf";
inline constexpr const char* kPrefixVocabulary = "../shared/data/tokenizer/llama-spm.gguf";
inline constexpr const char* kFimModel = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf";
inline constexpr const char* kFimVocabulary = "../shared/data/tokenizer/deepseek-coder.gguf";

class TestServer {
 public:
  // Starts the server with `model` on `port` (0: any free port) and waits until it listens;
  // https with `tls_cert` (PEM, for localhost, also the CA to trust) and `tls_key` when given.
  explicit TestServer(const char* model = kPrefixModel, int port = 0, std::string tls_cert = "",
                      std::string tls_key = "")
      : tls_cert_(std::move(tls_cert)) {
    if (!std::filesystem::exists("tools/remote-server/node_modules/node-llama-cpp"))
      throw std::runtime_error(
          "the test server's packages are missing: run tools/remote-server/setup");
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> args = {"node",      "tools/remote-server/server.mjs",
                                     "--model",   model,
                                     "--port",    std::to_string(port),
                                     "--threads", "1"};
    if (!tls_cert_.empty()) {
      args.insert(args.end(), {"--tls-cert", tls_cert_, "--tls-key", tls_key});
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, "node", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      throw std::runtime_error("cannot start node: " + std::string(strerror(rc)));
    }
    FILE* f = fdopen(out[0], "r");
    char line[256];
    while (fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "listening %d", &port_) == 1) break;
    }
    fclose(f);  // the server writes nothing more to stdout
    if (port_ <= 0) {
      stop();
      throw std::runtime_error("the test server did not start (see its stderr above)");
    }
  }
  ~TestServer() { stop(); }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& behaviour = "") const {
    const std::string origin = tls_cert_.empty() ? "http://127.0.0.1:" : "https://localhost:";
    return origin + std::to_string(port_) + (behaviour.empty() ? "" : "/" + behaviour);
  }

  nlohmann::json stats() {
    if (!stats_client_) {
      daemon::remote::HttpClientOptions options;
      options.ca_file = tls_cert_;
      stats_client_ =
          std::make_unique<daemon::remote::HttpClient>(daemon::remote::Url::parse(url()), options);
    }
    std::string body;
    stats_client_->post_stream(
        "/stats", "{}", {},
        [&](std::string_view piece) {
          body += piece;
          return true;
        },
        nullptr);
    return nlohmann::json::parse(body);
  }

  // Polls stats() until `ready` holds (the server acts on a closed stream when its next token is
  // ready); gives up after a generous wait, returning the last stats.
  template <class Pred>
  nlohmann::json wait_for(Pred ready) {
    nlohmann::json s;
    for (int i = 0; i < 600; ++i) {
      s = stats();
      if (ready(s)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return s;
  }

  bool exited() {
    if (pid_ <= 0) return true;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return false;
  }

  void stop() {
    stats_client_.reset();
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  std::string tls_cert_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::unique_ptr<daemon::remote::HttpClient> stats_client_;
};

// A self-signed certificate and its key (PEM files in a fresh temporary folder) for `host`.
struct TestCertificate {
  std::string cert, key;
  explicit TestCertificate(const std::string& host) {
    char dir[] = "/tmp/ghostline-tls-XXXXXX";
    if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    cert = std::string(dir) + "/cert.pem";
    key = std::string(dir) + "/key.pem";
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + host +
        " -addext subjectAltName=DNS:" + host + " -keyout " + key + " -out " + cert +
        " 2>/dev/null";
    if (std::system(command.c_str()) != 0)
      throw std::runtime_error("openssl could not make a certificate");
  }
  ~TestCertificate() {
    std::error_code ignored;
    std::filesystem::remove_all(std::filesystem::path(cert).parent_path(), ignored);
  }
};

// A TCP port that nothing listens on (bound and released), and that nothing else will be given.
inline int free_port() {
  // Below the ephemeral range: a port bind(0) or connect() may hand to another test's server or
  // client (ctest runs tests in parallel) while this test expects nothing to listen there.
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  const int first = 10000;
  if (low <= first + 100) throw std::runtime_error("no ports below the ephemeral range");
  unsigned seed = static_cast<unsigned>(getpid()) * 2654435761u;
  for (int attempt = 0; attempt < 200; ++attempt) {
    seed = seed * 1103515245u + 12345u;
    const int port = first + static_cast<int>(seed % static_cast<unsigned>(low - first));
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (free) return port;
  }
  throw std::runtime_error("cannot find a free port");
}

}  // namespace ghostline::test
