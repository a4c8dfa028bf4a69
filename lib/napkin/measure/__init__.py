"""Live measurement on the reader's machine: llama.cpp on whatever it runs on, against a ceiling.

    from napkin import measure
    record = measure.run(measure.QUICK)      # seconds
    print(measure.table(record))

or from a shell: ``python -m napkin measure [--quick]``. The runner (a ``llama-bench``
binary, or llama.cpp in-process) implements :class:`Runner`; the ceiling's bandwidth
follows its backend (:mod:`.bandwidth`).
"""

from . import depth, kvalloc
from .bandwidth import Bandwidth, UnknownDevice
from .record import frame, load, results_dir, save, sentence, table, who
from .results import DepthSweep, Measurement, MeasurementUnavailable, ModelInfo, Rate, RunnerInfo
from .runner import Runner, make_runner
from .session import FULL, QUICK, Plan, live, plan_from_env, run

__all__ = ["run", "Plan", "QUICK", "FULL", "plan_from_env", "MeasurementUnavailable",
           "UnknownDevice", "save", "load", "table", "frame", "results_dir", "live", "sentence", "who", "depth", "kvalloc",
           "Runner", "make_runner", "Bandwidth", "Measurement", "DepthSweep", "ModelInfo",
           "Rate", "RunnerInfo"]
