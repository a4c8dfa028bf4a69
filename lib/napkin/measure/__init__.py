"""Live measurement on the reader's machine: bandwidth probe, synthetic model, llama.cpp.

    from napkin import measure
    record = measure.run(measure.QUICK)      # seconds
    print(measure.table(record))

or from a shell: ``python -m napkin measure [--quick]``.
"""

from . import depth, kvalloc
from .record import frame, load, results_dir, save, sentence, table, who
from .runner import MeasurementUnavailable
from .session import FULL, QUICK, Plan, live, run

__all__ = ["run", "Plan", "QUICK", "FULL", "MeasurementUnavailable", "save", "load", "table",
           "frame", "results_dir", "live", "sentence", "who", "depth", "kvalloc"]
