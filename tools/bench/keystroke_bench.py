#!/usr/bin/env python3
"""The real-size typing scenario, side by side with and without the prefix cache: a big source
file is opened with the cursor in its middle, a new line is typed a few characters at a time,
and after each step `ghostline serve` is asked for an inline completion that runs to its token
limit (the deadline is raised so that every completion is whole). Prints, per keystroke,
prompt and prefilled tokens, prefill ms, decode ms per token and the time to the completion,
then the daemon's resident memory. `--first-line` instead stops each completion after as many
tokens as the rest of the typed line has, plus one for its end: the time to the first line of
a single-line completion that is right.

  tools/bench/keystroke_bench.py build/release/ghostline --model M.gguf --file F.py -t 2

Make a real-size model with `ghostline make-model` (the Qwen2.5-Coder-0.5B shape by default).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_daemon import Daemon  # noqa: E402


def daemon_rss_mib(pid):
    """The daemon's resident and peak resident memory (Linux /proc), in MiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}
    except (OSError, KeyError, ValueError):
        return None


def token_count(a, text):
    """How many tokens the model's vocabulary makes of `text` (`ghostline tokenize`)."""
    r = subprocess.run([a.binary, "tokenize", "--model", a.model], input=text.encode(), capture_output=True,
                       check=True)
    return len(r.stdout.split())


def run(a, serve_args, label):
    text = open(a.file, encoding="utf-8").read()
    lines = text.split("\n")
    line_no = len(lines) // 2
    # A new line in the middle of the file, typed `chars` characters at a time.
    indent = lines[line_no][: len(lines[line_no]) - len(lines[line_no].lstrip())]
    lines.insert(line_no, indent)
    doc = "\n".join(lines)
    d = Daemon([a.binary, "serve", "--model", a.model, "-t", str(a.threads), "--max-tokens", str(a.max_tokens),
                "--deadline-ms", str(a.deadline_ms)] + a.serve_arg + serve_args)
    d.request("initialize", {"capabilities": {"general": {"positionEncodings": ["utf-8"]}},
                             "initializationOptions": {"debounceMs": 0}})
    d.notify("initialized", {})
    uri = "file:///bench" + a.file[a.file.rfind("."):]
    for k, other in enumerate(a.other):
        d.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///other%d/%s" % (k, os.path.basename(other)), "languageId": "python", "version": 1,
            "text": open(other, encoding="utf-8").read()}})
    d.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": doc}})
    col, version, rows = len(indent.encode()), 1, []
    typed = a.typed
    steps = [typed[i:i + a.chars] for i in range(0, len(typed), a.chars)][: a.steps]
    print("\n%s (%s)" % (label, " ".join(a.serve_arg + serve_args) or "defaults"))
    print("| step | typed | prompt | other files' tokens | prefilled | prefill ms | decode ms/token | tokens | total ms |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, piece in enumerate([""] + steps):
        if piece:
            version += 1
            d.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                {"range": {"start": {"line": line_no, "character": col}, "end": {"line": line_no, "character": col}},
                 "text": piece}]})
            col += len(piece.encode())
        if a.first_line:
            rest = typed[sum(len(p) for p in steps[:i]):]
            d.notify("workspace/didChangeConfiguration",
                     {"settings": {"ghostline": {"maxTokens": token_count(a, rest) + 1 if rest else 1}}})
        t0 = time.monotonic()
        r = d.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                        "position": {"line": line_no, "character": col},
                                                        "context": {"triggerKind": 1}})
        total = (time.monotonic() - t0) * 1000
        if "result" not in r:
            raise RuntimeError("completion failed: %s" % r)
        s = d.request("ghostline/stats", None)["result"]["recent"][-1]
        # A keystroke that typed into the previous completion is answered from memory: no prompt,
        # no model run.
        memory = s.get("fromMemory", False)
        gen = s.get("generatedTokens", 0)
        per_token = s.get("decodeMs", 0) / (gen - 1) if gen > 1 else float("nan")
        rows.append({"prefilled": s.get("prefilledTokens", 0), "prefill": s.get("prefillMs", 0.0),
                     "per_token": per_token, "total": total, "tokens": gen})
        print("| %d | %s | %s | %d | %d | %.0f | %.1f | %d | %.0f |" % (
            i, json.dumps(piece), "from memory" if memory else str(s["promptTokens"]),
            s.get("otherFilesTokens", 0), rows[-1]["prefilled"], rows[-1]["prefill"], per_token, gen, total))
        sys.stdout.flush()
    rss = daemon_rss_mib(d.p.pid)
    d.request("shutdown", None)
    d.notify("exit", None)
    d.p.wait(timeout=30)
    if rss:
        print("\ndaemon memory: RSS %.1f MiB, peak %.1f MiB; model file %.1f MiB" % (
            rss["VmRSS"], rss["VmHWM"], os.path.getsize(a.model) / 2**20))
    typing = rows[1:]  # the first request fills the cache
    if typing:
        print("\nkeystrokes %d: prefilled per keystroke mean %.1f, max %d; time to the completion mean %.0f ms, "
              "max %.0f ms; decode %.1f ms/token" % (
                  len(typing), statistics.mean(r["prefilled"] for r in typing), max(r["prefilled"] for r in typing),
                  statistics.mean(r["total"] for r in typing), max(r["total"] for r in typing),
                  statistics.mean([r["per_token"] for r in typing if r["per_token"] == r["per_token"]]
                                  or [float("nan")])))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--file", required=True, help="a big source file; the cursor goes to its middle")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--typed", default="result = self.compute(value, limit=10)", help="the text typed")
    ap.add_argument("--chars", type=int, default=3, help="characters per step (default 3)")
    ap.add_argument("--steps", type=int, default=8, help="steps (default 8)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--first-line", action="store_true",
                    help="stop each completion after the tokens of the rest of the typed line and one for its end")
    ap.add_argument("--deadline-ms", type=int, default=600000, help="raised so that completions run to the limit")
    ap.add_argument("--no-baseline", action="store_true", help="skip the run without the prefix cache")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for `ghostline serve` (repeatable), e.g. --serve-arg=--backend "
                         "--serve-arg=cuda --serve-arg=--draft --serve-arg=D.gguf")
    ap.add_argument("--other", action="append", default=[],
                    help="another file opened first (repeatable): its definitions may be given as context")
    a = ap.parse_args()
    run(a, [], "with the prefix cache")
    if not a.no_baseline:
        run(a, ["--no-prefix-cache"], "without the prefix cache")


if __name__ == "__main__":
    main()
