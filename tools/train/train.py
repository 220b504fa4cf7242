#!/usr/bin/python3
"""Trains the target and the draft model together, on the same batches, with checkpoints.

Both models see identical rows (plain code and FIM, see data.py). The draft is trained on the
cross-entropy plus a distillation term toward the target's (detached) next-token distribution,
which raises its speculative acceptance rate. Learning rate: linear warmup, constant, then a
linear decay over the last `--decay-frac` of the run (warmup-stable-decay), so a longer run can
resume from the checkpoint taken just before the decay (ckpt-predecay.pt) with a larger budget.

Progress (tokens/s, losses, ETA) goes to <run>/train.log and <run>/metrics.jsonl.
"""
import argparse
import json
import math
import os
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import RowBuilder, load_splits  # noqa: E402
from model import Config, Transformer  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

# v2 sizes, chosen for ~90 minutes of 2 shared CPU cores (see README.md): every matrix width a
# multiple of 32 so that all of them export as Q8_0; the draft is ~8x smaller than the target.
TARGET = dict(dim=256, n_layers=4, n_heads=4, n_kv_heads=1, ffn_dim=704)
DRAFT = dict(dim=64, n_layers=2, n_heads=1, n_kv_heads=1, ffn_dim=192)


def cpu_has_bf16():
    """True when the CPU has native bfloat16 dot products (oneDNN then runs bf16 matmuls several
    times faster than fp32; without them bf16 autocast is emulated and slower)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def shape(spec, default):
    if not spec:
        return default
    dim, n_layers, n_heads, n_kv_heads, ffn_dim = (int(x) for x in spec.split(","))
    return dict(dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, ffn_dim=ffn_dim)


def use_bf16(mode, device):
    if mode == "on":
        return True
    if mode == "off":
        return False
    return device == "cuda" or cpu_has_bf16()


def log(run, msg):
    line = f"{datetime.now().strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(run / "train.log", "a") as f:
        f.write(line + "\n")


def lr_at(step, total, warmup, decay_frac, peak, floor=0.1):
    if step < warmup:
        return peak * (step + 1) / warmup
    decay_start = int(total * (1 - decay_frac))
    if step < decay_start:
        return peak
    t = (step - decay_start) / max(1, total - decay_start)
    return peak * (1 - (1 - floor) * min(1.0, t))


def make_opt(model, lr, wd):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


def save_ckpt(path, state):
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


_ROWS = None  # the RowBuilder that forked workers inherit


def _make_batch(seed, step, batch):
    return _ROWS.batch(seed, step, batch)


class BatchStream:
    """Batches for consecutive steps, built ahead by worker processes.

    Row building (BPE encoding in Python) costs about as much per token as a training step of a
    small model on a GPU, so `workers` processes build the next `ahead` batches while the current
    one trains. A batch is a pure function of (seed, step), so results do not depend on the
    number of workers; with 0 workers batches are built inline.
    """

    def __init__(self, rows, seed, batch, workers, ahead=None):
        global _ROWS
        _ROWS = rows
        self.rows, self.seed, self.batch = rows, seed, batch
        self.pool = None
        self.pending = {}
        self.ahead = ahead or 2 * workers
        if workers > 0:
            import multiprocessing as mp
            self.pool = mp.get_context("fork").Pool(workers)

    def get(self, step):
        if self.pool is None:
            return self.rows.batch(self.seed, step, self.batch)
        for s in range(step, step + self.ahead):
            if s not in self.pending:
                self.pending[s] = self.pool.apply_async(_make_batch, (self.seed, s, self.batch))
        for s in [s for s in self.pending if s < step]:
            del self.pending[s]
        return self.pending.pop(step).get()

    def close(self):
        if self.pool is not None:
            self.pool.terminate()


@torch.no_grad()
def val_loss(models, batch, device="cpu", bf16=False):
    x = torch.from_numpy(batch).to(device)
    out = []
    for m in models:
        m.eval()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            logits, _ = m(x[:, :-1])
        logits = logits.float()
        out.append(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)).item())
        m.train()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--run", default="run1", help="run directory name under <workdir>/runs")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--total-tokens", type=float, default=8e6, help="token budget of the run")
    ap.add_argument("--batch", type=int, default=8, help="rows per step")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--draft-lr", type=float, default=3e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--decay-frac", type=float, default=0.25)
    ap.add_argument("--fim-rate", type=float, default=0.6, help="share of FIM rows")
    ap.add_argument("--spm-rate", type=float, default=0.8,
                    help="share of FIM rows in the SPM template (the one the daemon sends these models); "
                         "the rest PSM")
    ap.add_argument("--span-rate", type=float, default=0.2, help="share of FIM middles that are random spans")
    ap.add_argument("--block-rate", type=float, default=0.2,
                    help="share of FIM middles that are the body of a block after its opening line; the "
                         "rest end at a line end (70%% the rest of one line, 30%% up to 4 more lines)")
    ap.add_argument("--distill", type=float, default=0.5, help="weight of the draft's KL term")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="torch intra-op threads (oneDNN's bf16 matmuls use these, not OpenBLAS's)")
    ap.add_argument("--bf16", choices=("auto", "on", "off"), default="auto",
                    help="bfloat16 autocast for the matmuls; weights, optimizer state and losses stay "
                         "float32. auto: on for CUDA and for CPUs with AVX512-BF16/AMX-BF16 (measured "
                         "1.5x faster than fp32 on 2 shared Xeon cores), off elsewhere")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="auto: cuda when torch sees a GPU, else cpu")
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                    help="torch.compile the models (auto: on CUDA when this torch has it)")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes that build batches ahead (default: 0 on the CPU, cores - 2 on CUDA)")
    ap.add_argument("--ckpt-every", type=int, default=20, help="steps between checkpoints")
    ap.add_argument("--val-every", type=int, default=50)
    ap.add_argument("--stop-by", default=None,
                    help="HH:MM wall-clock deadline: if the budget cannot finish by then, shrink it "
                         "(the decay still runs) and log the change")
    ap.add_argument("--stop-in", type=float, default=None, metavar="SECONDS",
                    help="deadline this many seconds after the start, as --stop-by (for a machine lent "
                         "for a fixed time)")
    ap.add_argument("--grace-min", type=float, default=4.0,
                    help="minutes past --stop-by after which the run stops wherever it is")
    ap.add_argument("--resume", action="store_true", help="continue <run>/ckpt.pt")
    ap.add_argument("--init-from", default=None,
                    help="start from another checkpoint's weights and optimizer (e.g. a previous "
                         "run's ckpt-predecay.pt) and train to --total-tokens")
    ap.add_argument("--target", default=None, metavar="DIM,LAYERS,HEADS,KV_HEADS,FFN",
                    help=f"target shape instead of {TARGET}")
    ap.add_argument("--draft", default=None, metavar="DIM,LAYERS,HEADS,KV_HEADS,FFN",
                    help=f"draft shape instead of {DRAFT}")
    ap.add_argument("--init-gguf", nargs=2, metavar=("TARGET", "DRAFT"), default=None,
                    help="continue training from the weights of shipped GGUF files (dequantized; the "
                         "architecture comes from their metadata, the optimizer starts fresh and re-warms)")
    args = ap.parse_args()
    t_process = time.time()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    bf16 = use_bf16(args.bf16, device)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    work = Path(args.workdir)
    run = work / "runs" / args.run
    run.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.load(work / "tokenizer.json")
    splits = load_splits(work / "data" / "corpus.jsonl")
    docs, held = splits["train"], splits["heldout"]
    rows = RowBuilder(tok, docs, args.ctx, fim_rate=args.fim_rate, spm_rate=args.spm_rate,
                      span_rate=args.span_rate, block_rate=args.block_rate)
    val_rows = RowBuilder(tok, held, args.ctx)
    val_batch = val_rows.batch(args.seed + 1, 0, 8)

    target = draft = None
    if args.init_gguf and not (args.resume and (run / "ckpt.pt").exists()):
        from eval import load_gguf_model
        target, ttok, _ = load_gguf_model(args.init_gguf[0])
        draft, dtok, _ = load_gguf_model(args.init_gguf[1])
        assert ttok.tokens == tok.tokens and dtok.tokens == tok.tokens, "--init-gguf: other vocabulary"
        target.train(), draft.train()
        tcfg, dcfg = target.cfg, draft.cfg
        log(run, f"initialized from {args.init_gguf[0]} and {args.init_gguf[1]}")
    elif args.init_gguf:  # resuming such a run: same architecture, weights from ckpt.pt
        from eval import load_gguf_model
        tcfg = load_gguf_model(args.init_gguf[0])[0].cfg
        dcfg = load_gguf_model(args.init_gguf[1])[0].cfg
    else:
        tcfg = Config(vocab_size=tok.vocab_size, ctx=args.ctx, **shape(args.target, TARGET))
        dcfg = Config(vocab_size=tok.vocab_size, ctx=args.ctx, **shape(args.draft, DRAFT))
    assert tcfg.ctx == args.ctx and dcfg.ctx == args.ctx
    target = (target or Transformer(tcfg)).to(device)
    draft = (draft or Transformer(dcfg)).to(device)
    opt_t = make_opt(target, args.lr, args.wd)
    opt_d = make_opt(draft, args.draft_lr, args.wd)
    tokens_per_step = args.batch * args.ctx
    total_steps = int(math.ceil(args.total_tokens / tokens_per_step))
    step, tokens_seen, train_secs = 0, 0, 0.0
    frozen_total = None
    src = None
    if args.resume and (run / "ckpt.pt").exists():
        src = run / "ckpt.pt"
    elif args.init_from:
        src = Path(args.init_from)
    if src is not None:
        st = torch.load(src, map_location=device)
        target.load_state_dict(st["target"])
        draft.load_state_dict(st["draft"])
        opt_t.load_state_dict(st["opt_target"])
        opt_d.load_state_dict(st["opt_draft"])
        step, tokens_seen, train_secs = st["step"], st["tokens_seen"], st["train_secs"]
        if args.resume:
            frozen_total = st.get("frozen_total")
        log(run, f"resumed from {src} at step {step} ({tokens_seen} tokens, {train_secs:.0f}s)")
    meta = dict(init_gguf=args.init_gguf, seed=args.seed, target=tcfg.to_dict(), draft=dcfg.to_dict(), args=vars(args),
                target_params=target.n_params(), draft_params=draft.n_params())
    (run / "config.json").write_text(json.dumps(meta, indent=1))
    log(run, f"target {target.n_params()} params {tcfg}; draft {draft.n_params()} params {dcfg}; "
             f"{tokens_per_step} tokens/step, budget {total_steps} steps")
    do_compile = args.compile == "on" or (args.compile == "auto" and device == "cuda")
    if do_compile and not hasattr(torch, "compile"):
        log(run, f"torch {torch.__version__} has no torch.compile: running eagerly")
        do_compile = False
    # Checkpoints hold the plain modules' state; the compiled wrappers only run the steps.
    run_t = torch.compile(target) if do_compile else target
    run_d = torch.compile(draft) if do_compile else draft
    log(run, f"device {device}, bf16 autocast {'on' if bf16 else 'off'}, compile {'on' if do_compile else 'off'}, "
             f"{torch.get_num_threads()} threads, torch {torch.__version__}")

    deadline = None
    if args.stop_in is not None:
        deadline = t_process + args.stop_in
    elif args.stop_by:
        hh, mm = map(int, args.stop_by.split(":"))
        now = datetime.now()
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
        if deadline < now.timestamp():
            deadline += 86400

    rates = []
    if step > 0 and (run / "metrics.jsonl").exists():  # keep the measured speed across a resume
        with open(run / "metrics.jsonl") as f:
            rates = [json.loads(l)["step_s"] for l in f][-200:]
    predecay_saved = (run / "ckpt-predecay.pt").exists()
    workers = args.workers if args.workers is not None else (
        max(1, (os.cpu_count() or 2) - 2) if device == "cuda" else 0)
    stream = BatchStream(rows, args.seed, args.batch, workers)
    steps_here = 0
    while True:
        total = frozen_total or total_steps
        if deadline is not None and frozen_total is None and len(rates) >= 5:
            # Conservative: CPU share swings with other work on the machine.
            sec_per_step = max(float(np.median(rates[-30:])), float(np.mean(rates[-200:])))
            reachable = step + int((deadline - time.time()) / sec_per_step)
            if reachable < total:
                total = max(step + 1, reachable)
        decay_start = int(total * (1 - args.decay_frac))
        if step >= decay_start and frozen_total is None:
            frozen_total = total  # once decaying, the end no longer moves
            if total != total_steps:
                log(run, f"deadline: budget shrunk to {total} steps ({total * tokens_per_step} tokens)")
        if step >= total:
            break
        if deadline is not None and time.time() > deadline + args.grace_min * 60:
            log(run, f"deadline passed by {args.grace_min} min: stopping at step {step}")
            break
        if step >= decay_start and not predecay_saved:
            save_ckpt(run / "ckpt-predecay.pt", ckpt_state(target, draft, opt_t, opt_d, step, tokens_seen,
                                                        train_secs, None, meta))
            predecay_saved = True
        t0 = time.time()
        batch = torch.from_numpy(stream.get(step)).to(device, non_blocking=True)
        x, y = batch[:, :-1], batch[:, 1:].reshape(-1)
        lr_t = lr_at(step, total, args.warmup, args.decay_frac, args.lr)
        lr_d = lr_at(step, total, args.warmup, args.decay_frac, args.draft_lr)
        for g in opt_t.param_groups:
            g["lr"] = lr_t
        for g in opt_d.param_groups:
            g["lr"] = lr_d

        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            logits_t, _ = run_t(x)
        logits_t = logits_t.float().reshape(-1, logits_t.shape[-1])
        loss_t = F.cross_entropy(logits_t, y)
        opt_t.zero_grad(set_to_none=True)
        loss_t.backward()
        torch.nn.utils.clip_grad_norm_(target.parameters(), 1.0)
        opt_t.step()

        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            logits_d, _ = run_d(x)
        logits_d = logits_d.float().reshape(-1, logits_d.shape[-1])
        ce_d = F.cross_entropy(logits_d, y)
        loss_d = ce_d
        if args.distill > 0:
            with torch.no_grad():
                p_t = F.softmax(logits_t.detach(), dim=-1)
            kl = F.kl_div(F.log_softmax(logits_d, dim=-1), p_t, reduction="batchmean")
            loss_d = (1 - args.distill) * ce_d + args.distill * kl
        opt_d.zero_grad(set_to_none=True)
        loss_d.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt_d.step()
        del logits_t, logits_d

        loss_t_v, ce_d_v = loss_t.item(), ce_d.item()  # (waits for the GPU, so dt is honest)
        dt = time.time() - t0
        # The first steps of a process compile the models (torch.compile) and start CUDA: they
        # say nothing of the speed that the deadline is planned with.
        if steps_here >= 2:
            rates.append(dt)
        steps_here += 1
        train_secs += dt
        step += 1
        tokens_seen += tokens_per_step
        recent = float(np.median(rates[-30:])) if rates else dt
        eta = (total - step) * recent
        rec = dict(step=step, tokens=tokens_seen, loss_target=loss_t_v, loss_draft_ce=ce_d_v,
                   lr=lr_t, step_s=dt, tok_s=tokens_per_step / dt, train_secs=train_secs, total_steps=total)
        if step % args.val_every == 0 or step == total:
            rec["val_target"], rec["val_draft"] = val_loss([target, draft], val_batch, device, bf16)
        with open(run / "metrics.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        extra = f" val {rec['val_target']:.3f}/{rec['val_draft']:.3f}" if "val_target" in rec else ""
        log(run, f"step {step}/{total} tok {tokens_seen} loss {loss_t_v:.3f} draft {ce_d_v:.3f}"
                 f"{extra} lr {lr_t:.2e} {tokens_per_step / recent:.0f} tok/s ETA {eta / 60:.1f} min")
        if step % args.ckpt_every == 0 or step == total:
            save_ckpt(run / "ckpt.pt", ckpt_state(target, draft, opt_t, opt_d, step, tokens_seen,
                                                  train_secs, frozen_total, meta))
    stream.close()
    save_ckpt(run / "ckpt.pt", ckpt_state(target, draft, opt_t, opt_d, step, tokens_seen, train_secs,
                                          frozen_total, meta))
    (run / "DONE").write_text(json.dumps(dict(step=step, tokens_seen=tokens_seen, train_secs=train_secs)))
    log(run, f"done: {step} steps, {tokens_seen} tokens, {train_secs / 60:.1f} min of training")


def ckpt_state(target, draft, opt_t, opt_d, step, tokens_seen, train_secs, frozen_total, meta):
    return dict(target=target.state_dict(), draft=draft.state_dict(), opt_target=opt_t.state_dict(),
                opt_draft=opt_d.state_dict(), step=step, tokens_seen=tokens_seen, train_secs=train_secs,
                frozen_total=frozen_total, meta=meta)


if __name__ == "__main__":
    main()
