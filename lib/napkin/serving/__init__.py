"""Prefill and decode on one machine or two: a step-level simulation of a serving engine.

Chapter 7's library, one concept per module:

- :mod:`napkin.serving.traffic`: requests arriving over time, and dealing them to instances;
- :mod:`napkin.serving.capacity`: what a configuration can carry, from that step;
- :mod:`napkin.serving.engine`: one instance, step by step (its schedulers: prefill first,
  chunked prefill, and the two pools of a disaggregated deployment);
- :mod:`napkin.serving.runs`: a deployment serving a traffic, the latencies users feel in the
  steady state, and many simulations run side by side;
- :mod:`napkin.serving.disagg`: prefill and decode on separate machines, joined by a link;
- :mod:`napkin.serving.chapter`: the chapter's setting and experiments.

The model on its chips is a :class:`napkin.deployment.Deployment`; a step's cost is
:func:`napkin.predict.step.cost` with the published calibration, given the step's totals
(:mod:`napkin.predict.totals`, which chapter 6's allocators are timed by too); the papers' numbers come
from :mod:`napkin.papers`. All randomness is seeded.
"""
