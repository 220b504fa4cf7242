#!/usr/bin/env python3
"""A stand-in for `ghostline serve` that knows what the person will type: it answers an inline
completion with the session's final text after the cursor, so that the replay harness's
acceptance path can be tested. By request id it answers the next 24 characters (accepted in
full), or the rest of the line followed by a wrong line (accepted as a line), or the next word
followed by a wrong tail (accepted as a word). Speaks LSP on stdio with UTF-16 positions."""
import argparse
import json
import sys


def read_message(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def send(message):
    body = json.dumps(message).encode("utf-8")
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def offset_of(text, pos):
    lines = text.split("\n")
    start = sum(len(l) + 1 for l in lines[:pos["line"]])
    line = lines[pos["line"]]
    units, i = 0, 0
    while i < len(line) and units < pos["character"]:
        units += 2 if ord(line[i]) > 0xFFFF else 1
        i += 1
    return start + i


def completion_for(session, text, cursor, request_id):
    final, start, end = session
    # Only when the document is the final text with the rest of the typed region missing.
    if not (start <= cursor <= end and text == final[:cursor] + final[end:]):
        return ""
    rest = final[cursor:end]
    kind = request_id % 3
    if kind == 0:
        return rest[:24]
    if kind == 1:
        nl = rest.find("\n")
        return rest[:nl] + "\n#wrong" if nl > 0 else ""
    i = 0
    while i < len(rest) and not (rest[i].isalnum() or rest[i] == "_"):
        i += 1
    while i < len(rest) and (rest[i].isalnum() or rest[i] == "_"):
        i += 1
    return rest[:i] + "@@" if i >= 2 else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--session", action="append", default=[])
    args = ap.parse_args()
    sessions = {}
    for path in args.session:
        with open(path, encoding="utf-8") as f:
            h = json.loads(f.readline())
        final = h["finalText"]
        # The header counts bytes; these sessions are ASCII, where bytes are characters.
        sessions[h["uri"]] = (final, h["typed"]["start"], h["typed"]["start"] + h["typed"]["bytes"])
    docs = {}
    while True:
        m = read_message(sys.stdin.buffer)
        if m is None:
            return 1
        method, params, mid = m.get("method"), m.get("params") or {}, m.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"capabilities": {"positionEncoding": "utf-16"}}})
        elif method == "textDocument/didOpen":
            docs[params["textDocument"]["uri"]] = params["textDocument"]["text"]
        elif method == "textDocument/didChange":
            uri = params["textDocument"]["uri"]
            for c in params["contentChanges"]:
                a, b = offset_of(docs[uri], c["range"]["start"]), offset_of(docs[uri], c["range"]["end"])
                docs[uri] = docs[uri][:a] + c["text"] + docs[uri][b:]
        elif method == "textDocument/didClose":
            docs.pop(params["textDocument"]["uri"], None)
        elif method == "textDocument/inlineCompletion":
            uri = params["textDocument"]["uri"]
            text = completion_for(sessions[uri], docs[uri], offset_of(docs[uri], params["position"]), mid) \
                if uri in sessions else ""
            items = [{"insertText": text, "range": {"start": params["position"], "end": params["position"]}}] \
                if text else []
            send({"jsonrpc": "2.0", "id": mid, "result": {"items": items}})
        elif method == "ghostline/stats":
            send({"jsonrpc": "2.0", "id": mid, "result": {"recent": []}})
        elif method == "ghostline/documentText":
            uri = params["textDocument"]["uri"]
            send({"jsonrpc": "2.0", "id": mid, "result": {"uri": uri, "text": docs[uri]}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": mid, "result": None})
        elif method == "exit":
            return 0
        elif mid is not None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown method"}})


if __name__ == "__main__":
    sys.exit(main())
