// LSP framing and JSON-RPC dispatch: arbitrary bytes through a transport into a Session with a
// scripted completer.
// The first byte chooses whether the session is initialized first (and in which position
// encoding) and how the rest is cut into reads; the session must answer with well-formed
// messages and never crash, whatever the bytes.
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fuzz_check.h"
#include "lsp/transport.h"
#include "lsp/session.h"

namespace {

using ghostline::lsp::CancelToken;
using ghostline::lsp::CompletionRequest;
using ghostline::lsp::CompletionResult;
using nlohmann::json;

// Answers at once with the word before the cursor, so that replies carry ranges computed
// from the document as it was.
class EchoCompleter : public ghostline::lsp::Completer {
 public:
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    CompletionResult out;
    if (cancel.cancelled()) return out;
    size_t b = r.cursor >= 8 ? r.cursor - 8 : 0;
    out.insert_text = "<" + r.text.substr(b, r.cursor - b) + ">";
    out.replace_begin = out.replace_end = r.cursor;
    return out;
  }
  std::string describe() const override { return "echo"; }
};

// Reads what the transport writes as a client would.
class CheckingSink : public ghostline::lsp::FrameSink {
 public:
  void write(std::string frame) override {
    for (auto& event : frames_.feed(frame)) {
      const auto* body = std::get_if<std::string>(&event);
      FUZZ_CHECK(body, "%s", frame.c_str());
      // The transport must serialize whatever the client sent (invalid UTF-8 is replaced, never
      // thrown).
      const json message = json::parse(*body, nullptr, false);
      FUZZ_CHECK(!message.is_discarded(), "%s", body->c_str());
      FUZZ_CHECK(message.is_object() && message.value("jsonrpc", "") == "2.0", "%s",
                 body->c_str());
      if (message.contains("error")) {
        const json& e = message["error"];
        FUZZ_CHECK(e.is_object() && e.contains("code") && e["code"].is_number_integer() &&
                       e.contains("message"),
                   "%s", body->c_str());
      }
    }
  }
  void close() override { closed = true; }
  bool closed = false;

 private:
  ghostline::lsp::FrameDecoder frames_{size_t{1} << 30};
};

// Runs the scheduler's posted callbacks on this thread, as the I/O thread would.
struct PostQueue {
  std::mutex mutex;
  std::deque<std::function<void()>> queue;
  void post(std::function<void()> f) {
    std::lock_guard lock(mutex);
    queue.push_back(std::move(f));
  }
  void drain() {
    for (;;) {
      std::function<void()> f;
      {
        std::lock_guard lock(mutex);
        if (queue.empty()) return;
        f = std::move(queue.front());
        queue.pop_front();
      }
      f();
    }
  }
};

std::string initialize_frame(int encoding) {
  static const char* names[] = {"utf-8", "utf-16", "utf-32"};
  json init = {{"jsonrpc", "2.0"},
               {"id", 0},
               {"method", "initialize"},
               {"params",
                {{"capabilities", {{"general", {{"positionEncodings", {names[encoding]}}}}}},
                 {"initializationOptions", {{"debounceMs", 0}}}}}};
  return ghostline::lsp::encode_frame(init.dump()) +
         ghostline::lsp::encode_frame(R"({"jsonrpc":"2.0","method":"initialized","params":{}})");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  EchoCompleter completer;
  PostQueue posted;
  ghostline::lsp::Scheduler scheduler(
      completer, [&](std::function<void()> f) { posted.post(std::move(f)); },
      std::chrono::milliseconds(0));
  CheckingSink sink;
  ghostline::lsp::ServerOptions options;
  options.max_message_bytes = 1 << 16;
  options.max_documents = 8;
  options.max_document_bytes = 1 << 14;
  {
    ghostline::lsp::JsonTransport transport(1, sink, options.max_message_bytes, nullptr);
    ghostline::lsp::Session session(1, transport, scheduler, completer, options);
    if (mode & 1) transport.feed(initialize_frame((mode >> 1) % 3), session);
    // Reads of 1 to 64 bytes, or all at once: framing must not depend on where reads end.
    size_t chunk = (mode >> 3) == 0 ? bytes.size() : (mode >> 3) * 2;
    for (size_t at = 0; at < bytes.size() && !session.exited(); at += chunk) {
      transport.feed(bytes.substr(at, chunk), session);
      posted.drain();
    }
    transport.disconnect(session);
    scheduler.stop();
    posted.drain();
  }
  return 0;
}
