#!/usr/bin/env python3
"""Replays every recorded typing session in tests/sessions/ against the real daemon with the small
shared model and checks the daemon's behaviour (not its speed): every request is answered or
cancelled, no answer comes after an answer to a newer request of the same document, the daemon's
document text equals the session's final text, and the daemon logs no error.

Also: the session set itself (languages, length, replaying its keys gives its final text), a
timed replay where answers and cancellations mix, and the recorder -> converter -> replay loop."""
import glob
import json
import os
import subprocess
import sys
import tempfile

BINARY = sys.argv[1]
MODEL = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf"
SESSIONS = sorted(glob.glob("tests/sessions/*.jsonl"))
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(name, fn):
    try:
        fn()
        print("ok   %s" % name, flush=True)
    except Exception as e:  # noqa: BLE001
        failures.append(name)
        print("FAIL %s: %s" % (name, e), flush=True)


def load(path):
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return lines[0], lines[1:]


def replay(args, tmp, name):
    out = os.path.join(tmp, name + ".json")
    log = os.path.join(tmp, name + ".log")
    cmd = [BINARY, "replay", "-q", "--json", out] + args
    if "--daemon" not in args:
        cmd += ["--daemon-log", log]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    report = json.load(open(out)) if os.path.exists(out) else None
    log_text = open(log).read() if os.path.exists(log) else ""
    return p, report, log_text


def assert_behaviour(p, report, log_text, expect_sessions):
    assert report is not None, "no JSON report; stderr: %s" % p.stderr[-2000:]
    assert p.returncode == 0, "exit code %d; problems: %s; stderr: %s" % (
        p.returncode, report["problems"], p.stderr[-2000:])
    assert report["problems"] == [], report["problems"]
    assert len(report["sessions"]) == expect_sessions, len(report["sessions"])
    for s in report["sessions"]:
        m = s["summary"]
        closed = (m["answered"] + m["superseded"] + m["invalidatedByEdit"] + m["cancelledByClient"] +
                  m["dropped"])
        assert m["unanswered"] == 0 and m["failed"] == 0, (s["name"], m)
        assert closed == m["requests"], (s["name"], m)
        assert m["answered"] >= 1, (s["name"], m)  # the last request of a session is never superseded
        assert m["staleAnswers"] == 0, (s["name"], m)
        assert s["textMatches"], (s["name"], s["textProblem"])
        assert s["daemonErrors"] == [], (s["name"], s["daemonErrors"])
    for r in report["requests"]:
        if r["result"] == "answered":
            assert r["latencyMs"] is not None and r["latencyMs"] >= 0, r
    errors = [l for l in log_text.splitlines() if "] [error] " in l or "] [critical] " in l]
    assert not errors, errors[:5]
    assert "daemonExitCode" in report["settings"] and report["settings"]["daemonExitCode"] in (0, -1), \
        report["settings"]


def test_session_set():
    assert len(SESSIONS) >= 12, SESSIONS
    languages = set()
    for path in SESSIONS:
        header, events = load(path)
        assert header["format"] == "ghostline-session" and header["version"] == 1, path
        languages.add(header["language"])
        keys = [e for e in events if e["type"] in ("key", "edit")]
        assert len(keys) >= 300, (path, len(keys))
        # Typing the keys into the initial text gives the final text.
        text = header["text"].encode("utf-8")
        cursor = header["typed"]["start"]
        for e in keys:
            if e["key"] == "Backspace":
                start = cursor - 1
                while start > 0 and (text[start] & 0xC0) == 0x80:
                    start -= 1
                text = text[:start] + text[cursor:]
                cursor = start
            else:
                k = e["key"].encode("utf-8")
                text = text[:cursor] + k + text[cursor:]
                cursor += len(k)
            if "progress" in e:
                typed = header["typed"]
                final = header["finalText"].encode("utf-8")
                assert text == final[:typed["start"] + e["progress"]] + final[typed["start"] + typed["bytes"]:], \
                    (path, e)
        assert text.decode("utf-8") == header["finalText"], path
        assert all(a["t"] <= b["t"] for a, b in zip(events, events[1:])), path
    for group in ({"python"}, {"javascript", "typescript"}, {"c", "cpp"}, {"go"}, {"rust"}):
        assert languages & group, (group, languages)
    size = sum(os.path.getsize(p) for p in SESSIONS)
    assert size < 600 * 1024, size


