#!/usr/bin/python3
"""Exports the target and draft of a training checkpoint to GGUF (llama architecture).

Writes <out>/ghostline-code.gguf (target) and <out>/ghostline-code-draft.gguf (draft), then
reads both back with GGUFReader and checks every tensor and the key metadata against the
checkpoint (exactly for F32/F16, within the Q8_0 rounding bound for Q8_0).
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gguf_writer import (GGML_F16, GGML_F32, GGML_Q8_0, QK8_0, T_FLOAT32, T_INT32,  # noqa: E402
                         T_STRING, T_UINT32, GGUFReader, GGUFWriter)
from model import Config  # noqa: E402
from tokenizer import SPECIALS, Tokenizer  # noqa: E402

PSM_TEMPLATE = "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
SPM_TEMPLATE = "<|fim_suffix|>{suffix}<|fim_prefix|>{prefix}<|fim_middle|>"
LICENSE = "Apache-2.0"


def tensor_map(state, cfg: Config):
    """(gguf name, torch tensor) in llama.cpp naming."""
    out = [("token_embd.weight", state["tok_emb.weight"])]
    for i in range(cfg.n_layers):
        p = f"layers.{i}."
        out += [
            (f"blk.{i}.attn_norm.weight", state[p + "attn_norm.weight"]),
            (f"blk.{i}.attn_q.weight", state[p + "attn.wq.weight"]),
            (f"blk.{i}.attn_k.weight", state[p + "attn.wk.weight"]),
            (f"blk.{i}.attn_v.weight", state[p + "attn.wv.weight"]),
            (f"blk.{i}.attn_output.weight", state[p + "attn.wo.weight"]),
            (f"blk.{i}.ffn_norm.weight", state[p + "ffn_norm.weight"]),
            (f"blk.{i}.ffn_gate.weight", state[p + "ffn.w_gate.weight"]),
            (f"blk.{i}.ffn_up.weight", state[p + "ffn.w_up.weight"]),
            (f"blk.{i}.ffn_down.weight", state[p + "ffn.w_down.weight"]),
        ]
    out.append(("output_norm.weight", state["norm.weight"]))
    if not cfg.tied:
        out.append(("output.weight", state["output.weight"]))
    return out


def write_gguf(path, name, state, cfg: Config, tok: Tokenizer, qtype, extra_meta):
    w = GGUFWriter()
    w.add("general.architecture", "llama")
    w.add("general.name", name)
    w.add("general.license", LICENSE)
    w.add("general.file_type", {GGML_F16: 1, GGML_Q8_0: 7, GGML_F32: 0}[qtype], T_UINT32)
    w.add("general.alignment", 32, T_UINT32)
    w.add("llama.context_length", cfg.ctx, T_UINT32)
    w.add("llama.embedding_length", cfg.dim, T_UINT32)
    w.add("llama.block_count", cfg.n_layers, T_UINT32)
    w.add("llama.feed_forward_length", cfg.ffn_dim, T_UINT32)
    w.add("llama.attention.head_count", cfg.n_heads, T_UINT32)
    w.add("llama.attention.head_count_kv", cfg.n_kv_heads, T_UINT32)
    w.add("llama.rope.freq_base", float(cfg.rope_base), T_FLOAT32)
    w.add("llama.attention.layer_norm_rms_epsilon", float(cfg.norm_eps), T_FLOAT32)
    w.add("llama.rope.dimension_count", cfg.head_dim, T_UINT32)
    w.add("llama.vocab_size", tok.vocab_size, T_UINT32)
    w.add("tokenizer.ggml.model", "gpt2")
    w.add("tokenizer.ggml.pre", "qwen2")
    w.add("tokenizer.ggml.tokens", tok.tokens, T_STRING)
    n_normal = tok.vocab_size - len(SPECIALS)
    w.add("tokenizer.ggml.token_type", [1] * n_normal + [3] * len(SPECIALS), T_INT32)
    w.add("tokenizer.ggml.merges", [f"{a} {b}" for a, b in tok.merges], T_STRING)
    s = tok.special
    for key, tname in [("bos_token_id", "<|endoftext|>"), ("eos_token_id", "<|endoftext|>"),
                       ("eot_token_id", "<|endoftext|>"), ("padding_token_id", "<|fim_pad|>"),
                       ("fim_pre_token_id", "<|fim_prefix|>"), ("fim_suf_token_id", "<|fim_suffix|>"),
                       ("fim_mid_token_id", "<|fim_middle|>"), ("fim_pad_token_id", "<|fim_pad|>"),
                       ("fim_sep_token_id", "<|file_sep|>"), ("fim_rep_token_id", "<|repo_name|>")]:
        w.add(f"tokenizer.ggml.{key}", s[tname], T_UINT32)
    w.add("tokenizer.ggml.add_bos_token", False)
    w.add("tokenizer.ggml.add_eos_token", False)
    # The model is trained on both templates and says so. An SPM template tells Ghostline's
    # daemon it may build SPM prompts, which change only at their end while the user types.
    w.add("ghostline.fim.psm_template", PSM_TEMPLATE)
    w.add("ghostline.fim.spm_template", SPM_TEMPLATE)
    for k, v in extra_meta.items():
        w.add(k, v)
    for tname, t in tensor_map(state, cfg):
        a = t.detach().float().numpy()
        if a.ndim == 1:
            tt = GGML_F32  # norms stay F32
        elif qtype == GGML_Q8_0 and a.shape[-1] % QK8_0 != 0:
            tt = GGML_F16  # rows that do not split into Q8_0 blocks
        else:
            tt = qtype
        w.add_tensor(tname, a, tt)
    w.write(path)
    verify(path, state, cfg, tok)


def verify(path, state, cfg, tok):
    r = GGUFReader(path)
    m = r.meta
    assert r.version == 3
    assert m["general.architecture"] == "llama"
    assert m["llama.block_count"] == cfg.n_layers and m["llama.embedding_length"] == cfg.dim
    assert m["tokenizer.ggml.tokens"] == tok.tokens
    assert m["tokenizer.ggml.merges"][:3] == [f"{a} {b}" for a, b in tok.merges[:3]]
    types = r.tensor_types()
    for tname, t in tensor_map(state, cfg):
        a = t.detach().float().numpy()
        b = r.tensor(tname)
        assert b.shape == a.shape, (tname, b.shape, a.shape)
        if types[tname] == "F32":
            assert np.array_equal(a, b), tname
        elif types[tname] == "F16":
            assert np.array_equal(a.astype(np.float16).astype(np.float32), b), tname
        else:  # Q8_0: half a step, plus 127 x the f16 rounding of the scale (2^-11 relative)
            d = np.abs(a.reshape(-1, QK8_0)).max(axis=1) / 127.0
            err = np.abs(a - b).reshape(-1, QK8_0).max(axis=1)
            assert np.all(err <= d * (0.5 + 127 * 2.0**-11) * 1.001 + 1e-9), tname
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--target-type", choices=["f16", "q8_0"], default="q8_0")
    ap.add_argument("--draft-type", choices=["f16", "q8_0"], default="f16")
    args = ap.parse_args()
    tok = Tokenizer.load(Path(args.workdir) / "tokenizer.json")
    st = torch.load(args.ckpt, map_location="cpu")
    meta = st["meta"]
    qt = {"f16": GGML_F16, "q8_0": GGML_Q8_0}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = {"ghostline.train.tokens": str(st["tokens_seen"]), "ghostline.train.seed": str(meta["seed"])}
    for key, fname, name, ttype in [("target", "ghostline-code.gguf", "ghostline-code", args.target_type),
                                    ("draft", "ghostline-code-draft.gguf", "ghostline-code-draft",
                                     args.draft_type)]:
        cfg = Config(**meta[key])
        path = out / fname
        write_gguf(path, name, st[key], cfg, tok, qt[ttype], extra)
        print(f"{path}: {path.stat().st_size} bytes, {ttype}, verified", file=sys.stderr)


if __name__ == "__main__":
    main()
