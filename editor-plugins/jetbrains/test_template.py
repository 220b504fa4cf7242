#!/usr/bin/env python3
"""Checks the LSP4IJ template in ghostline-template/ against LSP4IJ's published template format,
then starts the daemon with the template's own command and options the way LSP4IJ would (stdio,
initializationOptions.json, settings.json as didChangeConfiguration, didOpen with each mapping's
languageId) and asks for an inline completion in a file of every mapped language.

The format, as LSP4IJ reads it (docs/UserDefinedLanguageServerTemplate.md and
LanguageServerTemplateDeserializer / LanguageServerTemplateManager in redhat-developer/lsp4ij):
  - a template folder holds template.json (required) and optionally settings.json,
    settings.schema.json, initializationOptions.json, clientSettings.json, installer.json and
    README.md; other files are ignored;
  - template.json: "name" (string, required), "programArgs" (object, required; "default" and OS
    keys map to command strings), "id" (string), "fileTypeMappings" (array of
    {"fileType": {"patterns": [glob...], "name": IDE file type}, "languageId": string}),
    "languageMappings" (array of {"language", "languageId"}).

  test_template.py [GHOSTLINE_BINARY]     (without a binary only the format is checked)
"""
import fnmatch
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from daemon_capabilities import frame, read_message, stop_daemon  # noqa: E402
TEMPLATE = os.path.join(HERE, "ghostline-template")
KNOWN_FILES = {"template.json", "settings.json", "settings.schema.json", "initializationOptions.json",
               "clientSettings.json", "installer.json", "README.md"}
TOP_KEYS = {"id", "name", "programArgs", "fileTypeMappings", "languageMappings"}
OS_KEYS = {"default", "windows", "linux", "mac", "unix"}
# The languages Ghostline's syntax layer covers, with a file of each that must be mapped.
REQUIRED = {"python": "a.py", "javascript": "a.js", "javascriptreact": "a.jsx", "typescript": "a.ts",
            "typescriptreact": "a.tsx", "c": "a.c", "cpp": "a.cpp", "go": "a.go", "rust": "a.rs",
            "java": "A.java", "lua": "a.lua"}
# Each daemon session setting: its type and its range (ints), its values (strings) or its values'
# type (objects).
SESSION_SETTINGS = {"enabled": (bool, None), "debounceMs": (int, (0, 2000)), "maxTokens": (int, (0, 4096)),
                    "deadlineMs": (int, (0, 60000)), "completion": (str, {"auto", "line", "block"}),
                    "languages": (dict, bool)}


def setting_ok(typ, rule, v):
    if type(v) is not typ:
        return False
    if typ is int and rule:
        return rule[0] <= v <= rule[1]
    if typ is str:
        return v in rule
    if typ is dict:
        return all(isinstance(k, str) and type(x) is rule for k, x in v.items())
    return True

failures = []


def check(name, cond, detail=""):
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + detail) if detail and not cond else ""))
    if not cond:
        failures.append(name)
    return cond


def load(name):
    with open(os.path.join(TEMPLATE, name), encoding="utf-8") as f:
        return json.load(f)


