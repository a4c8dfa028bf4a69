"""One serving instance, step by step: a scheduler fills each forward pass, the step model times it.

An engine runs forward passes ("steps") back to back. What goes into each step is the
scheduler's choice; what a step costs is chapter 9's calibrated step model of its contents
(:class:`napkin.predict.totals.StepModel`, which calls :func:`napkin.predict.step.cost`): its
weights and the cached tokens its queries attend to, its FLOPs, its all-reduces and the
fixed costs of its layers and sequences. The schedulers (``mode``):

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

An engine is stepped from outside: :meth:`ServingEngine.plan` says what its next step holds,
:meth:`ServingEngine.commit` runs it for the seconds the step model gave. :func:`run_together`
steps many independent engines side by side, so that each round of steps is costed in one
vectorised call (a chapter's sweep runs hundreds of engines). A decoding sequence emits one
token in every decode step from the one after its first token until its last, so the engine
keeps only when each decode step ended and when each sequence joined; every token's time,
and every gap between two tokens of a stream, follows from those (:class:`Log`).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..predict import step
from ..predict.totals import StepModel

MODES = ("prefill_first", "chunked", "prefill_only", "decode_only")


@dataclass
class Log:
    """What one instance did: each request's first token and finish, every step, when each
    decode step ended and which decode step each request's second token came from (-1 for a
    request that never decoded here), and (when asked) every step's composition."""

    first_s: np.ndarray
    finish_s: np.ndarray
    output: np.ndarray
    decode_ends_s: np.ndarray
    joined: np.ndarray
    steps: np.ndarray
    compositions: list | None

    def streams(self) -> list[tuple[int, np.ndarray]]:
        """Per request that decoded, its tokens' times: the first, then one per decode
        step it was in."""
        out = []
        for r in np.flatnonzero(self.joined >= 0):
            j = int(self.joined[r])
            out.append((int(r), np.concatenate([[self.first_s[r]], self.decode_ends_s[
                j:j + int(self.output[r]) - 1]])))
        return out

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gap between two consecutive tokens of a stream, and whose stream it is."""
        streams = self.streams()
        if not streams:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        return (np.concatenate([np.diff(t) for _, t in streams]),
                np.concatenate([np.full(len(t) - 1, r) for r, t in streams]))


class ServingEngine:
    """One instance serving the requests it was given until every one is done.

    ``decode_only`` requests arrive already prefilled, with their first token emitted at
    ``first_s``; ``prefill_only`` requests leave after their first token. ``budget``: tokens
    per step (vLLM's ``max_num_batched_tokens``). ``keep_steps`` records every step (a
    sweep that reads only latencies leaves it off and saves the memory); ``compose`` keeps
    every step's chunks and contexts. Defined in ``napkin.serving.engine``; chapter 7 shows
    its chunked-prefill step.
    """

    #: What each recorded step holds, in order (``Log.steps`` has one row per step).
    STEP_FIELDS = ("start_s", "seconds", "prefill_tokens", "decode_tokens", "kv_tokens",
                   "pairs", "chunks", "sequences", "flops")

    def __init__(self, arrival_s, prompt, output, cost: StepModel, capacity: int,
                 mode: str, budget: int, first_s=None, keep_steps: bool = True,
                 compose: bool = False):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        prompt = np.asarray(prompt, dtype=np.int64)
        output = np.asarray(output, dtype=np.int64)
        arrival = np.asarray(arrival_s, dtype=float)
        need = prompt if mode == "prefill_only" else prompt + output
        if need.max(initial=0) > capacity:
            r = int(need.argmax())
            raise ValueError(f"request of {int(prompt[r])} + {int(output[r])} tokens "
                             f"cannot fit in {capacity} tokens of KV memory")
        n = self.n = len(prompt)
        order = np.argsort(arrival, kind="stable")
        # plain lists: the scheduler reads single elements, which numpy makes slow
        self.prompt, self.output, self.need = prompt.tolist(), output.tolist(), need.tolist()
        self.order, self.arrives = order.tolist(), arrival[order].tolist()
        self.cost, self.capacity, self.mode, self.budget = cost, capacity, mode, budget
        decode_only = mode == "decode_only"
        self.prefilled = list(self.prompt) if decode_only else [0] * n
        self.first = np.asarray(first_s, dtype=float).tolist() if decode_only else \
            [float("nan")] * n
        self.finish = [float("nan")] * n
        self.joined = [-1] * n
        self.queue: deque = deque()  # arrived, not admitted
        self.prefilling: list[int] = []  # admitted, prompt not finished
        self.decoding: dict[int, None] = {}  # decoding, in the order they joined
        self.ends: dict[int, list[int]] = {}  # decode step -> requests it finishes
        self.decode_ends = array("d")  # when each decode step ended
        self.dec_ctx = 0  # cached tokens over all decoding sequences, before the step
        self.held = 0  # tokens of KV memory the admitted requests hold
        self.t = 0.0
        self.next_arrival = self.done = 0
        self.steps = array("d") if keep_steps else None  # STEP_FIELDS, row after row
        self.pending: tuple | None = None  # the planned step: chunks, decode_now, totals
        self.compositions = [] if compose else None

    def run(self) -> Log:
        """Step until every request is done (alone; :func:`run_together` for many)."""
        run_together([self])
        return self.log()

    def log(self) -> Log:
        return Log(first_s=np.array(self.first), finish_s=np.array(self.finish),
                   output=np.array(self.output, dtype=np.int64),
                   decode_ends_s=np.frombuffer(self.decode_ends, dtype=float).copy(),
                   joined=np.array(self.joined, dtype=np.int64),
                   steps=np.frombuffer(self.steps or array("d"), dtype=float).reshape(
                       -1, len(self.STEP_FIELDS)).copy(),
                   compositions=self.compositions)

    def plan(self) -> tuple[int, int, int, int] | None:
        """Schedule the next step (waiting, when nothing can run, for the next arrival) and
        return its totals, (tokens, cached tokens read, (query, key) pairs, sequences);
        None when every request is done."""
        n = self.n
        while self.done < n:
            self.arrive()
            if not self.queue and not self.prefilling and not self.decoding:
                self.t = self.arrives[self.next_arrival]
                continue
            chunks, decode_now = self.schedule()
            if not chunks and not decode_now:  # everything waiting is blocked on memory
                if self.next_arrival >= n:
                    raise AssertionError("no request can run and none will arrive")
                self.t = max(self.t, self.arrives[self.next_arrival])
                continue
            totals = self.totals(chunks, decode_now)
            self.pending = (chunks, decode_now, totals)
            return totals
        return None

    def commit(self, seconds: float, flops: float = float("nan")) -> None:
        """Run the planned step for ``seconds``: record it, advance the clock, emit its
        tokens."""
        chunks, decode_now, (tokens, kv_tokens, pairs, sequences) = self.pending
        self.pending = None
        if self.steps is not None:
            n_dec = len(self.decoding) if decode_now else 0
            self.steps.extend((self.t, seconds, tokens - n_dec, n_dec, kv_tokens, pairs,
                               len(chunks), sequences, flops))
        if self.compositions is not None:
            k = len(self.decode_ends)
            self.compositions.append((
                [(s, m) for _, s, m in chunks],
                [self.prompt[r] + k - self.joined[r] for r in self.decoding]
                if decode_now else []))
        self.t += seconds
        if decode_now:
            self.emit_decodes()
        self.finish_chunks(chunks)

    def arrive(self) -> None:
        """Requests that have arrived by now join the back of the queue."""
        n, at = self.n, self.arrives
        while self.next_arrival < n and at[self.next_arrival] <= self.t:
            self.queue.append(self.order[self.next_arrival])
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
            take = min(left, self.prompt[r] - self.prefilled[r])
            chunks.append((r, self.prefilled[r], take))
            left -= take
        while left > 0 and self.queue and self.fits(self.queue[0]):
            r = self.admit()
            self.prefilling.append(r)
            take = min(left, self.prompt[r])
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
            chunks.append((r, 0, self.prompt[r]))
            total += self.prompt[r]
        return chunks, not chunks and bool(self.decoding)

    def schedule_decodes(self) -> tuple[list[tuple[int, int, int]], bool]:
        """A decode-only instance: prefilled requests join while they fit; every step decodes."""
        while self.queue and self.fits(self.queue[0]):
            self.join(self.admit())
        return [], bool(self.decoding)

    def join(self, r: int) -> None:
        """Request ``r``, its first token out, decodes from the next decode step on, one
        token a step, until its last: the step it finishes in is known now."""
        k = len(self.decode_ends)
        self.decoding[r] = None
        self.joined[r] = k
        self.ends.setdefault(k + self.output[r] - 2, []).append(r)
        self.dec_ctx += self.prompt[r]

    def totals(self, chunks: list[tuple[int, int, int]], decode_now: bool
               ) -> tuple[int, int, int, int]:
        """A step's tokens, the cached tokens it reads (every decode's whole context, each
        chunk its prompt's earlier part), the (query, key) pairs its attention computes
        (equation eq-serving-pairs per chunk) and its sequences (a decode or a chunk each)."""
        n_dec = len(self.decoding) if decode_now else 0
        tokens, kv_tokens, pairs = n_dec, 0, 0
        if decode_now:
            kv_tokens, pairs = self.dec_ctx, self.dec_ctx + n_dec
        for _, start, take in chunks:
            tokens += take
            kv_tokens += start
            pairs += take * start + take * (take + 1) // 2
        return tokens, kv_tokens, pairs, n_dec + len(chunks)

    def emit_decodes(self) -> None:
        """Every decoding sequence emits one token (its cache grows by one); those that
        reach their length finish and give back their memory."""
        k = len(self.decode_ends)
        self.decode_ends.append(self.t)
        self.dec_ctx += len(self.decoding)
        for r in self.ends.pop(k, ()):
            self.finish[r] = self.t
            self.done += 1
            self.held -= self.need[r]
            self.dec_ctx -= self.prompt[r] + self.output[r] - 1
            del self.decoding[r]

    def finish_chunks(self, chunks: list[tuple[int, int, int]]) -> None:
        """A prompt's last chunk emits its first token; the request then decodes (or, on a
        prefill-only instance or with a one-token output, is done)."""
        for r, start, take in chunks:
            self.prefilled[r] = start + take
            if self.prefilled[r] < self.prompt[r]:
                continue
            if r in self.prefilling:
                self.prefilling.remove(r)
            self.first[r] = self.t
            if self.mode == "prefill_only" or self.output[r] == 1:
                self.finish[r] = self.t
                self.held -= self.need[r]
                self.done += 1
            else:
                self.join(r)


def run_together(engines: list[ServingEngine]) -> None:
    """Step independent engines side by side until each is done. Every round, each engine
    plans its next step; the steps of engines that share a step model are costed in one
    vectorised call; each engine then runs its step. An engine's clock is its own, so the
    result is what each would do alone."""
    active = list(engines)
    while active:
        planned = [(e, e.plan()) for e in active]
        planned = [(e, w) for e, w in planned if w is not None]
        active = [e for e, _ in planned]
        groups: dict[int, list] = {}
        for e, w in planned:
            groups.setdefault(id(e.cost), []).append((e, w))
        for group in groups.values():
            model = group[0][0].cost
            work = model.work(*np.array([w for _, w in group], dtype=float).T)
            seconds = step.cost(model.constants, work, model.calibration).seconds
            for (e, _), s, f in zip(group, np.broadcast_to(seconds, (len(group),)).tolist(),
                                    np.broadcast_to(work.flops, (len(group),)).tolist()):
                e.commit(s, f)