def test_all_sessions_at_max_speed():
    with tempfile.TemporaryDirectory() as tmp:
        p, report, log = replay(["tests/sessions", "--speed", "max", "--model", MODEL, "--threads", "2"],
                                tmp, "max")
        assert_behaviour(p, report, log, len(SESSIONS))
        total = report["summary"]
        assert total["keystrokes"] == sum(len(load(s)[1]) for s in SESSIONS), total
        assert total["requests"] == total["keystrokes"], total


def test_timed_replay_mixes_answers_and_cancellations():
    # At 40x the recorded pace keystrokes still come faster than the engine answers, except at
    # the pauses a person makes: some requests are answered, others superseded by an edit.
    picked = ["tests/sessions/py-csv-report.jsonl", "tests/sessions/rs-tokenizer.jsonl"]
    with tempfile.TemporaryDirectory() as tmp:
        p, report, log = replay(picked + ["--speed", "40", "--model", MODEL, "--threads", "2"], tmp, "timed")
        assert_behaviour(p, report, log, len(picked))
        total = report["summary"]
        assert total["invalidatedByEdit"] + total["superseded"] > 0, total
        assert total["statsMatched"] == total["answered"], total


def test_accepting_completions_skips_what_they_type():
    # A stand-in daemon that completes with what the person types next, in full or with a wrong
    # tail after its first line or word: the person takes what matches, the replay skips the keys
    # that typed it, and the document still ends as the session's final text.
    picked = ["tests/sessions/go-wordcount.jsonl", "tests/sessions/c-ring-buffer.jsonl"]
    daemon = "%s %s --session %s --session %s" % (sys.executable, os.path.join(HERE, "oracle_daemon.py"),
                                                   picked[0], picked[1])
    with tempfile.TemporaryDirectory() as tmp:
        p, report, log = replay(picked + ["--speed", "step", "--daemon", daemon], tmp, "oracle")
        assert_behaviour(p, report, log, len(picked))
        for s, path in zip(report["sessions"], picked):
            m = s["summary"]
            assert m["shown"] > 0 and 0 < m["wouldAccept"] < m["shown"], (s["name"], m)
            assert m["accepted"]["full"] > 0 and m["accepted"]["word"] > 0, (s["name"], m)
            assert m["keystrokesSaved"] > 0, (s["name"], m)
            assert m["keystrokes"] < len(load(path)[1]), (s["name"], m)
        total = report["summary"]["accepted"]
        assert total["line"] > 0, total


def test_recording_converts_to_a_replayable_session():
    path = "tests/sessions/ts-event-bus.jsonl"
    header, _ = load(path)
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "record.jsonl")
        p, report, log = replay([path, "--speed", "max", "--serve-args",
                                 "--scripted-completer 0 --record " + record], tmp, "record")
        assert_behaviour(p, report, log, 1)
        converted = os.path.join(tmp, "converted.jsonl")
        subprocess.run([sys.executable, "tools/replay/convert_recording.py", record, "-o", converted], check=True,
                       stderr=subprocess.DEVNULL)
        conv_header, events = load(converted)
        assert conv_header["text"] == header["text"] and conv_header["finalText"] == header["finalText"]
        assert conv_header["language"] == header["language"] and conv_header["uri"] == header["uri"]
        edits = [e for e in events if e["type"] == "edit"]
        requests = [e for e in events if e["type"] == "complete"]
        assert len(edits) == report["sessions"][0]["summary"]["keystrokes"], len(edits)
        assert len(requests) == len(edits), len(requests)
        p, report, log = replay([converted, "--speed", "max", "--serve-args", "--scripted-completer 0"], tmp,
                                "converted")
        assert_behaviour(p, report, log, 1)


check("the session set", test_session_set)
check("all sessions at max speed with the shared model", test_all_sessions_at_max_speed)
check("timed replay: answers and cancellations", test_timed_replay_mixes_answers_and_cancellations)
check("accepting completions", test_accepting_completions_skips_what_they_type)
check("recording -> converter -> replay", test_recording_converts_to_a_replayable_session)
if failures:
    print("%d failed: %s" % (len(failures), ", ".join(failures)))
    sys.exit(1)
