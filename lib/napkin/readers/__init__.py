"""Readers' machines: share a measurement, check it, and show every accepted one.

- :mod:`.schema`: the submission format, ``napkin-result/1``, as data;
- :mod:`.submission`: a ``make measure`` record -> a submission (``python -m napkin share``);
- :mod:`.bounds`: what decode and prefill cannot exceed (the ceiling, the device's peak);
- :mod:`.check`: refuse what is malformed, impossible, personal or already accepted
  (``python -m napkin results check``);
- :mod:`.page`: the accepted files in ``data/readers/`` as rows for the readers' page.
"""

from .check import Problem, check_file, check_files
from .page import accepted, counts, napkin_rows, prefill_rows, runs
from .schema import FIELDS, SCHEMA
from .submission import from_record, latest_record

__all__ = ["Problem", "check_file", "check_files", "accepted", "counts", "napkin_rows",
           "prefill_rows", "runs", "FIELDS", "SCHEMA", "from_record", "latest_record"]
