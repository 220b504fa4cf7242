#!/usr/bin/env python3
"""Typing through a completion is answered from memory without running the completer again;
accepting a completion finds the next one prefetched. Uses the scripted completer, whose
answer "<word>vN" names the word before the cursor and the document version it was made for,
and counts its calls in ghostline/stats."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import DaemonProcess, run_tests  # noqa: E402

BINARY = sys.argv[1]
URI = "file:///t.py"


def open_doc(d, text):
    d.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                       "text": text}})


def type_at(d, version, line, character, text):
    d.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version},
                                        "contentChanges": [{"range": {"start": {"line": line, "character": character},
                                                                      "end": {"line": line, "character": character}},
                                                            "text": text}]})


def complete(d, line, character):
    id = d.request("textDocument/inlineCompletion", {"textDocument": {"uri": URI},
                   "position": {"line": line, "character": character}, "context": {"triggerKind": 2}})
    return d.response(id, timeout=30)


def stats(d):
    return d.response(d.request("ghostline/stats", None))["result"]


def items(r):
    assert "result" in r, r
    return [i["insertText"] for i in r["result"]["items"]]


def test_typing_through_is_answered_from_memory():
    d = DaemonProcess(BINARY, ["--scripted-completer", "20", "--debounce-ms", "0", "--no-prefetch"])
    try:
        d.initialize()
        open_doc(d, "abc")
        assert items(complete(d, 0, 3)) == ["<abc>v1"]
        type_at(d, 2, 0, 3, "<a")  # the user types the start of the ghost text
        r = complete(d, 0, 5)
        assert items(r) == ["bc>v1"], r  # the rest of the version-1 completion: from memory
        assert r["result"]["items"][0]["range"]["start"] == {"line": 0, "character": 5}, r
        s = stats(d)
        assert s["completerCounters"]["modelCalls"] == 1, s
        assert s["scheduler"]["answeredFromMemory"] == 1, s
        # Typing something else falls back to the completer.
        type_at(d, 3, 0, 5, "x")
        assert items(complete(d, 0, 6)) == ["<ax>v3"]
        assert stats(d)["completerCounters"]["modelCalls"] == 2
    finally:
        d.kill()


def test_accepting_a_completion_finds_the_next_one_prefetched():
    d = DaemonProcess(BINARY, ["--scripted-completer", "5", "--debounce-ms", "0"])
    try:
        d.initialize()
        open_doc(d, "abc")
        assert items(complete(d, 0, 3)) == ["<abc>v1"]
        # In idle time the daemon completes the state after accepting "<abc>v1".
        for _ in range(200):
            s = stats(d)
            if s["scheduler"]["prefetchFinished"] == 1:
                break
        assert s["scheduler"]["prefetchFinished"] == 1, s
        type_at(d, 2, 0, 3, "<abc>v1")  # accept
        r = complete(d, 0, 10)
        assert items(r) == ["<v1>v1"], r  # made in idle time for the accepted text
        s = stats(d)
        assert s["completerCounters"]["modelCalls"] == 2, s
        assert s["scheduler"]["answeredFromMemory"] == 1, s
    finally:
        d.kill()


if __name__ == "__main__":
    run_tests(globals())
