"""Speculative decoding end to end, with a real target and draft, on this machine.

Random weights cannot measure acceptance: how often a draft guesses right depends on what the
weights say. With a real target and draft, :func:`speculate` runs the standard greedy
draft-then-verify loop end to end and reports the tokens accepted per step. llama.cpp's own
speculative decoding (its ``common`` library, behind ``llama-speculative`` and
``llama-server``) is not part of the C API the binding wraps, so that loop is napkin's, on
``llama_decode``. Chapter 10 and ``python -m napkin verify --model --draft`` use it.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import numpy as np

from . import machine, session
from .inprocess import InProcess
from .results import MeasurementUnavailable
from .inputs import check_model

SPECULATE_SCHEMA = "napkin.measure.speculate/1"

PROMPT = ("Speculative decoding lets a small draft model propose several tokens that the large "
          "model then checks in a single forward pass. Explain, step by step, why this makes "
          "generation faster on a machine whose memory bandwidth, not its arithmetic, limits "
          "how quickly each token is produced, and when it stops helping.")


def native_speculative_available() -> tuple[bool, str]:
    """Whether the binding exposes llama.cpp's own speculative decoding, and what it has."""
    try:
        import llama_cpp
    except ImportError:
        return False, "llama-cpp-python is not installed"
    names = [n for n in dir(llama_cpp) if n.startswith("common_speculative")]
    if names:
        return True, ", ".join(names)
    return False, ("llama-cpp-python wraps llama.cpp's C API, and llama.cpp's speculative "
                   "decoding lives in its common library (llama-speculative, llama-server), "
                   "outside that API")


class _Greedy:
    """One model in one context: feed tokens, read the argmax at every position fed."""

    def __init__(self, runner: InProcess, model, n_ctx: int):
        self.llama, self.runner = runner.llama, runner
        self.ctx = runner.context(model, n_ctx)
        self.vocab = self.llama.llama_vocab_n_tokens(self.llama.llama_model_get_vocab(model))
        self.batch = self.llama.llama_batch_init(max(512, n_ctx), 0, 1)
        self.memory = self.llama.llama_get_memory(self.ctx)

    def feed(self, tokens: list[int], pos: int, logits: bool = True) -> list[int]:
        """Decode ``tokens`` at ``pos``...; the argmax after each (if ``logits``)."""
        out, chunk = [], self.llama.llama_n_batch(self.ctx)
        for first in range(0, len(tokens), chunk):
            part = tokens[first:first + chunk]
            for j, t in enumerate(part):
                self.batch.token[j] = t
                self.batch.pos[j] = pos + first + j
                self.batch.n_seq_id[j] = 1
                self.batch.seq_id[j][0] = 0
                self.batch.logits[j] = logits or first + j == len(tokens) - 1
            self.batch.n_tokens = len(part)
            rc = self.llama.llama_decode(self.ctx, self.batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed with code {rc}")
            for j in range(len(part)):
                if logits or first + j == len(tokens) - 1:
                    row = self.llama.llama_get_logits_ith(self.ctx, j)
                    out.append(int(np.argmax(np.ctypeslib.as_array(row, (self.vocab,)))))
        return out

    def trim(self, keep: int) -> None:
        self.llama.llama_memory_seq_rm(self.memory, 0, keep, -1)

    def clear(self) -> None:
        self.llama.llama_memory_clear(self.memory, True)

    def close(self) -> None:
        self.llama.llama_batch_free(self.batch)
        self.llama.llama_free(self.ctx)


def _tokenize(llama, model, text: str) -> list[int]:
    vocab = llama.llama_model_get_vocab(model)
    raw = text.encode()
    buf = (llama.llama_token * (len(raw) + 8))()
    n = llama.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, False)
    if n < 0:  # the buffer was short: -n is what it needs
        buf = (llama.llama_token * -n)()
        n = llama.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, False)
    if n < 1:
        raise ValueError("the prompt tokenized to nothing")
    return list(buf[:n])


def _plain(big: _Greedy, ids: list[int], n_tokens: int) -> tuple[list[int], float]:
    """The target alone, greedy: ``n_tokens`` tokens after the prompt ``ids``, and the seconds
    they took (a warm-up pass first; the prompt's own pass is not timed)."""
    big.feed(ids, 0, logits=False)  # warm-up and the prompt's cache
    big.clear()
    nxt = big.feed(ids, 0, logits=False)[-1]
    start = time.perf_counter_ns()
    plain = [nxt]
    while len(plain) < n_tokens:
        plain.append(big.feed([plain[-1]], len(ids) + len(plain) - 1)[0])
    return plain, (time.perf_counter_ns() - start) / 1e9


def _drafted(big: _Greedy, small: _Greedy, ids: list[int], k: int,
             n_tokens: int) -> tuple[list[int], int, int, float]:
    """Greedy draft-then-verify after the prompt ``ids``: each cycle ``small`` proposes ``k``
    tokens, one step of ``big`` checks them all and keeps the agreeing ones plus its own next
    token. Returns the tokens, the cycles, the drafted tokens accepted and the seconds (the
    prompt's passes not timed)."""
    big.clear()
    small.clear()
    cur = big.feed(ids, 0, logits=False)[-1]
    small.feed(ids, 0, logits=False)
    pos, out, cycles, accepted, pending = len(ids), [cur], 0, 0, []
    start = time.perf_counter_ns()
    while len(out) < n_tokens:
        guess = small.feed(pending + [cur], pos - len(pending))[-1:]
        while len(guess) < k:
            guess += small.feed([guess[-1]], pos + len(guess))
        checks = big.feed([cur] + guess, pos)
        n_ok = 0
        while n_ok < k and guess[n_ok] == checks[n_ok]:
            n_ok += 1
        new = guess[:n_ok] + [checks[n_ok]]
        cycles += 1
        accepted += n_ok
        big.trim(pos + n_ok + 1)
        small.trim(pos + min(n_ok, k - 1) + 1)
        pending = [guess[-1]] if n_ok == k else []
        out += new
        pos += n_ok + 1
        cur = out[-1]
    return out, cycles, accepted, (time.perf_counter_ns() - start) / 1e9


