#!/usr/bin/env python3
"""`ghostline pull` against a local HTTPS hub (fake_hub.py; no network): the download follows the
hub's redirect to another host and checks size and SHA-256, resumes after a cut, starts over when
Range is ignored, removes a file with the wrong checksum, reports a 404, a gated repository, an
unreachable hub, an untrusted certificate and a full disk clearly, prints progress lines when
stderr is not a terminal, keeps HF_TOKEN to the hub and out of its output, refuses names and
planted symbolic links that would leave the model folder, and `--model NAME` finds what it
pulled."""
import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "protocol"))
from fake_hub import Hub  # noqa: E402
from lsp_client import run_tests  # noqa: E402

BINARY = sys.argv[1]
# A real GGUF, so that a pulled file can be loaded by name afterwards.
with open(os.path.join(ROOT, "models", "ghostline-code-draft.gguf"), "rb") as f:
    MODEL = f.read()
TOKEN = "hf_secretTOKEN1234567890"
TMP = tempfile.mkdtemp(prefix="ghostline-pull-")
HUB = Hub(TMP)
HUB.add("user/repo", "model.gguf", MODEL)
HUB.add("user/repo", "sub/other.gguf", MODEL[:100000])
HUB.add("lmstudio-community/Qwen2.5-Coder-0.5B-GGUF", "Qwen2.5-Coder-0.5B-Q8_0.gguf", MODEL)


