"""One serving instance, step by step: a scheduler fills each forward pass, the roofline times it.

An engine runs forward passes ("steps") back to back. What goes into each step is the
scheduler's choice; what a step costs is the roofline of its contents
(:class:`napkin.roofline.StepCost`): the slower of its FLOPs and the bytes it reads (the
weights once, plus every cached token its queries attend to). The schedulers (``mode``):

- ``"prefill_first"``: no chunking. Whenever a waiting request fits in memory, the next step
  runs whole prompts, first come first served, up to the token budget (at least one), and
  no decode; otherwise a step decodes every running sequence (vLLM's V0 default without
  chunked prefill).
- ``"chunked"``: vLLM V1's scheduler (Sarathi-Serve's stall-free batching):
  :meth:`ServingEngine.schedule_chunked`, which chapter 7 shows.
- ``"prefill_only"`` and ``"decode_only"``: the two pools of a disaggregated deployment
  (:func:`napkin.serving.disagg.disaggregate`).

Memory: a request is admitted when the cache of its whole final length fits beside what the
running requests hold (no preemption). Times are in seconds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .. import roofline

MODES = ("prefill_first", "chunked", "prefill_only", "decode_only")


@dataclass
class Log:
    """What one instance did: each request's first token and finish, every gap between two
    tokens of a stream, every step, and (when asked) every emission and step composition."""

    first_s: np.ndarray
    finish_s: np.ndarray
    gaps: list
    steps: list
    emits: list | None
    compositions: list | None


class ServingEngine:
    """One instance serving the requests it was given until every one is done.

    ``decode_only`` requests arrive already prefilled, with their first token emitted at
    ``first_s``; ``prefill_only`` requests leave after their first token. ``budget``: tokens
    per step (vLLM's ``max_num_batched_tokens``). ``record`` keeps every token's emission
    time; ``compose`` every step's chunks and contexts. Defined in
    ``napkin.serving.engine``; chapter 7 shows its chunked-prefill step.
    """

    def __init__(self, arrival_s, prompt, output, cost: roofline.StepCost, capacity: int,
                 mode: str, budget: int, first_s=None, record: bool = False,
                 compose: bool = False):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        self.prompt = np.asarray(prompt, dtype=np.int64)
        self.output = np.asarray(output, dtype=np.int64)
        self.arrival = np.asarray(arrival_s, dtype=float)
        self.order = np.argsort(self.arrival, kind="stable")
        self.cost, self.capacity, self.mode, self.budget = cost, capacity, mode, budget
        n = len(self.prompt)
        decode_only = mode == "decode_only"
        self.need = self.prompt if mode == "prefill_only" else self.prompt + self.output
        if self.need.max(initial=0) > capacity:
            r = int(self.need.argmax())
            raise ValueError(f"request of {int(self.prompt[r])} + {int(self.output[r])} tokens "
                             f"cannot fit in {capacity} tokens of KV memory")
        self.prefilled = self.prompt.copy() if decode_only else np.zeros(n, dtype=np.int64)
        self.generated = np.ones(n, dtype=np.int64) if decode_only else \
            np.zeros(n, dtype=np.int64)
        self.first = np.array(first_s, dtype=float) if decode_only else np.full(n, np.nan)
        self.last = self.first.copy()
        self.finish = np.full(n, np.nan)
        self.queue: deque = deque()  # arrived, not admitted
        self.prefilling: list[int] = []  # admitted, prompt not finished
        self.decoding: list[int] = []
        self.dec_idx = np.zeros(0, dtype=np.int64)  # self.decoding as an array
        self.dec_ctx = 0  # cached tokens over all decoding sequences, before the step
        self.held = 0  # tokens of KV memory the admitted requests hold
        self.t = 0.0
        self.next_arrival = self.done = 0
        self.gaps: list = []
        self.steps: list = []
        self.emits = [] if record else None
        self.compositions = [] if compose else None

    def run(self) -> Log:
        """Step until every request is done: schedule, run the step, emit its tokens."""
        n = len(self.prompt)
        while self.done < n:
            self.arrive()
            if not self.queue and not self.prefilling and not self.decoding:
                self.t = float(self.arrival[self.order[self.next_arrival]])
                continue
            chunks, decode_now = self.schedule()
            if not chunks and not decode_now:  # everything waiting is blocked on memory
                if self.next_arrival >= n:
                    raise AssertionError("no request can run and none will arrive")
                self.t = max(self.t, float(self.arrival[self.order[self.next_arrival]]))
                continue
            self.t += self.execute(chunks, decode_now)
            if decode_now:
                self.emit_decodes()
            self.finish_chunks(chunks)
        return Log(first_s=self.first, finish_s=self.finish, gaps=self.gaps, steps=self.steps,
                   emits=self.emits, compositions=self.compositions)

    def arrive(self) -> None:
        """Requests that have arrived by now join the back of the queue."""
        n = len(self.prompt)
        while self.next_arrival < n and self.arrival[self.order[self.next_arrival]] <= self.t:
            self.queue.append(int(self.order[self.next_arrival]))
            self.next_arrival += 1

    def fits(self, r: int) -> bool:
        return self.held + self.need[r] <= self.capacity

    def admit(self) -> int:
        """The request at the head of the queue takes the memory of its whole final length."""
        r = self.queue.popleft()
        self.held += self.need[r]
        return r

    def schedule(self) -> tuple[list[tuple[int, int, int]], bool]:
        """This step's prompt chunks, as (request, first token, tokens), and whether it
        decodes one token of every running sequence."""
        if self.mode == "chunked":
            return self.schedule_chunked()
        if self.mode == "decode_only":
            return self.schedule_decodes()
        return self.schedule_prompts()

    def schedule_chunked(self) -> tuple[list[tuple[int, int, int]], bool]:
        """vLLM V1's step: one token of every running decode first, then what is left of the
        token budget in prompt chunks: the prompts already started, then waiting requests
        while they fit in memory, the last one cut where the budget runs out. Chapter 7 shows
        this method."""
        left = self.budget - len(self.decoding)
        if left < 0:
            raise ValueError(f"budget {self.budget} is smaller than the {len(self.decoding)} "
                             "running decodes; raise max_num_batched_tokens")
        chunks = []
        for r in self.prefilling:
            if left == 0:
                break
            take = min(left, int(self.prompt[r] - self.prefilled[r]))
            chunks.append((r, int(self.prefilled[r]), take))
            left -= take
        while left > 0 and self.queue and self.fits(self.queue[0]):
            r = self.admit()
            self.prefilling.append(r)
            take = min(left, int(self.prompt[r]))
            chunks.append((r, 0, take))
            left -= take
        return chunks, bool(self.decoding)

    def schedule_prompts(self) -> tuple[list[tuple[int, int, int]], bool]:
        """No chunking: whole waiting prompts while they fit in memory and in the budget (at
        least one); a step with a prompt in it decodes nothing."""
        chunks, total = [], 0
        while self.queue and self.fits(self.queue[0]) and \
                (not chunks or total + self.prompt[self.queue[0]] <= self.budget):
            r = self.admit()
            chunks.append((r, 0, int(self.prompt[r])))
            total += int(self.prompt[r])
        return chunks, not chunks and bool(self.decoding)

    def schedule_decodes(self) -> tuple[list[tuple[int, int, int]], bool]:
        """A decode-only instance: prefilled requests join while they fit; every step decodes."""
        while self.queue and self.fits(self.queue[0]):
            r = self.admit()
            self.decoding.append(r)
            self.dec_ctx += int(self.prompt[r] + self.generated[r] - 1)
            self.dec_idx = np.array(self.decoding, dtype=np.int64)
        return [], bool(self.decoding)

    def execute(self, chunks: list[tuple[int, int, int]], decode_now: bool) -> float:
        """Record the step and return its seconds: the roofline of its tokens, the cache it
        reads (every decode's whole context, each chunk its prompt's earlier part) and the
        (query, key) pairs its attention computes (equation eq-serving-pairs per chunk)."""
        n_dec = len(self.decoding) if decode_now else 0
        pre_tokens = sum(c[2] for c in chunks)
        kv_tokens = (self.dec_ctx if decode_now else 0) + sum(c[1] for c in chunks)
        pairs = (self.dec_ctx + n_dec if decode_now else 0) + \
            sum(c[2] * c[1] + c[2] * (c[2] + 1) // 2 for c in chunks)
        seconds = float(self.cost.seconds(pre_tokens + n_dec, kv_tokens, pairs))
        flops = float(self.cost.flops(pre_tokens + n_dec, pairs))
        self.steps.append((self.t, seconds, pre_tokens, n_dec, kv_tokens, pairs, len(chunks),
                           flops))
        if self.compositions is not None:
            self.compositions.append((
                [(s, k) for _, s, k in chunks],
                [int(self.prompt[r] + self.generated[r] - 1) for r in self.decoding]
                if decode_now else []))
        return seconds

    def emit_decodes(self) -> None:
        """Every decoding sequence emits one token; those that reach their length finish and
        give back their memory."""
        idx = self.dec_idx
        self.gaps.append(self.t - self.last[idx])
        self.last[idx] = self.t
        self.generated[idx] += 1
        self.dec_ctx += len(idx)
        if self.emits is not None:
            self.emits.append((self.t, idx.copy()))
        ended = idx[self.generated[idx] >= self.output[idx]]
        if not len(ended):
            return
        self.finish[ended] = self.t
        self.done += len(ended)
        for r in ended:
            self.held -= self.need[r]
            self.dec_ctx -= int(self.prompt[r] + self.generated[r] - 1)
        gone = set(ended.tolist())
        self.decoding = [r for r in self.decoding if r not in gone]
        self.dec_idx = np.array(self.decoding, dtype=np.int64)

    def finish_chunks(self, chunks: list[tuple[int, int, int]]) -> None:
        """A prompt's last chunk emits its first token; the request then decodes (or, on a
        prefill-only instance or with a one-token output, is done)."""
        joined = False
        for r, start, take in chunks:
            self.prefilled[r] = start + take
            if self.prefilled[r] < self.prompt[r]:
                continue
            if r in self.prefilling:
                self.prefilling.remove(r)
            self.first[r] = self.last[r] = self.t
            self.generated[r] = 1
            if self.emits is not None:
                self.emits.append((self.t, np.array([r])))
            if self.mode == "prefill_only" or self.output[r] == 1:
                self.finish[r] = self.t
                self.held -= self.need[r]
                self.done += 1
            else:
                self.decoding.append(r)
                self.dec_ctx += int(self.prompt[r])
                joined = True
        if joined:
            self.dec_idx = np.array(self.decoding, dtype=np.int64)
