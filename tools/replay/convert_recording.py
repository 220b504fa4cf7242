#!/usr/bin/env python3
"""Converts a `ghostline serve --record FILE` recording into a session file for `ghostline replay`
(tools/replay/FORMAT.md).

The recording holds every message the editor sent, timestamped. The converter takes one client
session and one document (by default the first document that got inline-completion requests),
keeps its didChange edits and completion requests with their timing, and adds:
  - the header: initial text, language, the other documents open at that moment, the position
    encoding the client negotiated, and the final text after all edits;
  - `expect` on each request: the text the person inserted at the cursor next (contiguous
    typing), so that replay can tell whether a completion matched what they were about to type;
  - `outcome` events, guessed from the edits (a multi-character insertion at the cursor right
    after a request is taken for an accepted completion; otherwise the person typed past it).
    The recording holds only what the editor sent, not what the daemon showed, so these are a
    best guess, marked as such.

  convert_recording.py RECORDING [-o SESSION] [--session N] [--uri URI]
"""
import argparse
import json
import sys

TOOL = "ghostline-convert-recording 1"
ENCODINGS = ("utf-8", "utf-16", "utf-32")
EXPECT_CHARS = 256


def units(s, encoding):
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s)


def offset_of(text, pos, encoding):
    """Character offset in `text` of an LSP position; a character past the line's end is its end."""
    line, character = pos["line"], pos["character"]
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        if nl < 0:
            raise ValueError("line %d is past the end of the document" % line)
        start = nl + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    count = 0
    i = start
    while i < end and count < character:
        count += units(text[i], encoding)
        i += 1
    return i


def apply_change(text, change, encoding):
    """Returns (new text, character offset of the cursor after the change)."""
    if "range" not in change:
        return change["text"], len(change["text"])
    a = offset_of(text, change["range"]["start"], encoding)
    b = offset_of(text, change["range"]["end"], encoding)
    return text[:a] + change["text"] + text[b:], a + len(change["text"])


def negotiated_encoding(initialize_params):
    caps = (initialize_params or {}).get("capabilities") or {}
    for e in ((caps.get("general") or {}).get("positionEncodings") or []):
        if e in ENCODINGS:
            return e
    return "utf-16"


def convert(lines, session_id=None, uri=None):
    records = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if "message" in r and isinstance(r["message"], dict):
            records.append(r)
    if session_id is None:
        for r in records:
            if r["message"].get("method") == "textDocument/inlineCompletion":
                session_id = r["session"]
                uri = uri or r["message"]["params"]["textDocument"]["uri"]
                break
        else:
            raise SystemExit("the recording has no inline-completion request")
    records = [r for r in records if r["session"] == session_id]
    if uri is None:
        for r in records:
            if r["message"].get("method") == "textDocument/inlineCompletion":
                uri = r["message"]["params"]["textDocument"]["uri"]
                break
        else:
            raise SystemExit("session %s has no inline-completion request" % session_id)

    encoding = "utf-16"
    open_docs = {}  # uri -> (languageId, text)
    header = None
    t0 = None
    text = None
    events = []
    for r in records:
        m = r["message"]
        method = m.get("method")
        params = m.get("params") or {}
        if method == "initialize":
            encoding = negotiated_encoding(params)
        elif method == "textDocument/didOpen":
            d = params["textDocument"]
            if d["uri"] == uri and header is None:
                others = [{"uri": u, "languageId": lang, "text": t} for u, (lang, t) in open_docs.items() if u != uri]
                header = {"type": "header", "format": "ghostline-session", "version": 1, "tool": TOOL,
                          "language": d["languageId"], "uri": uri, "positionEncoding": encoding,
                          "text": d["text"], "openFiles": others, "accepts": ["full", "line", "word"],
                          "source": {"recording": True, "session": session_id}}
                t0 = r["t_ms"]
                text = d["text"]
            else:
                open_docs[d["uri"]] = (d["languageId"], d["text"])
        elif method == "textDocument/didChange" and header is not None and params["textDocument"]["uri"] == uri:
            cursor = None
            for change in params["contentChanges"]:
                text, cursor = apply_change(text, change, encoding)
            events.append({"t": round(r["t_ms"] - t0, 1), "type": "edit", "changes": params["contentChanges"],
                           "_cursor": cursor, "_changes": params["contentChanges"]})
        elif method == "textDocument/inlineCompletion" and header is not None and params["textDocument"]["uri"] == uri:
            ctx = params.get("context") or {}
            events.append({"t": round(r["t_ms"] - t0, 1), "type": "complete",
                           "trigger": "invoked" if ctx.get("triggerKind") == 1 else "automatic",
                           "position": params["position"], "_text": text})
        elif method == "textDocument/didClose" and params["textDocument"]["uri"] == uri and header is not None:
            break
    if header is None:
        raise SystemExit("%s was never opened in session %s" % (uri, session_id))
    header["finalText"] = text

    # What the person typed next after each request, and what they did with the completion.
    out = []
    for i, ev in enumerate(events):
        if ev["type"] == "complete":
            doc = ev.pop("_text")
            cursor = offset_of(doc, ev["position"], encoding)
            typed, first = "", None
            for nxt in events[i + 1:]:
                if nxt["type"] != "edit":
                    continue
                ch = nxt["_changes"]
                if len(ch) != 1 or "range" not in ch[0] or ch[0]["range"]["start"] != ch[0]["range"]["end"]:
                    break
                at = offset_of(doc, ch[0]["range"]["start"], encoding)
                if at != cursor + len(typed):
                    break
                if first is None:
                    first = ch[0]["text"]
                typed += ch[0]["text"]
                doc = doc[:at] + ch[0]["text"] + doc[at:]
                if len(typed) >= EXPECT_CHARS:
                    break
            if typed:
                ev["expect"] = typed[:EXPECT_CHARS]
            out.append(ev)
            if first is not None and len(first) > 1 and not first.isspace():
                out.append({"t": ev["t"], "type": "outcome", "action": "accepted", "text": first, "guessed": True})
            elif first is not None:
                out.append({"t": ev["t"], "type": "outcome", "action": "typed-past", "guessed": True})
        else:
            ev.pop("_cursor")
            ev.pop("_changes")
            out.append(ev)
    # Outcome events share their request's time; keep times non-decreasing.
    header["keystrokes"] = sum(1 for e in out if e["type"] == "edit")
    header["durationMs"] = out[-1]["t"] if out else 0
    return header, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recording", help="file written by ghostline serve --record")
    ap.add_argument("-o", "--output", help="session file to write (default: stdout)")
    ap.add_argument("--session", type=int, help="client session id in the recording (default: the first "
                                                "with an inline-completion request)")
    ap.add_argument("--uri", help="document to take (default: the first with an inline-completion request)")
    args = ap.parse_args(argv)
    with open(args.recording, encoding="utf-8") as f:
        header, events = convert(f.readlines(), args.session, args.uri)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    for ev in events:
        out.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n")
    if args.output:
        out.close()
        print("%s: %d edits, %d requests, %.1f s" % (args.output, header["keystrokes"],
                                                    sum(1 for e in events if e["type"] == "complete"),
                                                    header["durationMs"] / 1000), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
