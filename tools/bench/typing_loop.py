#!/usr/bin/env python3
"""Types lines of a real source file into `ghostline serve`, one character per keystroke, asking
for an inline completion after each and waiting for the reply, and reports prefilled tokens
per keystroke and keystroke-to-reply latency. Run it twice, with and without
--no-prefix-cache, to see what the prefix cache saves.

  tools/bench/typing_loop.py build/release/ghostline FILE --lines 20 -- --model M.gguf -t 2
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_daemon import Daemon  # noqa: E402


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("file")
    ap.add_argument("--lines", type=int, default=20, help="lines to type (default 20)")
    ap.add_argument("--start-line", type=int, default=0, help="first line to retype (default: the middle)")
    argv = sys.argv[1:]
    serve_args = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.serve_args = serve_args

    text = open(a.file, encoding="utf-8").read()
    lines = text.split("\n")
    start = a.start_line or len(lines) // 2
    typed_lines = lines[start:start + a.lines]
    # The document starts without the lines to type; they are typed at their place.
    before = "\n".join(lines[:start]) + "\n"
    after = "\n" + "\n".join(lines[start + a.lines:])
    d = Daemon([a.binary, "serve"] + a.serve_args)
    d.request("initialize", {"capabilities": {"general": {"positionEncodings": ["utf-8"]}}})
    d.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    uri = "file:///bench" + a.file[a.file.rfind("."):]
    d.send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "text", "version": 1, "text": before + after}}})
    version, line_no = 1, start
    latencies, prefilled, prompt_tokens = [], [], []
    for li, content in enumerate(typed_lines):
        col = 0
        for ch in content + ("\n" if li + 1 < len(typed_lines) else ""):
            version += 1
            d.send({"jsonrpc": "2.0", "method": "textDocument/didChange",
                    "params": {"textDocument": {"uri": uri, "version": version},
                               "contentChanges": [{"range": {"start": {"line": line_no, "character": col},
                                                             "end": {"line": line_no, "character": col}}, "text": ch}]}})
            if ch == "\n":
                line_no, col = line_no + 1, 0
            else:
                col += len(ch.encode())
            t0 = time.monotonic()
            r = d.request("textDocument/inlineCompletion",
                          {"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col},
                           "context": {"triggerKind": 2}})
            latencies.append((time.monotonic() - t0) * 1000)
            assert "result" in r, r
        print("\rtyped %d/%d lines" % (li + 1, len(typed_lines)), end="", file=sys.stderr)
    print(file=sys.stderr)
    stats = d.request("ghostline/stats", None)["result"]
    d.p.kill()
    # Answers from memory (typing through a completion) ran no model: they have no prompt.
    recent = [s for s in stats["recent"] if "prefilledTokens" in s]
    prefilled = [s["prefilledTokens"] for s in recent]
    prompt_tokens = [s["promptTokens"] for s in recent]
    print("keystrokes               %d" % len(latencies))
    print("completer                %s" % stats["completer"])
    print("prompt tokens (mean)     %.1f" % statistics.mean(prompt_tokens))
    print("prefilled per keystroke  %.2f (mean of the last %d)" % (statistics.mean(prefilled), len(prefilled)))
    print("latency p50 / p90 / p99  %.1f / %.1f / %.1f ms" % (
        percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99)))
    print("latency max              %.1f ms" % max(latencies))


if __name__ == "__main__":
    main()
