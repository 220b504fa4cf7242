#include "lsp/json_rpc.h"

#include <nlohmann/json.hpp>

namespace ghostline::lsp {
namespace {

Envelope invalid_envelope(nlohmann::json id, std::string problem) {
  Envelope e;
  e.id = std::move(id);
  e.problem = std::move(problem);
  return e;
}

}  // namespace

Envelope read_envelope(const nlohmann::json& message, bool accept_responses) {
  if (message.is_array())
    return invalid_envelope(nullptr, "JSON-RPC batches are not supported by LSP");
  if (!message.is_object()) return invalid_envelope(nullptr, "a message must be a JSON object");
  auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  const bool id_ok = has_id && (id_it->is_string() || id_it->is_number_integer());
  auto method_it = message.find("method");
  if (method_it == message.end()) {
    if (accept_responses && (message.contains("result") || message.contains("error"))) {
      Envelope e;
      e.kind = Envelope::Kind::Response;
      if (id_ok) e.id = *id_it;
      return e;
    }
    return invalid_envelope(
        id_ok ? *id_it : nlohmann::json(),
        has_id ? "message has an id but neither a method nor a result or an error"
               : "message has no method");
  }
  if (has_id && !id_ok) return invalid_envelope(nullptr, "id must be an integer or a string");
  const nlohmann::json id = has_id ? *id_it : nlohmann::json();
  auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0")
    return invalid_envelope(id, "'jsonrpc' must be \"2.0\"");
  if (!method_it->is_string()) return invalid_envelope(id, "method must be a string");
  const std::string& method = method_it->get_ref<const std::string&>();
  auto params_it = message.find("params");
  // JSON-RPC allows only structured params; null is taken as none, as many clients send it.
  if (params_it != message.end() && !params_it->is_object() && !params_it->is_array() &&
      !params_it->is_null())
    return invalid_envelope(id, "params of '" + method + "' must be an object or an array");
  static const nlohmann::json kNoParams = nlohmann::json::object();
  Envelope e;
  e.kind = has_id ? Envelope::Kind::Request : Envelope::Kind::Notification;
  e.id = id;
  e.method = method;
  e.params = params_it == message.end() || params_it->is_null() ? &kNoParams : &*params_it;
  return e;
}

nlohmann::json make_response(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json make_error(const nlohmann::json& id, ErrorCode code, std::string_view message) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", static_cast<int>(code)}, {"message", message}}}};
}

nlohmann::json make_notification(std::string_view method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

nlohmann::json make_request(const nlohmann::json& id, std::string_view method,
                            nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace ghostline::lsp
