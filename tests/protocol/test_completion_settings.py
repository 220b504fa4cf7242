#!/usr/bin/env python3
"""The `languages` and `completion` settings, as the plugins send them (initializationOptions,
workspace/didChangeConfiguration): a language switched off gets no completion and costs no
model time; "line" never makes more than one line, "block" makes several at the end of a line
of code. The shape is decided in the daemon's context stage, so the real engine runs here (a
small shared reference model with random weights; its stats say what was decided)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import DaemonProcess, run_tests  # noqa: E402

BINARY = sys.argv[1]
MODEL = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf"


def open_doc(d, uri, language, text):
    d.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                       "text": text}})


def complete(d, uri, line, character):
    id = d.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                   "position": {"line": line, "character": character}, "context": {"triggerKind": 2}})
    r = d.response(id, timeout=60)
    assert "result" in r, r
    return [i["insertText"] for i in r["result"]["items"]]


def configure(d, settings):
    d.notify("workspace/didChangeConfiguration", {"settings": {"ghostline": settings}})


def stats(d):
    return d.response(d.request("ghostline/stats", None))["result"]


def test_a_language_switched_off_gets_no_completion_and_no_model_time():
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--debounce-ms", "0", "--no-prefetch"])
    try:
        d.initialize({"initializationOptions": {"languages": {"markdown": False, "python": True}}})
        open_doc(d, "file:///notes.md", "markdown", "# ab")
        open_doc(d, "file:///a.py", "python", "ab")
        assert complete(d, "file:///notes.md", 0, 4) == []
        assert complete(d, "file:///a.py", 0, 2) == ["<ab>v1"]
        assert stats(d)["scheduler"]["submitted"] == 1, "the markdown request never reached the scheduler"
        # A new map replaces the old one: markdown is on again, python off.
        configure(d, {"languages": {"python": False}})
        assert complete(d, "file:///notes.md", 0, 4) == ["<ab>v1"]
        assert complete(d, "file:///a.py", 0, 2) == []
        assert stats(d)["scheduler"]["submitted"] == 2
    finally:
        d.kill()


def test_wrong_values_are_reported_and_ignored():
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--debounce-ms", "0"])
    try:
        d.initialize()
        configure(d, {"completion": "paragraph"})
        m = d.expect({"method": "window/logMessage"})
        assert "'completion' must be \"auto\", \"line\" or \"block\"" in m["params"]["message"], m
        configure(d, {"languages": ["python"]})
        m = d.expect({"method": "window/logMessage"})
        assert "'languages' must be an object" in m["params"]["message"], m
        configure(d, {"languages": {"python": "no"}})
        m = d.expect({"method": "window/logMessage"})
        assert "'languages.python' must be a boolean" in m["params"]["message"], m
        open_doc(d, "file:///a.py", "python", "ab")
        assert complete(d, "file:///a.py", 0, 2) == ["<ab>v1"]
    finally:
        d.kill()


def last_decision(d):
    recent = stats(d)["recent"]
    assert recent, "no completion was made"
    return recent[-1]["decision"], recent[-1]["decisionReason"]


# The cursor at the start of a function's body: a block in auto mode; at the end of a line of
# code: one line in auto mode.
BODY = "def total(items):\n    s = 0\n    for i in items:\n        \n"
LINE = "def total(items):\n    s = 0\n    for i in items:\n        s = s + i\n    return s"


def test_line_and_block_modes_cap_the_shape_in_the_context_stage():
    d = DaemonProcess(BINARY, ["--model", MODEL, "--threads", "1", "--deadline-ms", "5000", "--max-tokens", "24",
                               "--debounce-ms", "0", "--no-prefetch"])
    try:
        d.initialize()
        open_doc(d, "file:///body.py", "python", BODY)
        open_doc(d, "file:///line.py", "python", LINE)
        complete(d, "file:///body.py", 3, 8)
        assert last_decision(d)[0] == "multi-line"
        complete(d, "file:///line.py", 3, 17)
        assert last_decision(d)[0] == "single-line"

        configure(d, {"completion": "line"})
        items = complete(d, "file:///body.py", 3, 8)
        assert last_decision(d) == ("single-line", "line mode"), stats(d)["recent"][-1]
        assert all("\n" not in text for text in items), items

        configure(d, {"completion": "block"})
        complete(d, "file:///line.py", 3, 17)
        assert last_decision(d) == ("multi-line", "block mode"), stats(d)["recent"][-1]
        complete(d, "file:///body.py", 3, 8)
        assert last_decision(d)[0] == "multi-line"

        configure(d, {"completion": "auto"})
        complete(d, "file:///line.py", 3, 17)
        assert last_decision(d)[0] == "single-line"
    finally:
        d.kill()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
