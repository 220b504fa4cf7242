// JSON-RPC 2.0 as LSP uses it: error codes, message envelopes, and the messages a server and a
// client build. Framing is the transport's (lsp/transport.h).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {

// Error codes named by JSON-RPC 2.0 and the LSP specification.
enum class ErrorCode : int {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
  ServerNotInitialized = -32002,
  UnknownErrorCode = -32001,
  RequestFailed = -32803,
  ServerCancelled = -32802,
  ContentModified = -32801,
  RequestCancelled = -32800,
};

// A message read as JSON-RPC 2.0 as LSP uses it: a request has a method and an id (an integer
// or a string), a notification a method and no id, a response an id and a result or an error.
struct Envelope {
  enum class Kind { Request, Notification, Response, Invalid };
  Kind kind = Kind::Invalid;
  // Request: its id. Response and Invalid: its id when that is an integer or a string, else
  // null; an invalid message is answered with it.
  nlohmann::json id;
  std::string method;  // Request and Notification
  // Request and Notification: an object or an array (an empty object when there are none or
  // they are null, as many clients send). Points into the message, which must outlive it.
  const nlohmann::json* params = nullptr;
  std::string problem;  // Invalid: what is wrong, for an InvalidRequest error
};

// Reads the envelope of a parsed message. A response is taken as one only when
// `accept_responses`; otherwise it is invalid like any other message without a method.
Envelope read_envelope(const nlohmann::json& message, bool accept_responses);

nlohmann::json make_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, ErrorCode code, std::string_view message);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);
nlohmann::json make_request(const nlohmann::json& id, std::string_view method,
                            nlohmann::json params);

}  // namespace ghostline::lsp
