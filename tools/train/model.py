"""A llama-architecture decoder in PyTorch, laid out so that it exports 1:1 to GGUF `llama`.

RMSNorm, SwiGLU feed-forward, grouped-query attention, rotary embeddings in llama.cpp's
"normal" mode: pairs (x[2i], x[2i+1]) are rotated by pos * base^(-2i/head_dim), so Q/K rows
need no permutation at export. Embeddings may be tied (no output.weight in the GGUF).
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 8192
    dim: int = 256
    n_layers: int = 6
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_dim: int = 704
    ctx: int = 512
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    tied: bool = True

    @property
    def head_dim(self):
        return self.dim // self.n_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg: Config, length: int, device=None):
    hd = cfg.head_dim
    inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()  # [T, hd/2]


def apply_rope(x, cos, sin):
    # x: [B, H, T, hd]; rotate adjacent pairs (GPT-J / llama.cpp "normal" mode)
    xr = x.view(*x.shape[:-1], -1, 2)
    x0, x1 = xr[..., 0], xr[..., 1]
    y0 = x0 * cos - x1 * sin
    y1 = x0 * sin + x1 * cos
    return torch.stack((y0, y1), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)

    def forward(self, x, cos, sin, past=None):
        B, T, _ = x.shape
        c = self.cfg
        hd = c.head_dim
        q = self.wq(x).view(B, T, c.n_heads, hd).transpose(1, 2)
        k = self.wk(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        v = self.wv(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        if past is not None:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
        present = (k, v)
        rep = c.n_heads // c.n_kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        S = k.shape[2]
        if past is None and T > 1 and hasattr(F, "scaled_dot_product_attention"):
            # torch >= 2.0: the fused (flash) kernel on CUDA, same function as below.
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            if T > 1:
                mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
                att = att.masked_fill(~mask, float("-inf"))
            y = att.softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, c.n_heads * hd)
        return self.wo(y), present


class FeedForward(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_down = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x, cos, sin, past=None):
        a, present = self.attn(self.attn_norm(x), cos, sin, past)
        x = x + a
        x = x + self.ffn(self.ffn_norm(x))
        return x, present


class Transformer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = None if cfg.tied else nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg, cfg.ctx * 4)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, past=None, pos0=0):
        """idx [B, T] -> logits [B, T, V]; with past (list of per-layer (k, v)) returns the new
        cache too, for incremental decoding."""
        T = idx.shape[1]
        cos = self.rope_cos[pos0:pos0 + T]
        sin = self.rope_sin[pos0:pos0 + T]
        x = self.tok_emb(idx)
        presents = []
        for i, layer in enumerate(self.layers):
            x, pr = layer(x, cos, sin, None if past is None else past[i])
            presents.append(pr)
        x = self.norm(x)
        w = self.tok_emb.weight if self.output is None else self.output.weight
        logits = x @ w.t()
        return logits, presents