def validate_template(t):
    """Problems of template.json against LSP4IJ's format, as a list of strings."""
    problems = []
    if not isinstance(t, dict):
        return ["template.json is not an object"]
    for k in t:
        if k not in TOP_KEYS:
            problems.append("unknown key %r (LSP4IJ ignores it)" % k)
    if not isinstance(t.get("name"), str) or not t["name"].strip():
        problems.append("name: a non-empty string is required")
    if "id" in t and (not isinstance(t["id"], str) or not t["id"]):
        problems.append("id: must be a non-empty string")
    pa = t.get("programArgs")
    if not isinstance(pa, dict):
        problems.append("programArgs: an object is required")
    else:
        if not isinstance(pa.get("default"), str) or not pa["default"].strip():
            problems.append("programArgs.default: a command string is required")
        for k, v in pa.items():
            if k not in OS_KEYS:
                problems.append("programArgs.%s: not an OS key (%s)" % (k, ", ".join(sorted(OS_KEYS))))
            if not isinstance(v, str):
                problems.append("programArgs.%s: must be a string" % k)
    ftm = t.get("fileTypeMappings", [])
    if not isinstance(ftm, list):
        problems.append("fileTypeMappings: must be an array")
        ftm = []
    for i, m in enumerate(ftm):
        where = "fileTypeMappings[%d]" % i
        if not isinstance(m, dict) or set(m) - {"fileType", "languageId"}:
            problems.append("%s: only fileType and languageId are read" % where)
            continue
        if not isinstance(m.get("languageId"), str) or not m["languageId"]:
            problems.append("%s.languageId: a string is required (a mapping without one is dropped)" % where)
        ft = m.get("fileType")
        if not isinstance(ft, dict):
            problems.append("%s.fileType: an object is required" % where)
            continue
        if set(ft) - {"patterns", "name"}:
            problems.append("%s.fileType: only patterns and name are read" % where)
        pats = ft.get("patterns")
        if pats is not None and (not isinstance(pats, list) or not all(isinstance(p, str) and p for p in pats)):
            problems.append("%s.fileType.patterns: an array of glob strings" % where)
        if "name" in ft and not isinstance(ft["name"], str):
            problems.append("%s.fileType.name: a string" % where)
        if not pats and "name" not in ft:
            problems.append("%s.fileType: needs patterns or name" % where)
    lm = t.get("languageMappings", [])
    if not isinstance(lm, list) or not all(isinstance(m, dict) and isinstance(m.get("language"), str)
                                           and isinstance(m.get("languageId"), str) for m in lm):
        problems.append("languageMappings: an array of {language, languageId} strings")
    if not ftm and not lm:
        problems.append("no fileTypeMappings or languageMappings: the server would apply to no file")
    return problems


def language_of(t, filename):
    hits = [m["languageId"] for m in t["fileTypeMappings"]
            if any(fnmatch.fnmatch(filename, p) for p in m["fileType"].get("patterns", []))]
    return hits


def check_format():
    files = set(os.listdir(TEMPLATE))
    check("the template folder holds template.json", "template.json" in files)
    check("every file in the template folder is one LSP4IJ reads", files <= KNOWN_FILES,
          ", ".join(sorted(files - KNOWN_FILES)))
    for f in sorted(files):
        if f.endswith(".json"):
            try:
                load(f)
                ok = True
            except ValueError as e:
                ok = False
                err = str(e)
            check("%s parses as JSON" % f, ok, "" if ok else err)
    t = load("template.json")
    problems = validate_template(t)
    check("template.json follows LSP4IJ's template format", not problems, "; ".join(problems))
    args = shlex.split(t["programArgs"]["default"])
    check("the server command is `ghostline connect`", args[:1] and os.path.basename(args[0]) == "ghostline"
          and args[1:2] == ["connect"], t["programArgs"]["default"])
    for lang, filename in REQUIRED.items():
        hits = language_of(t, filename)
        check("%s maps to languageId %s" % (filename, lang), hits == [lang], repr(hits))
    seen = {}
    for m in t["fileTypeMappings"]:
        for p in m["fileType"].get("patterns", []):
            seen.setdefault(p, []).append(m["languageId"])
    dup = {p: ids for p, ids in seen.items() if len(ids) > 1}
    check("no pattern is mapped twice", not dup, repr(dup))
    for f in ("initializationOptions.json", "settings.json"):
        if f not in files:
            continue
        s = load(f)
        if f == "settings.json":
            s = s.get("ghostline", s)
        bad = []
        for k, v in s.items():
            if k not in SESSION_SETTINGS:
                bad.append("%s: not a daemon setting" % k)
                continue
            if not setting_ok(*SESSION_SETTINGS[k], v):
                bad.append("%s: %r" % (k, v))
        check("%s holds only daemon session settings, in range" % f, not bad, "; ".join(bad))
    # The validator itself rejects what LSP4IJ cannot read.
    broken = [({}, "name"), ({"name": "x"}, "programArgs"), ({"name": "x", "programArgs": {"default": 1}}, "default"),
              ({"name": "x", "programArgs": {"default": "g"}, "fileTypeMappings": [{"fileType": {}, "languageId": "c"}]},
               "patterns or name"),
              ({"name": "x", "programArgs": {"default": "g"}, "fileTypeMappings": [{"languageId": "c"}]}, "fileType"),
              ({"name": "x", "programArgs": {"default": "g"}, "serverName": "x",
                "fileTypeMappings": [{"fileType": {"patterns": ["*.c"]}, "languageId": "c"}]}, "unknown key")]
    check("the format check rejects templates LSP4IJ cannot read",
          all(any(word in p for p in validate_template(b)) for b, word in broken),
          repr([validate_template(b) for b, _ in broken]))