class Folder:
    """A fresh model folder per test."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="models-", dir=TMP)

    def file(self, name):
        return os.path.join(self.path, name)

    def names(self):
        return sorted(os.listdir(self.path))


def run(folder, *args, token=None, endpoint=None, ca=True, preexec=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_ENDPOINT", "GHOSTLINE_CA_FILE")}
    env["GHOSTLINE_MODEL_DIR"] = folder.path
    env["HF_ENDPOINT"] = endpoint or HUB.url
    if ca:
        env["GHOSTLINE_CA_FILE"] = HUB.cert
    if token:
        env["HF_TOKEN"] = token
    env.update(env_extra or {})
    p = subprocess.run([BINARY] + list(args), env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=preexec)
    return p.returncode, p.stdout, p.stderr


def sha(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_pulls_through_a_redirect_to_another_host_and_keeps_the_token_to_the_hub():
    HUB.reset()
    folder = Folder()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", token=TOKEN)
    assert rc == 0, (rc, out, err)
    assert folder.names() == ["user--repo--model.gguf"], folder.names()
    assert read(folder.file("user--repo--model.gguf")) == MODEL
    assert "SHA-256 checked" in out, out
    assert TOKEN not in out + err, "the token was printed"
    hub, cdn = HUB.requests("hub"), HUB.requests("cdn")
    assert [r[2] for r in hub] == ["/api/models/user/repo/revision/main?blobs=true",
                                   "/user/repo/resolve/main/model.gguf"], hub
    assert all(r[3].get("Authorization") == "Bearer " + TOKEN for r in hub), "the hub did not get the token"
    assert len(cdn) == 1 and cdn[0][2].startswith("/blobs/user--repo/model.gguf?signature="), cdn
    assert "Authorization" not in cdn[0][3], "the token went to another host"
    # The pulled name now stands for the file wherever a model is taken.
    rc, out, err = run(folder, "model-info", "user/repo:model.gguf")
    assert rc == 0 and "user--repo--model.gguf" in out, (rc, out, err)


def test_a_recommended_name_and_a_relative_redirect():
    HUB.reset()
    HUB.redirect = "relative"
    folder = Folder()
    rc, out, err = run(folder, "pull", "qwen2.5-coder-0.5b", token=TOKEN)
    assert rc == 0, (rc, out, err)
    assert folder.names() == ["qwen2.5-coder-0.5b.gguf"], folder.names()
    blob = [r for r in HUB.requests("hub") if r[2].startswith("/blobs/")]
    assert len(blob) == 1 and blob[0][3].get("Authorization") == "Bearer " + TOKEN, blob
    rc, out, err = run(folder, "tokenize", "-m", "qwen2.5-coder-0.5b", "--help")
    assert rc == 0, err
    rc, out, err = run(folder, "model-info", "qwen2.5-coder-0.5b")
    assert rc == 0 and "qwen2.5-coder-0.5b.gguf" in out, (rc, out, err)
    # Pulling again finds it up to date and downloads nothing.
    HUB.reset()
    rc, out, err = run(folder, "pull", "qwen2.5-coder-0.5b")
    assert rc == 0 and "up to date" in out, (rc, out, err)
    assert not [r for r in HUB.requests() if "/resolve/" in r[2] or "/blobs/" in r[2]], HUB.requests()


def test_resumes_after_a_cut_with_a_range_request():
    HUB.reset()
    HUB.cut_first = True
    folder = Folder()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1, (rc, out, err)
    assert "interrupted" in err and "again to resume" in err, err
    part = folder.file("user--repo--model.gguf.part")
    assert folder.names() == ["user--repo--model.gguf.part"], folder.names()
    have = os.path.getsize(part)
    assert 0 < have < len(MODEL), have
    # A partial file is never taken for a model.
    rc, out, err = run(folder, "model-info", part)
    assert rc == 1 and "partial download" in err, (rc, err)
    rc, out, err = run(folder, "model-info", "user/repo:model.gguf")
    assert rc == 1 and "ghostline pull user/repo:model.gguf" in err, (rc, err)

    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 0, (rc, out, err)
    assert "resuming" in err, err
    ranges = [r[3].get("Range") for r in HUB.requests("cdn")]
    assert ranges == [None, "bytes=%d-" % have], ranges
    assert folder.names() == ["user--repo--model.gguf"], folder.names()
    assert read(folder.file("user--repo--model.gguf")) == MODEL


def test_starts_over_when_the_server_ignores_range():
    HUB.reset()
    folder = Folder()
    with open(folder.file("user--repo--model.gguf.part"), "wb") as f:
        f.write(b"garbage that is not the start of the file")
    HUB.ignore_range = True
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 0, (rc, out, err)
    assert "starting over" in err, err
    assert read(folder.file("user--repo--model.gguf")) == MODEL


def test_a_wrong_checksum_removes_the_download():
    HUB.reset()
    HUB.wrong_sha = True
    HUB.redirect = "none"  # no X-Linked-Etag from a redirect: only the metadata's checksum
    folder = Folder()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1, (rc, out, err)
    assert "checksum mismatch" in err and sha(MODEL) in err and "removed" in err, err
    assert folder.names() == [], folder.names()


def test_the_hub_disagreeing_with_itself_is_refused():
    HUB.reset()
    HUB.wrong_sha = True  # metadata says one SHA-256, the resolve redirect's X-Linked-Etag another
    folder = Folder()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1 and "disagree" in err, (rc, err)
    assert "user--repo--model.gguf" not in folder.names(), folder.names()


def test_not_found_and_gated():
    HUB.reset()
    folder = Folder()
    rc, out, err = run(folder, "pull", "nobody/nothing:model.gguf", token=TOKEN)
    assert rc == 1 and "not found" in err and "404" in err and "Repository not found" in err, (rc, err)
    rc, out, err = run(folder, "pull", "user/repo:missing.gguf")
    assert rc == 1 and "has no file missing.gguf" in err and "user/repo:model.gguf" in err, (rc, err)
    HUB.gated = {"user/repo"}
    HUB.token = TOKEN
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1 and "401" in err and "HF_TOKEN" in err, (rc, err)
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", token="hf_wrongTOKEN99")
    assert rc == 1 and "it was refused" in err and "hf_wrongTOKEN99" not in out + err, (rc, err)
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", token=TOKEN)
    assert rc == 0 and TOKEN not in out + err, (rc, out, err)


def test_no_network_and_an_untrusted_certificate():
    HUB.reset()
    folder = Folder()
    s = __import__("socket").socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", endpoint="https://127.0.0.1:%d" % closed)
    assert rc == 1 and "cannot connect" in err and "no network" in err, (rc, err)
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", ca=False)
    assert rc == 1 and "TLS handshake" in err and "certificate verify failed" in err, (rc, err)
    assert HUB.requests() == [], "a request went out over an unverified connection"
    # --ca-file does what the environment variable does.
    rc, out, err = run(folder, "pull", "user/repo:model.gguf", "--ca-file", HUB.cert, ca=False)
    assert rc == 0, (rc, out, err)


def test_progress_lines_when_stderr_is_not_a_terminal():
    HUB.reset()
    HUB.slow = True
    folder = Folder()
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 0, (rc, out, err)
    lines = [l for l in err.splitlines() if re.match(r"^\s*\d+%  ", l)]
    percents = [int(l.split("%")[0]) for l in lines]
    assert len(lines) >= 3 and percents == sorted(percents) and percents[-1] == 100, err
    assert all("MiB" in l and "/s" in l for l in lines), lines
    assert any("left" in l for l in lines[:-1]), lines
    assert "\r" not in err, "a terminal's bar went to a pipe"


def test_a_full_disk_says_so_and_the_download_resumes():
    HUB.reset()
    folder = Folder()
    limit = 1 << 20

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    rc, out, err = run(folder, "pull", "user/repo:model.gguf", preexec=small_files)
    assert rc == 1, (rc, out, err)
    assert "no room to write" in err and "resumes" in err, err
    assert os.path.getsize(folder.file("user--repo--model.gguf.part")) == limit
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 0 and "resuming" in err, (rc, out, err)
    assert read(folder.file("user--repo--model.gguf")) == MODEL


def test_hostile_names_are_refused_before_any_request():
    HUB.reset()
    folder = Folder()
    for name in ["user/repo:../x.gguf", "user/repo:sub/../../x.gguf", "/etc/passwd", "../../x.gguf",
                 "user/repo:/abs.gguf", "user\\repo:x.gguf", "user/repo:a\\b.gguf", "us..er/repo:x.gguf",
                 "user/re po:x.gguf", "user/repo/extra:x.gguf", "user:x.gguf", "user/repo:x.bin",
                 "user/repo:x.gguf@../main", "user/repo", "not-a-model"]:
        rc, out, err = run(folder, "pull", name)
        assert rc == 2 and "ghostline pull: model name" in err, (name, rc, err)
    assert HUB.requests() == [], HUB.requests()
    assert folder.names() == [] and not os.path.exists(os.path.join(TMP, "x.gguf"))
    # A NUL cannot pass through argv; the parser refuses one all the same (model_names_test).
    # A file in a folder of the repository is fine, flattened into one name.
    rc, out, err = run(folder, "pull", "user/repo:sub/other.gguf")
    assert rc == 0 and folder.names() == ["user--repo--sub--other.gguf"], (rc, err, folder.names())


def test_planted_symbolic_links_are_refused():
    HUB.reset()
    folder = Folder()
    victim = os.path.join(TMP, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious")
    os.symlink(victim, folder.file("user--repo--model.gguf.part"))
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1 and "symbolic link" in err, (rc, err)
    assert read(victim) == b"precious"
    os.remove(folder.file("user--repo--model.gguf.part"))
    os.symlink(victim, folder.file("user--repo--model.gguf"))
    rc, out, err = run(folder, "pull", "user/repo:model.gguf")
    assert rc == 1 and "symbolic link" in err, (rc, err)
    rc, out, err = run(folder, "model-info", "user/repo:model.gguf")
    assert rc == 1 and "symbolic link" in err, (rc, err)
    assert read(victim) == b"precious"


def test_model_names_on_serve_and_complete():
    HUB.reset()
    folder = Folder()
    src = os.path.join(TMP, "a.py")
    with open(src, "w") as f:
        f.write("def f(x):\n    return x")
    rc, out, err = run(folder, "complete", "--model", "qwen2.5-coder-3b", src)
    assert rc == 2 and "not pulled yet" in err and "ghostline pull qwen2.5-coder-3b" in err, (rc, err)
    rc, out, err = run(folder, "serve", "--draft", "user/repo:model.gguf")
    assert rc == 2 and "ghostline pull user/repo:model.gguf" in err, (rc, err)
    rc, out, err = run(folder, "pull", "qwen2.5-coder-0.5b")
    assert rc == 0, (rc, out, err)
    rc, out, err = run(folder, "complete", "--model", "qwen2.5-coder-0.5b", "--draft", "qwen2.5-coder-0.5b",
                       "--max-tokens", "4", "--log-level", "info", src)
    assert rc == 0 and "loaded %s (" % folder.file("qwen2.5-coder-0.5b.gguf") in err, (rc, out, err)
    assert "draft %s (" % folder.file("qwen2.5-coder-0.5b.gguf") in err, (rc, out, err)


def test_list():
    folder = Folder()
    rc, out, err = run(folder, "pull", "--list")
    assert rc == 0, err
    for name in ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "qwen2.5-coder-3b", "deepseek-coder-1.3b",
                 "starcoder2-3b"]:
        assert re.search(r"^%s\s+\d" % re.escape(name), out, re.M), (name, out)
    assert "GB" in out and "RAM" in out and folder.path in out, out


if __name__ == "__main__":
    try:
        code = run_tests(dict(globals()))
    finally:
        HUB.close()
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(code)
