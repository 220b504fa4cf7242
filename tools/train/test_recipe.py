#!/usr/bin/python3
"""Unit tests for the training recipe: /usr/bin/python3 -m unittest tools/train/test_recipe.py"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import neardup  # noqa: E402
from data import RowBuilder  # noqa: E402
from gguf_writer import GGML_F16, GGML_F32, GGML_Q8_0, GGUFReader, GGUFWriter, quantize_q8_0  # noqa: E402
from model import Config, Transformer, apply_rope  # noqa: E402
from tokenizer import SPECIALS, Tokenizer, pretokenize, to_unicode, train_bpe  # noqa: E402


def small_tokenizer():
    text = "def foo(bar):\n    return bar + 1\n\nfor i in range(10):\n    foo(i)\n" * 20
    freqs = {}
    for piece in pretokenize(text):
        w = to_unicode(piece)
        freqs[w] = freqs.get(w, 0) + 1
    return Tokenizer(train_bpe(dict(sorted(freqs.items())), 60, log=open(os.devnull, "w")))


class CorpusLicenseTest(unittest.TestCase):
    def test_license_expressions(self):
        for expr in ["MIT", "Expat", "BSD-3-clause", "MIT OR Apache-2.0", "MIT/Apache-2.0",
                     "Apache-2.0 WITH LLVM-exception", "(MIT OR Apache-2.0) AND Unicode-DFS-2016",
                     "GPL-2+ or MIT"]:
            self.assertTrue(corpus.permissive(expr), expr)
        for expr in ["", "GPL-2+", "MPL-2.0", "LGPL-2.1 WITH exception", "Apache-2.0 and GPL-2",
                     "(MIT OR Apache-2.0) AND GPL-3", "MIT AND (GPL-2 OR LGPL-3)"]:
            self.assertFalse(corpus.permissive(expr), expr)

    def test_debian_copyright_gives_the_license_of_all_files(self):
        with tempfile.TemporaryDirectory() as d:
            doc = Path(d) / "golang-example-dev"
            doc.mkdir()
            (doc / "copyright").write_text(
                "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                "Upstream-Name: example\n\n"
                "Files: vendor/*\nCopyright: someone\nLicense: GPL-2+\n\n"
                "Files: *\nCopyright: 2020 The Authors\nLicense: BSD-3-clause\n\n"
                "License: BSD-3-clause\n Redistribution and use ...\n")
            self.assertEqual(corpus.debian_license("golang-example-dev", d), "BSD-3-clause")
            (doc / "copyright").write_text("This package was debianized by someone.\n")
            self.assertIsNone(corpus.debian_license("golang-example-dev", d))
            self.assertIsNone(corpus.debian_license("missing-package", d))


def some_module(seed, n_funcs=12):
    """A made-up Python module: functions with names, constants and bodies drawn from `seed`."""
    import random
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "count", "total", "items", "value", "index", "limit"]
    out = []
    for i in range(n_funcs):
        a, b, c = rng.sample(words, 3)
        out.append(f"def {a}_{b}_{i}({c}, {a}={rng.randint(0, 99)}):\n"
                   f"    for {b} in range({c}):\n"
                   f"        {a} += {b} * {rng.randint(2, 9)}\n"
                   f"    return {a} - {rng.randint(0, 50)}\n")
    return "\n".join(out)


class NearDupTest(unittest.TestCase):
    def test_similarity_estimates_the_shingle_jaccard(self):
        index = neardup.NearDupIndex()
        a = some_module(1)
        edited = a.replace("return", "return  ", 1).replace("range(", "range(1 + ", 1)  # two small edits
        other = some_module(2)
        sa, se, so = index.signature(a), index.signature(edited), index.signature(other)
        self.assertEqual(sa.dtype, np.uint32)
        self.assertEqual(len(sa), neardup.PERMS)
        self.assertTrue((index.signature(a) == sa).all())  # deterministic
        self.assertGreater(neardup.estimated_similarity(sa, se), 0.85)
        self.assertLess(neardup.estimated_similarity(sa, so), 0.5)
        index.add(sa)
        self.assertEqual(index.similar(se), 0)
        self.assertIsNone(index.similar(so))
        with self.assertRaises(ValueError):
            neardup.NearDupIndex(0.0)

    def test_training_files_like_a_heldout_or_an_earlier_file_are_dropped(self):
        base, other, third = some_module(1), some_module(2), some_module(3)
        near = base.replace("return", "return  ", 1)
        recs = [dict(source="s1", split="train", text=near),       # like a held-out file: dropped
                dict(source="s1", split="train", text=other),
                dict(source="s2", split="heldout", text=base),     # never dropped
                dict(source="s2", split="heldout", text=near),     # held out too: kept
                dict(source="s2", split="train", text=other + "\n# end\n"),  # like an earlier one
                dict(source="s2", split="train", text=third)]
        kept, dropped, like_heldout = neardup.drop_near_duplicates(recs)
        self.assertEqual([recs.index(r) for r in kept], [1, 2, 3, 5])
        self.assertEqual(dropped, {"s1": 1, "s2": 1})
        self.assertEqual(like_heldout, 1)
        # Files added to a corpus: compared with it, which is never dropped from.
        kept, dropped, _ = neardup.drop_near_duplicates([dict(source="s3", split="train", text=third)],
                                                        prior=recs)
        self.assertEqual((kept, dropped), ([], {"s3": 1}))
        stats = [dict(name="s1", files_kept=2, bytes_kept=1), dict(name="s2", files_kept=4, bytes_kept=1)]
        kept, dropped, _ = neardup.drop_near_duplicates(recs)
        corpus.drop_near_duplicate_stats(stats, kept, dropped)
        self.assertEqual(stats[0]["files_kept"], 1)
        self.assertEqual(stats[0]["bytes_kept"], len(other.encode()))
        self.assertEqual(stats[1]["near_duplicates_dropped"], 1)

    def test_the_card_says_what_was_dropped(self):
        import card
        self.assertEqual(card.near_duplicates(dict(near_dup_threshold=0.0)), "")
        self.assertEqual(card.near_duplicates({}), "")
        text = card.near_duplicates(dict(near_dup_threshold=0.85, near_duplicates_dropped=7,
                                         near_duplicates_of_heldout=2,
                                         site_packages=dict(near_duplicates_dropped=3,
                                                            near_duplicates_of_heldout=1)))
        self.assertIn("(10, 3 of them near-copies of held-out files)", text)
        self.assertIn("0.85", text)


class PreTokenizerTest(unittest.TestCase):
    def test_qwen2_splits(self):
        # digits one by one, a space joins the following word, newline runs stand alone
        self.assertEqual(pretokenize("x = 123\n\n    y"), ["x", " =", " ", "1", "2", "3", "\n\n", "   ", " y"])
        self.assertEqual(pretokenize("it's"), ["it", "'s"])
        self.assertEqual(pretokenize("a.b()"), ["a", ".b", "()"])


class TokenizerTest(unittest.TestCase):
    def test_roundtrip_and_merges(self):
        tok = small_tokenizer()
        self.assertGreater(len(tok.merges), 10)
        self.assertEqual(tok.vocab_size, 256 + len(tok.merges) + len(SPECIALS))
        text = "def foo(bar):\n    return bar + 42  # héllo 世界\n"
        ids = tok.encode(text)
        self.assertEqual(tok.decode(ids), text)
        self.assertLess(len(ids), len(text.encode()))  # merges apply
        # special tokens are not parsed out of text
        self.assertNotIn(tok.eot, tok.encode("<|endoftext|>"))

    def test_merge_order_is_by_rank(self):
        tok = Tokenizer([("a", "b"), ("b", "c"), ("ab", "c")])
        # "abc": (a,b) has the lower rank, then (ab,c)
        self.assertEqual([tok.tokens[i] for i in tok.encode("abc")], ["abc"])
        tok2 = Tokenizer([("b", "c"), ("a", "b")])
        self.assertEqual([tok2.tokens[i] for i in tok2.encode("abc")], ["a", "bc"])


class GGUFTest(unittest.TestCase):
    def test_roundtrip(self):
        rng = np.random.default_rng(0)
        w = GGUFWriter()
        w.add("general.architecture", "llama")
        w.add("some.count", 7)
        w.add("some.flag", True)
        w.add("some.list", ["a b", "c"])
        a = rng.standard_normal((3, 64)).astype(np.float32)
        n = rng.standard_normal(64).astype(np.float32)
        w.add_tensor("m.q8", a, GGML_Q8_0)
        w.add_tensor("m.f16", a, GGML_F16)
        w.add_tensor("n.f32", n, GGML_F32)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "t.gguf"
            w.write(p)
            raw = p.read_bytes()
            self.assertEqual(raw[:4], b"GGUF")
            self.assertEqual(int.from_bytes(raw[4:8], "little"), 3)
            r = GGUFReader(p)
            self.assertEqual(r.meta["some.count"], 7)
            self.assertIs(r.meta["some.flag"], True)
            self.assertEqual(r.meta["some.list"], ["a b", "c"])
            self.assertTrue(np.array_equal(r.tensor("n.f32"), n))
            self.assertTrue(np.array_equal(r.tensor("m.f16"), a.astype(np.float16).astype(np.float32)))
            q = r.tensor("m.q8")
            self.assertEqual(q.shape, (3, 64))
            step = np.abs(a.reshape(-1, 32)).max(axis=1) / 127
            self.assertTrue(np.all(np.abs(q - a).reshape(-1, 32).max(axis=1) <= step * 0.57))
            for name, _, _, off in r.infos:
                self.assertEqual((r.data_start + off) % 32, 0, name)
            self.assertEqual(r.infos[0][1], [64, 3])  # ggml order: ne[0] = columns

    def test_q8_0_block_layout(self):
        x = np.zeros((1, 32), dtype=np.float32)
        x[0, 0], x[0, 1] = 127.0, -63.5
        b = quantize_q8_0(x)
        self.assertEqual(len(b), 34)
        self.assertEqual(np.frombuffer(b[:2], "<f2")[0], 1.0)
        self.assertEqual(np.frombuffer(b[2:], "i1")[:2].tolist(), [127, -64])  # round half away from 0


class ModelTest(unittest.TestCase):
    def test_rope_rotates_adjacent_pairs(self):
        cfg = Config(dim=8, n_heads=1, n_kv_heads=1)
        x = torch.randn(1, 1, 3, 8)
        pos = torch.arange(3, dtype=torch.float64)[:, None]
        inv = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
        cos, sin = torch.cos(pos * inv).float(), torch.sin(pos * inv).float()
        y = apply_rope(x, cos, sin)
        for p in range(3):
            for i in range(4):
                a, b = x[0, 0, p, 2 * i], x[0, 0, p, 2 * i + 1]
                c, s = cos[p, i], sin[p, i]
                self.assertAlmostEqual(float(y[0, 0, p, 2 * i]), float(a * c - b * s), places=5)
                self.assertAlmostEqual(float(y[0, 0, p, 2 * i + 1]), float(a * s + b * c), places=5)
        self.assertEqual(cfg.head_dim, 8)

    def test_kv_cache_matches_full_forward(self):
        torch.manual_seed(0)
        m = Transformer(Config(vocab_size=50, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=64, ctx=16))
        ids = torch.randint(0, 50, (1, 9))
        with torch.no_grad():
            full, _ = m(ids)
            a, past = m(ids[:, :5])
            b, _ = m(ids[:, 5:], past=past, pos0=5)
        self.assertTrue(torch.allclose(torch.cat([a, b], dim=1), full, atol=1e-5))


class DataTest(unittest.TestCase):
    def test_rows_are_deterministic_and_well_formed(self):
        tok = small_tokenizer()
        docs = [dict(lang="python", text="def f%d(x):\n    return x * %d\n\n" % (i, i) * 30) for i in range(5)]
        rb = RowBuilder(tok, docs, 64)
        a = rb.batch(7, 3, 6)
        b = rb.batch(7, 3, 6)
        self.assertTrue(np.array_equal(a, b))
        self.assertFalse(np.array_equal(a, rb.batch(7, 4, 6)))
        self.assertEqual(a.shape, (6, 65))
        s = tok.special
        fim_rows = 0
        for _ in range(20):
            sample = rb.fim(np.random.default_rng(_), 200)
            if sample is None:
                continue
            fim_rows += 1
            self.assertEqual(sample[-1], s["<|endoftext|>"])
            self.assertIn(s["<|fim_middle|>"], sample)
            self.assertIn(sample[0], (s["<|fim_prefix|>"], s["<|fim_suffix|>"]))
            self.assertLessEqual(len(sample), 200)
        self.assertGreater(fim_rows, 0)

    def test_fim_samples_are_shaped_like_the_daemons_prompts(self):
        tok = small_tokenizer()
        s = tok.special
        text = "".join("def f%d(x, y):\n    if x > %d:\n        return y\n    z = x * %d\n    return z + y\n\n"
                       % (i, i, i) for i in range(60))
        docs = [dict(lang="python", text=text)]
        rb = RowBuilder(tok, docs, 512, spm_rate=1.0, span_rate=0.0, block_rate=1.0)
        blocks = cut_prefixes = 0
        for i in range(40):
            sample = rb.fim(np.random.default_rng(i), 300)
            if sample is None:
                continue
            # SPM: <|fim_suffix|>S<|fim_prefix|>P<|fim_middle|>M<|endoftext|>
            self.assertEqual(sample[0], s["<|fim_suffix|>"])
            pre, mid = sample.index(s["<|fim_prefix|>"]), sample.index(s["<|fim_middle|>"])
            self.assertLessEqual(pre - 1, 128)
            prefix, middle = tok.decode(sample[pre + 1:mid]), tok.decode(sample[mid + 1:-1])
            # The cursor is on the indentation of the line after an opener; the middle is the body.
            last_lines = prefix.split("\n")
            self.assertGreaterEqual(len(last_lines), 2, prefix)
            self.assertTrue(last_lines[-2].endswith(":"), prefix)
            self.assertEqual(last_lines[-1].strip(), "", prefix)
            self.assertGreater(len(last_lines[-1]), len(last_lines[-2]) - len(last_lines[-2].lstrip()))
            self.assertIn(prefix + middle, text)
            self.assertFalse(middle.endswith("\n"))
            blocks += 1
            # A prefix cut to fit starts at a line start.
            if not text.startswith(prefix):
                cut_prefixes += 1
                self.assertIn("\n" + prefix, text)
        self.assertGreater(blocks, 10)
        self.assertGreater(cut_prefixes, 0)

    def test_worker_processes_build_the_inline_batches(self):
        from train import BatchStream
        tok = small_tokenizer()
        docs = [dict(lang="python", text="def g%d(y):\n    return y + %d\n\n" % (i, i) * 20) for i in range(4)]
        rb = RowBuilder(tok, docs, 48)
        stream = BatchStream(rb, 5, 3, workers=2, ahead=3)
        try:
            for step in (0, 1, 2, 7, 8):  # a jump, as after a resume
                self.assertTrue(np.array_equal(stream.get(step), rb.batch(5, step, 3)), step)
        finally:
            stream.close()


HERE = Path(__file__).resolve().parent


def tiny_workdir(d):
    """A work directory with a tiny corpus and tokenizer, as corpus.py and tokenizer.py lay it out."""
    import json
    work = Path(d)
    (work / "data").mkdir(parents=True)
    small_tokenizer().save(work / "tokenizer.json")
    with open(work / "data" / "corpus.jsonl", "w") as f:
        for i in range(8):
            text = "def f%d(x):\n    return x * %d\n\nfor i in range(10):\n    f%d(i)\n" % (i, i, i) * 8
            f.write(json.dumps(dict(source="t", lang="python", path=f"f{i}.py", sha256=str(i),
                                    split="heldout" if i < 2 else "train", text=text)) + "\n")
    (work / "data" / "manifest.json").write_text("{}")
    return work


class RecipeRunTest(unittest.TestCase):
    """The trainer's device path (autocast, device transfers, compile switch, map_location) on the CPU,
    as a GPU run takes it with --device cuda: a few steps, a resume, an export, a split and a join."""

    def run_py(self, *args):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        r = subprocess.run([sys.executable, str(HERE / args[0]), *args[1:]], capture_output=True, text=True,
                           env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout + r.stderr

    def test_same_seed_reruns_the_same_run(self):
        with tempfile.TemporaryDirectory() as d:
            work = tiny_workdir(Path(d) / "w")
            metrics = {}
            for run in ("a", "b"):
                self.run_py("train.py", "--workdir", str(work), "--run", run, "--ctx", "32", "--batch", "2",
                            "--threads", "1", "--device", "cpu", "--bf16", "off", "--target", "32,2,2,1,64",
                            "--draft", "32,1,1,1,32", "--warmup", "2", "--val-every", "2",
                            "--total-tokens", str(6 * 2 * 32))
                rows = [json.loads(line) for line in open(work / "runs" / run / "metrics.jsonl")]
                # everything but the timings
                metrics[run] = [{k: v for k, v in r.items() if not k.endswith(("_s", "_secs"))} for r in rows]
            self.assertEqual(len(metrics["a"]), 6)
            self.assertIn("val_target", metrics["a"][-1])
            self.assertEqual(metrics["a"], metrics["b"])

    def test_tiny_run_resume_export_split(self):
        with tempfile.TemporaryDirectory() as d:
            work = tiny_workdir(Path(d) / "w")
            common = ["--workdir", str(work), "--run", "tiny", "--ctx", "32", "--batch", "2", "--threads", "1",
                      "--device", "cpu", "--bf16", "on", "--compile", "on", "--target", "32,2,2,1,64",
                      "--draft", "32,1,1,1,32", "--warmup", "2", "--workers", "2", "--ckpt-every", "2", "--val-every", "2"]
            log = self.run_py("train.py", *common, "--total-tokens", str(4 * 2 * 32))
            self.assertIn("device cpu, bf16 autocast on", log)
            self.assertIn("step 4/4", log)
            run = work / "runs" / "tiny"
            self.assertTrue((run / "DONE").exists() and (run / "ckpt-predecay.pt").exists())
            (run / "DONE").unlink()
            log = self.run_py("train.py", *common, "--total-tokens", str(4 * 2 * 32), "--resume")
            self.assertIn("resumed from", log)
            self.assertIn("done: 4 steps", log)  # the end of a decayed run does not move
            # extending: from the weights before the decay, with a larger budget
            ext = [a if a != "tiny" else "tiny2" for a in common]
            log = self.run_py("train.py", *ext, "--total-tokens", str(6 * 2 * 32),
                              "--init-from", str(run / "ckpt-predecay.pt"))
            self.assertIn("step 6/6", log)
            out = Path(d) / "export"
            self.run_py("export.py", "--workdir", str(work), "--ckpt", str(run / "ckpt.pt"), "--out", str(out),
                        "--target-type", "q8_0", "--draft-type", "q8_0")
            gguf = out / "ghostline-code.gguf"
            self.assertEqual(GGUFReader(gguf).meta["llama.block_count"], 2)
            # weights come back from an offline machine in parts of at most N MiB
            sys.path.insert(0, str(HERE))
            import pack
            whole = gguf.read_bytes()
            idx = pack.split(gguf, max_mib=8 / 1024)  # 8 KiB parts
            parts = json.loads(idx.read_text())["parts"]
            self.assertGreater(len(parts), 1)
            self.assertTrue(all(p["bytes"] <= 8192 for p in parts))
            gguf.unlink()
            pack.join(idx)
            self.assertEqual(gguf.read_bytes(), whole)
            # the corpus travels as one compressed shard
            shard = Path(d) / "corpus.tar.xz"
            pack.corpus_pack(work, shard, preset=1)
            other = Path(d) / "w2"
            pack.corpus_unpack(shard, other)
            for rel in pack.CORPUS_FILES:
                self.assertEqual((other / rel).read_bytes(), (work / rel).read_bytes(), rel)


def installed(root, files, dists):
    """Writes files under `root` and, for each distribution {name: (license, its files)}, the
    metadata and RECORD that importlib.metadata reads."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for name, (lic, own) in dists.items():
        info = root / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: {name}\nVersion: 1.0\n"
                                       f"License-Expression: {lic}\n")
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in own + [f"{info.name}/RECORD"]))