def speculate(target: str | Path, draft: str | Path, k: int = 4, n_tokens: int = 128,
              prompt: str = PROMPT, threads: int | None = None,
              progress=session.quiet) -> dict:
    """Greedy decoding of ``n_tokens`` tokens by ``target`` alone, then with ``draft``
    proposing ``k`` tokens per cycle that one target step verifies: tokens per second of
    both, tokens per cycle (accepted drafted tokens plus the target's own), and whether the
    two outputs agree (greedy speculative decoding is exact up to the last bits of the
    arithmetic, which differ between a one-token and a many-token step)."""
    from ..speculative.acceptance import require_drafts

    k = require_drafts(k)
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1:
        raise ValueError(f"n_tokens must be a whole number >= 1, got {n_tokens!r}")
    paths = check_model(target), check_model(draft)
    if paths[1].stat().st_size > paths[0].stat().st_size:
        raise ValueError(f"the draft ({paths[1].name}) is larger than the target "
                         f"({paths[0].name}); a draft must cost less than what it drafts for")
    runner = InProcess(threads=threads)
    llama = runner.llama
    models = [runner.load(p) for p in paths]
    engines = []
    try:
        sizes = [runner.model_info(m).to_dict() for m in models]
        if sizes[0]["n_vocab"] != sizes[1]["n_vocab"]:
            raise ValueError(f"the draft's vocabulary ({sizes[1]['n_vocab']} tokens) is not "
                             f"the target's ({sizes[0]['n_vocab']}); a draft must propose the "
                             "target's tokens")
        ids = _tokenize(llama, models[0], prompt)
        n_ctx = len(ids) + n_tokens + k + 8
        engines = [_Greedy(runner, m, n_ctx) for m in models]
        big, small = engines
        progress(f"plain greedy decoding of {n_tokens} tokens")
        plain, plain_s = _plain(big, ids, n_tokens)
        progress(f"speculative: the draft proposes {k}, one target step verifies")
        out, cycles, accepted, spec_s = _drafted(big, small, ids, k, n_tokens)
    finally:
        for e in engines:
            e.close()
        for m in models:
            llama.llama_model_free(m)
    n = min(len(out), n_tokens)
    agree = next((i for i, (a, b) in enumerate(zip(out[:n], plain[:n])) if a != b), n)
    return {
        "schema": SPECULATE_SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine.describe(runner.threads), "runner": runner.info().to_dict(),
        "target": {"path": str(paths[0]), **sizes[0]}, "draft": {"path": str(paths[1]),
                                                                 **sizes[1]},
        "k": k, "n_tokens": n_tokens, "prompt_tokens": len(ids),
        "plain_tok_per_s": (len(plain) - 1) / plain_s,
        "speculative_tok_per_s": (len(out) - 1) / spec_s,
        "cycles": cycles, "accepted_drafted": accepted,
        "tokens_per_cycle": (accepted + cycles) / cycles,
        "acceptance_rate": accepted / (cycles * k),
        "speedup": (len(out) - 1) / spec_s / ((len(plain) - 1) / plain_s),
        "outputs_agree_for_tokens": agree,
        "native_speculative": native_speculative_available()[1],
    }


def speculate_live(target: str | None, draft: str | None, k: int = 4,
                   n_tokens: int = 128) -> dict | None:
    """For a notebook cell: the end-to-end run when a reader names a real target and draft
    (``NAPKIN_TARGET`` and ``NAPKIN_DRAFT``), else one sentence on why not (None)."""
    if not target or not draft:
        print("No end-to-end speculative run: set NAPKIN_TARGET and NAPKIN_DRAFT to a real "
              "GGUF model and a smaller draft sharing its vocabulary (random weights cannot "
              "accept anything).")
        return None
    try:
        return speculate(target, draft, k, n_tokens)
    except (MeasurementUnavailable, ValueError) as err:
        print(f"No end-to-end speculative run: {err}.")
        return None


def speculate_sentence(result: dict | None) -> str:
    """The end-to-end result in Markdown (numbers computed)."""
    ok, why = native_speculative_available()
    native = ("" if ok else f" (llama.cpp's own speculative decoding is not available through "
                            f"the binding: {why}; the loop here is the standard greedy one, "
                            f"on llama_decode)")
    if result is None:
        return ("No real target and draft were given where this page was built, so acceptance "
                "was not measured here; the speedups on this page take it from the papers" + native +
                ".")
    return (f"With {Path(result['target']['path']).name} and {Path(result['draft']['path']).name}"
            f" drafting {result['k']} tokens a cycle, each verify step kept "
            f"**{result['tokens_per_cycle']:.2f}** tokens on average (an acceptance rate of "
            f"{result['acceptance_rate']:.0%}), and decoding ran at "
            f"**{result['speculative_tok_per_s']:.1f}** tokens/s against "
            f"{result['plain_tok_per_s']:.1f} without the draft: **{result['speedup']:.2f}x**"
            + native + ".")
