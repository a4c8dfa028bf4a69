"""Paged KV memory, simulated: what contiguous reservation wastes and what paging buys.

Chapter 6's library, one concept per module:

- :mod:`napkin.kvpaging.buddy`: the buddy allocator that places contiguous reservations;
- :mod:`napkin.kvpaging.memory`: where a sequence's cache lives (a contiguous reservation or
  fixed-size blocks) and the five categories every slot falls in;
- :mod:`napkin.kvpaging.engine`: the engine that replays requests through a memory, step by
  step (write tokens, admit, account, release);
- :mod:`napkin.kvpaging.result`: what a run leaves, and its tokens per second on a deployment;
- :mod:`napkin.kvpaging.chapter`: the chapter's setting and experiments.

Request lengths come from :mod:`napkin.workloads`, the paper's numbers from
:mod:`napkin.papers`, the model on its chip from :mod:`napkin.deployment`.
"""