# ---- the template's command against the real daemon ----

def check_with_daemon(binary):
    t = load("template.json")
    init_options = load("initializationOptions.json")
    settings = load("settings.json")
    args = shlex.split(t["programArgs"]["default"])
    tmp = tempfile.mkdtemp(prefix="ghostline-lsp4ij-")
    sock = os.path.join(tmp, "g.sock")
    # The template's command with the test's binary, a private socket and the scripted completer.
    cmd = [binary] + args[1:] + ["unix:" + sock, "--", "--scripted-completer", "0"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    next_id = [0]

    def request(method, params):
        next_id[0] += 1
        p.stdin.write(frame({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}))
        p.stdin.flush()
        while True:
            m = read_message(p.stdout)
            if m.get("id") == next_id[0] and "method" not in m:
                return m

    def notify(method, params):
        p.stdin.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))
        p.stdin.flush()

    try:
        r = request("initialize", {"processId": os.getpid(), "rootUri": "file://" + tmp, "capabilities": {
            "textDocument": {"inlineCompletion": {"dynamicRegistration": False}, "completion": {}}},
            "initializationOptions": init_options})
        caps = r.get("result", {}).get("capabilities", {})
        check("the template's command starts the daemon and it initializes", "inlineCompletionProvider" in caps,
              json.dumps(r)[:300])
        check("the daemon offers textDocument/completion too (the fallback of LSP4IJ before 0.20)",
              "completionProvider" in caps)
        notify("initialized", {})
        notify("workspace/didChangeConfiguration", {"settings": settings})
        for lang, filename in REQUIRED.items():
            uri = "file://%s/%s" % (tmp, filename)
            hit = language_of(t, filename)[0]
            notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": hit, "version": 1,
                                                             "text": "value = compute\n"}})
            r = request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                          "position": {"line": 0, "character": 15},
                                                          "context": {"triggerKind": 2}})
            items = (r.get("result") or {}).get("items", []) if isinstance(r.get("result"), dict) else r.get("result") or []
            text = items[0].get("insertText") if items else None
            check("inline completion in %s (%s)" % (filename, hit), text == "<compute>v1", json.dumps(r)[:300])
            c = request("textDocument/completion", {"textDocument": {"uri": uri},
                                                    "position": {"line": 0, "character": 15}})
            res = c.get("result")
            citems = res.get("items", []) if isinstance(res, dict) else (res or [])
            check("completion fallback in %s" % filename, len(citems) == 1, json.dumps(c)[:300])
        request("shutdown", None)
        notify("exit", None)
        p.stdin.close()
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
        # Stop the daemon that `connect` started on the private socket.
        stop_daemon(sock)


if __name__ == "__main__":
    check_format()
    if len(sys.argv) > 1:
        check_with_daemon(os.path.abspath(sys.argv[1]))
    else:
        print("skipped: the template's command against a daemon (no GHOSTLINE_BINARY given)")
    print("jetbrains template: %d failed" % len(failures))
    sys.exit(1 if failures else 0)