class OfflineMachineTest(unittest.TestCase):
    """What a machine without network (a GPU machine) gets and gives back: a shard of part of the
    corpus, the installed Python packages added to it, a wall-clock budget, the pair in parts."""

    def corpus(self, d):
        """A work directory with sources of both sets and two languages, manifest included."""
        work = Path(d)
        (work / "data").mkdir(parents=True)
        small_tokenizer().save(work / "tokenizer.json")
        sources, n = [], 0
        with open(work / "data" / "corpus.jsonl", "w") as f:
            for name, set_, lang in (("py-old", "shipped", "python"), ("go-new", "added", "go"),
                                     ("py-new", "added", "python"), ("cpp-new", "added", "cpp")):
                st = dict(name=name, set=set_, lang=lang, license="MIT", origin="test", files_found=10,
                          files_unique=10, files_kept=10, bytes_kept=0, files_heldout=2, bytes_heldout=0)
                for i in range(10):
                    text = f"// {name} {i}\n" + "x = 1\n" * (10 + i)
                    n += 1
                    split = "heldout" if i < 2 else "train"
                    f.write(json.dumps(dict(source=name, lang=lang, path=f"{name}/{i}", sha256=f"{n:064x}",
                                            split=split, text=text)) + "\n")
                    st["bytes_kept"] += len(text)
                    st["bytes_heldout"] += len(text) if split == "heldout" else 0
                sources.append(st)
        manifest = dict(sources_set="all", seed=1234, heldout_fraction=0.03, cap_mb=20.0, duplicates_dropped=0,
                        sources=sources, train_bytes=sum(s["bytes_kept"] - s["bytes_heldout"] for s in sources),
                        heldout_bytes=sum(s["bytes_heldout"] for s in sources))
        (work / "data" / "manifest.json").write_text(json.dumps(manifest))
        return work

    def test_shard_of_the_added_sources(self):
        sys.path.insert(0, str(HERE))
        import pack
        with tempfile.TemporaryDirectory() as d:
            work = self.corpus(Path(d) / "w")
            full = json.loads((work / "data" / "manifest.json").read_text())
            added_train = sum(s["bytes_kept"] - s["bytes_heldout"] for s in full["sources"]
                              if s["set"] == "added" and s["lang"] != "python")
            shard = Path(d) / "shard.tar.xz"
            pack.corpus_pack(work, shard, preset=1, sets={"added"}, skip_langs=("python",),
                             max_train_mb=added_train / 2 / 1e6)
            other = Path(d) / "w2"
            pack.corpus_unpack(shard, other)
            docs = [json.loads(l) for l in (other / "data" / "corpus.jsonl").read_text().splitlines()]
            m = json.loads((other / "data" / "manifest.json").read_text())
            self.assertEqual({x["source"] for x in docs}, {"go-new", "cpp-new"})
            self.assertEqual([s["name"] for s in m["sources"]], ["go-new", "cpp-new"])
            # every held-out file stays; about half the training text, each source its share
            self.assertEqual(sum(x["split"] == "heldout" for x in docs), 4)
            train = sum(len(x["text"]) for x in docs if x["split"] == "train")
            self.assertLessEqual(train, added_train / 2)
            self.assertGreater(train, added_train / 4)
            self.assertEqual(m["train_bytes"], train)
            for st in m["sources"]:
                mine = [x for x in docs if x["source"] == st["name"]]
                self.assertEqual(st["files_kept"], len(mine))
                self.assertEqual(st["bytes_kept"], sum(len(x["text"]) for x in mine))
            self.assertEqual(m["selection"]["skip_langs"], ["python"])
            # the held-out files of the whole corpus, for a machine that adds sources of its own
            held = [json.loads(l)["sha256"] for l in (work / "data" / "corpus.jsonl").read_text().splitlines()
                    if json.loads(l)["split"] == "heldout"]
            self.assertEqual(m["exclude_sha256"], sorted(held))
            # the next window: other training files, the same held-out files
            shard2 = Path(d) / "shard2.tar.xz"
            pack.corpus_pack(work, shard2, preset=1, sets={"added"}, skip_langs=("python",),
                             max_train_mb=added_train / 2 / 1e6, window=1)
            third = Path(d) / "w3"
            pack.corpus_unpack(shard2, third)
            docs2 = [json.loads(l) for l in (third / "data" / "corpus.jsonl").read_text().splitlines()]
            self.assertEqual(json.loads((third / "data" / "manifest.json").read_text())["selection"]["window"], 1)
            first = {x["sha256"] for x in docs if x["split"] == "train"}
            second = {x["sha256"] for x in docs2 if x["split"] == "train"}
            self.assertTrue(second and not first & second)
            self.assertEqual({x["sha256"] for x in docs if x["split"] == "heldout"},
                             {x["sha256"] for x in docs2 if x["split"] == "heldout"})

    def test_windows_walk_the_files_as_a_ring(self):
        sys.path.insert(0, str(HERE))
        import pack
        files = [(f"{i:02x}", 10) for i in range(10)]  # 100 bytes
        self.assertEqual(pack.window_of(files, 0.3, 0), {"00", "01", "02"})
        self.assertEqual(pack.window_of(files, 0.3, 1), {"03", "04", "05"})
        self.assertEqual(pack.window_of(files, 0.3, 3), {"09", "00", "01"})  # wraps around
        self.assertEqual(pack.window_of(files, 1.0, 5), {sha for sha, _ in files})
        self.assertEqual(pack.window_of([], 0.5, 2), set())

    def test_licenses_from_package_metadata(self):
        import email.message
        import site_corpus

        def meta(**fields):
            msg = email.message.Message()
            for k, v in fields.items():
                for item in (v if isinstance(v, list) else [v]):
                    msg[k.replace("_", "-")] = item
            return msg

        ok = [meta(License_Expression="BSD-3-Clause"),
              meta(License_Expression="MIT OR Apache-2.0"),
              meta(License="MIT License"),
              meta(License="Apache License, Version 2.0"),
              meta(License="new BSD"),
              meta(Classifier=["License :: OSI Approved :: BSD License", "Programming Language :: Python"]),
              meta(Classifier="License :: OSI Approved :: Historical Permission Notice and Disclaimer (HPND)"),
              meta(License="Copyright (c) the authors\nPermission is hereby granted...",
                   Classifier="License :: OSI Approved :: MIT License")]
        for m in ok:
            lic, why = site_corpus.dist_license(m)
            self.assertIsNotNone(lic, (dict(m), why))
        no = [meta(License_Expression="GPL-3.0-or-later"),
              meta(License_Expression="MPL-2.0"),
              meta(License="GPLv3"),
              meta(Classifier="License :: OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)"),
              meta(License="MIT", Classifier="License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)"),
              meta(License="Copyright (c) the authors\nRedistribution and use..."),
              meta(Classifier="License :: OSI Approved"),
              meta()]
        for m in no:
            lic, why = site_corpus.dist_license(m)
            self.assertIsNone(lic, dict(m))
            self.assertTrue(why)
        self.assertEqual(site_corpus.top_level(["numpy/__init__.py", "numpy-2.0.dist-info/RECORD", "six.py",
                                                "../../bin/tool", "numpy/linalg/x.py"]), {"numpy", "six"})

    def test_installed_packages_bring_their_c_and_cpp_files_under_their_license(self):
        import io
        import site_corpus
        body = "".join(f"int f{i}(int x) {{ return x * {i} + 1; }}\n" for i in range(20))
        files = {
            "fakepkg/__init__.py": "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(20)),
            "fakepkg/include/fake.h": "// Copyright the fakepkg authors. MIT license.\n#pragma once\n" + body,
            "fakepkg/include/fake_impl.cu": "/* BSD-3-Clause */\n" + body,
            "fakepkg/include/cuda_like.h": "/* NOTICE TO LICENSEE: these Licensed Deliverables are... */\n" + body,
            "fakepkg/include/eigen_like.h": "// This Source Code Form is subject to the terms of the Mozilla\n"
                                            "// Public License v. 2.0.\n" + body,
            "fakepkg/include/gpl_like.c": "/* under the GNU General Public License, version 2 */\n" + body,
            "fakepkg/_vendor/other.h": body,
            "fakepkg/data.bin": "x",
            "torch/__init__.py": "".join(f"def g{i}(x):\n    return x - {i}\n\n" for i in range(20)),
            "torch/include/ATen/core.h": "// BSD-style license\n#pragma once\n" + body.replace("f", "g"),
        }
        dists = {"fakepkg": ("MIT", [f for f in files if f.startswith("fakepkg/")]),
                 "torch": ("BSD-3-Clause", [f for f in files if f.startswith("torch/")])}
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            installed(root, files, dists)
            log = io.StringIO()
            sources, skipped = site_corpus.site_sources({"torch"}, log=log, path=[str(root)])
            by = {s["name"]: s for s in sources}
            self.assertEqual(sorted(by), ["pip-fakepkg", "pip-fakepkg-cpp", "pip-torch-cpp"])
            self.assertEqual(by["pip-fakepkg"]["lang"], "python")
            self.assertEqual(by["pip-fakepkg-cpp"]["lang"], "cpp")
            self.assertEqual(by["pip-fakepkg-cpp"]["license"], "MIT (License-Expression)")
            names = {p.name for p in by["pip-fakepkg-cpp"]["files"]}
            self.assertEqual(names, {"fake.h", "fake_impl.cu", "cuda_like.h", "eigen_like.h", "gpl_like.c"})
            self.assertEqual([p.name for p in by["pip-torch-cpp"]["files"]], ["core.h"])
            self.assertEqual(len(skipped), 1)
            self.assertEqual(skipped[0][0], "torch")
            self.assertIn("its Python files", skipped[0][1])
            kept, other = site_corpus._collect((by["pip-fakepkg-cpp"], 200, 200_000))
            self.assertEqual(sorted(Path(p).name for p, _ in kept), ["fake.h", "fake_impl.cu"])
            self.assertEqual(other, 3)
        self.assertFalse(site_corpus.other_license("# Licensed under the Apache License, Version 2.0; you may "
                                                   "not use this file except in compliance with the License.\n"))
        self.assertFalse(site_corpus.other_license("Neither the name of X may be used to endorse or promote "
                                                   "products without specific prior written permission.\n"))

    def test_a_deadline_leaves_out_the_sources_not_read_by_then(self):
        files = {f"pkg{n}/__init__.py": "".join(f"def f{i}(x):\n    return x * {i} + {n}\n\n" for i in range(30))
                 for n in range(4)}
        dists = {f"pkg{n}": ("MIT", [f"pkg{n}/__init__.py"]) for n in range(4)}
        with tempfile.TemporaryDirectory() as d:
            installed(Path(d) / "site", files, dists)
            work = self.corpus(Path(d) / "w")
            env = dict(os.environ, PYTHONPATH=str(Path(d) / "site"))
            r = subprocess.run([sys.executable, str(HERE / "site_corpus.py"), "--workdir", str(work), "--jobs", "1",
                                "--deadline-s", "1e-9"], capture_output=True, text=True, timeout=600, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("sources not read", r.stderr)
            m = json.loads((work / "data" / "manifest.json").read_text())
            not_read = m["site_packages"]["sources_not_read"]
            self.assertTrue(not_read)
            docs = [json.loads(l) for l in (work / "data" / "corpus.jsonl").read_text().splitlines()]
            self.assertFalse({x["source"] for x in docs} & set(not_read))
            self.assertEqual(m["train_bytes"], sum(len(x["text"].encode()) for x in docs if x["split"] == "train"))

    def test_installed_packages_join_the_corpus_once(self):
        with tempfile.TemporaryDirectory() as d:
            work = self.corpus(Path(d) / "w")
            before = (work / "data" / "corpus.jsonl").read_bytes()
            r = subprocess.run([sys.executable, str(HERE / "site_corpus.py"), "--workdir", str(work), "--jobs", "2"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            after = (work / "data" / "corpus.jsonl").read_bytes()
            self.assertTrue(after.startswith(before))
            m = json.loads((work / "data" / "manifest.json").read_text())
            self.assertIn("site_packages", m)
            docs = [json.loads(l) for l in after.decode().splitlines()]
            self.assertEqual(len({x["sha256"] for x in docs}), len(docs))
            self.assertEqual(m["train_bytes"], sum(len(x["text"].encode()) for x in docs if x["split"] == "train"))
            for st in m["sources"]:
                if st["set"] == "site":
                    self.assertTrue(st["name"].startswith("pip-"))
                    self.assertEqual(st["lang"], "cpp" if st["name"].endswith("-cpp") else "python")
                    self.assertNotIn(st["name"], ("pip-numpy", "pip-torch", "pip-pip"))
            r = subprocess.run([sys.executable, str(HERE / "site_corpus.py"), "--workdir", str(work)],
                               capture_output=True, text=True, timeout=600)
            self.assertIn("already", r.stderr)
            self.assertEqual((work / "data" / "corpus.jsonl").read_bytes(), after)

    def test_a_wall_clock_budget_ends_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            work = tiny_workdir(Path(d) / "w")
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            r = subprocess.run([sys.executable, str(HERE / "train.py"), "--workdir", str(work), "--run", "t",
                                "--ctx", "32", "--batch", "2", "--threads", "1", "--device", "cpu", "--bf16", "off",
                                "--target", "32,2,2,1,64", "--draft", "32,1,1,1,32", "--total-tokens", "1e9",
                                "--stop-in", "4", "--grace-min", "0"],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            # The budget shrinks to what the deadline allows ("deadline: budget shrunk"), or, when
            # steps are too slow for that, the run stops past it ("deadline passed").
            self.assertRegex(r.stdout, r"deadline(: budget shrunk| passed)")
            self.assertTrue((work / "runs" / "t" / "DONE").exists() and (work / "runs" / "t" / "ckpt.pt").exists())

    def test_run_prepares_from_a_shard(self):
        sys.path.insert(0, str(HERE))
        import pack
        with tempfile.TemporaryDirectory() as d:
            work = self.corpus(Path(d) / "w")
            shard = Path(d) / "shard.tar.xz"
            pack.corpus_pack(work, shard, preset=1, sets={"added"})
            there = Path(d) / "there"
            env = dict(os.environ, GHOSTLINE_TRAIN_DIR=str(there), GHOSTLINE_TRAIN_NICE="0")
            r = subprocess.run([str(HERE / "run"), "--python", sys.executable, "--shard", str(shard),
                                "--site-packages", "--prepare-only"], capture_output=True, text=True, env=env,
                               timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("unpacked and verified", r.stderr)
            self.assertEqual((there / "tokenizer.json").read_bytes(), (work / "tokenizer.json").read_bytes())
            m = json.loads((there / "data" / "manifest.json").read_text())
            self.assertIn("site_packages", m)
            self.assertFalse((there / "runs").exists())

    def test_the_pair_travels_in_parts(self):
        sys.path.insert(0, str(HERE))
        import pack
        with tempfile.TemporaryDirectory() as d:
            src, out = Path(d) / "export", Path(d) / "out"
            src.mkdir()
            rng = np.random.default_rng(1)
            for name in pack.MODEL_FILES:
                (src / name).write_bytes(rng.bytes(40_000))
            idx = pack.models_split(src, out, max_mib=16 / 1024)  # 16 KiB parts
            index = json.loads(idx.read_text())
            self.assertEqual(set(index["members"]), set(pack.MODEL_FILES))
            parts = sorted(out.glob("models.tar.part[0-9]*"))
            self.assertEqual(len(parts), len(index["parts"]))
            self.assertTrue(all(p.stat().st_size <= 16 * 1024 for p in parts))
            self.assertFalse((out / "models.tar").exists())
            back = Path(d) / "back"
            pack.models_join(idx, back)
            for name in pack.MODEL_FILES:
                self.assertEqual((back / name).read_bytes(), (src / name).read_bytes())
            self.assertFalse((back / "models.tar").exists())
            # a damaged part is refused
            b = bytearray(parts[1].read_bytes())
            b[100] ^= 1
            parts[1].write_bytes(bytes(b))
            with self.assertRaises(SystemExit):
                pack.models_join(idx, Path(d) / "back2")
            # the run's record, with the corpus manifest, for card.py
            work = tiny_workdir(Path(d) / "w")
            run = work / "runs" / "r"
            run.mkdir(parents=True)
            for name in pack.RUN_FILES:
                (run / name).write_text(name)
            rec = pack.run_pack(run, work, Path(d) / "rec.tar.xz")
            dst = pack.run_unpack(rec, Path(d) / "here", "r")
            self.assertEqual((dst / "train.log").read_text(), "train.log")
            self.assertTrue((dst / "corpus-manifest.json").exists())


if __name__ == "__main__":
    unittest.main()
