#!/usr/bin/env python3
"""The daemon with a real model (a small shared reference model with random weights): inline
completions are answered by the engine, a keystroke reuses the KV of the previous prompt, and
without a model the daemon says so instead of completing."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import DaemonProcess, run_tests  # noqa: E402

BINARY = sys.argv[1]
MODEL = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf"


def complete(d, uri, line, character):
    id = d.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                   "position": {"line": line, "character": character}, "context": {"triggerKind": 2}})
    return d.response(id, timeout=30)


def stats_when(d, done, timeout):
    """ghostline/stats, asked until done(result) holds or `timeout` seconds pass; the last result."""
    end = time.monotonic() + timeout
    while True:
        stats = d.response(d.request("ghostline/stats", None))["result"]
        if done(stats) or time.monotonic() > end:
            return stats
        time.sleep(0.05)


def open_long_file(d):
    """Opens a Python file far longer than a prompt; returns the position at its end."""
    text = "".join(f"def f{i}(x):\n    return x * {i} + {i * 7}\n\n" for i in range(150)) + "def g(y):\n    return "
    lines = text.split("\n")
    d.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///long.py", "languageId": "python",
                                                       "version": 1, "text": text}})
    return len(lines) - 1, len(lines[-1])


def test_completes_and_reuses_kv_across_keystrokes():
    d = DaemonProcess(BINARY, ["--model", MODEL, "--threads", "2", "--deadline-ms", "5000", "--max-tokens", "8"])
    try:
        d.initialize()
        text = "def fibonacci(n):\n    if n < 2:\n        return n\n    return fib"
        d.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///f.py", "languageId": "python",
                                                           "version": 1, "text": text}})
        r = complete(d, "file:///f.py", 3, 14)
        assert "items" in r["result"], r
        for item in r["result"]["items"]:
            assert "\n" not in item["insertText"], item  # single-line position
            assert item["range"]["start"] == {"line": 3, "character": 14}, item
        # Type one character and ask again: only the tokens after the common prefix are prefilled.
        d.notify("textDocument/didChange", {"textDocument": {"uri": "file:///f.py", "version": 2},
                                            "contentChanges": [{"range": {"start": {"line": 3, "character": 14},
                                                                          "end": {"line": 3, "character": 14}},
                                                                "text": "o"}]})
        r = complete(d, "file:///f.py", 3, 15)
        assert "items" in r["result"], r
        id = d.request("ghostline/stats", None)
        stats = d.response(id)["result"]
        recent = stats["recent"]
        assert len(recent) == 2, stats
        first, second = recent
        assert first["matchedTokens"] == 0 and first["prefilledTokens"] == first["promptTokens"], first
        assert second["matchedTokens"] > 0, second
        assert second["prefilledTokens"] < second["promptTokens"] // 2, second
        assert second["generatedTokens"] <= 8, second
        assert stats["scheduler"]["completed"] == 2, stats
    finally:
        d.kill()


def test_prefill_of_a_long_uncached_prompt_is_bounded_by_the_deadline():
    # With a 1 ms deadline the prefill budget is the minimum of 64 tokens whatever the speed of
    # the machine: the prefix is cut to fit rather than the deadline missed, and stats say so.
    d = DaemonProcess(BINARY, ["--model", MODEL, "--threads", "2", "--deadline-ms", "1", "--no-prefetch"])
    try:
        d.initialize()
        r = complete(d, "file:///long.py", *open_long_file(d))
        assert "items" in r["result"], r
        # Answered at the deadline with what was ready; the work goes on, and its stats replace
        # the answer's when it ends.
        stats = stats_when(d, lambda s: "prefillBound" in s["recent"][-1], 30)["recent"][-1]
        assert "prefillBound" in stats, stats
        assert stats["prefillBound"]["droppedPromptTokens"] > 0, stats
        assert stats["prefilledTokens"] <= 64 + 16, stats
    finally:
        d.kill()


def test_context_cut_by_the_deadline_is_filled_while_idle_for_the_next_keystroke():
    # The first prompt is cut to fit a 1 ms deadline; once the daemon is idle it computes the
    # whole prompt into its cache, so that the next keystroke there finds its context cached and
    # keeps all of it under the same deadline.
    d = DaemonProcess(BINARY, ["--model", MODEL, "--threads", "2", "--deadline-ms", "1", "--no-prefetch"])
    try:
        d.initialize()
        line, col = open_long_file(d)
        assert "items" in complete(d, "file:///long.py", line, col)["result"]
        stats = stats_when(d, lambda s: s["scheduler"]["contextFinished"] >= 1, 60)
        scheduler = stats["scheduler"]
        assert scheduler["contextStarted"] == 1 and scheduler["contextFinished"] == 1, scheduler
        first = stats["recent"][-1]
        assert "prefillBound" in first, first
        # A character the first completion does not start with, so that the memory of that
        # completion does not answer the keystroke.
        typed = "q" if first.get("generatedText", "").startswith("z") else "z"
        d.notify("textDocument/didChange", {"textDocument": {"uri": "file:///long.py", "version": 2},
                                            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                                                          "end": {"line": line, "character": col}},
                                                                "text": typed}]})
        assert "items" in complete(d, "file:///long.py", line, col + 1)["result"]
        recent = stats_when(d, lambda s: len(s["recent"]) == 2 and "promptTokens" in s["recent"][-1], 30)["recent"]
        second = recent[-1]
        assert "prefillBound" not in second, second
        assert second["promptTokens"] > first["promptTokens"] + 100, (first, second)
        assert second["matchedTokens"] >= second["promptTokens"] - 8, second
    finally:
        d.kill()


def test_a_completion_past_its_deadline_is_answered_and_then_announced_when_it_grows():
    # A 1 ms deadline: the reply carries what is ready when it is due (here the first token), the
    # work goes on, and when it ends with more, ghostline/completionUpdated tells the client,
    # whose new request is answered from the finished work without the model. This reference
    # model (F16, the same top-1 on every CPU) writes a long line here.
    model = "../shared/data/models/ref-llama-spm-f16.gguf"
    d = DaemonProcess(BINARY, ["--model", model, "--threads", "2", "--deadline-ms", "1", "--max-tokens", "24",
                               "--no-prefetch"])
    try:
        r = d.initialize()
        assert r["result"]["capabilities"]["experimental"]["ghostline"]["completionUpdated"] is True, r
        text = "import os\n\ndef list_files(path):\n    result = []\n    for name in os.listdir(path):\n" \
               "        result.append("
        d.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///g.py", "languageId": "python",
                                                           "version": 1, "text": text}})
        first = complete(d, "file:///g.py", 5, 22)
        assert "items" in first["result"], first
        shown = first["result"]["items"][0]["insertText"] if first["result"]["items"] else ""
        note = d.expect({"method": "ghostline/completionUpdated"}, timeout=30)
        assert note["params"] == {"textDocument": {"uri": "file:///g.py"}, "version": 1,
                                  "position": {"line": 5, "character": 22}}, note
        again = complete(d, "file:///g.py", 5, 22)
        grown = again["result"]["items"][0]["insertText"]
        assert grown != shown and grown.startswith(shown), (shown, grown)
        stats = d.response(d.request("ghostline/stats", None))["result"]
        scheduler = stats["scheduler"]
        assert scheduler["answeredEarly"] == 1 and scheduler["updated"] == 1, scheduler
        assert scheduler["answeredFromMemory"] == 1, scheduler
        # The answer's stats are those of the whole run, marked as answered early.
        assert stats["recent"][0]["answeredEarly"] is True and stats["recent"][0]["generatedTokens"] > 1, stats
    finally:
        d.kill()


def test_without_a_model_it_says_so():
    env_dir = os.environ.get("GHOSTLINE_MODEL_DIR")
    os.environ["GHOSTLINE_MODEL_DIR"] = "/nonexistent-ghostline-models"
    try:
        d = DaemonProcess(BINARY, [])
    finally:
        if env_dir is None:
            del os.environ["GHOSTLINE_MODEL_DIR"]
        else:
            os.environ["GHOSTLINE_MODEL_DIR"] = env_dir
    try:
        d.initialize()
        m = d.expect({"method": "window/logMessage", "params": {"type": 2}})
        assert "no model" in m["params"]["message"], m
        d.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///a.py", "languageId": "python",
                                                           "version": 1, "text": "x = "}})
        r = complete(d, "file:///a.py", 0, 4)
        assert r["result"] == {"items": []}, r
    finally:
        d.kill()


def test_bad_model_file_fails_clearly():
    import subprocess
    r = subprocess.run([BINARY, "serve", "--model", "CMakeLists.txt"], capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and b"CMakeLists.txt" in r.stderr, r


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
