"""What makes a test slow is found, not remembered: a test that runs llama.cpp, starts a
process or a server is marked ``slow``, so `make check` (``-m "not slow"``) leaves it to
`make test` without anyone keeping a list of names."""

from __future__ import annotations

import inspect
import re
import shutil

import pytest

from napkin import tables

#: Fixtures that run llama.cpp (a synthetic model measured) or start a server.
SLOW_FIXTURES = {"tiny", "tiny_models", "tiny_record", "quick_record", "jupyterlab"}
#: Calls in a test's own body that run llama.cpp or another process.
SLOW_CALLS = re.compile(r"subprocess\.run|InProcess\(|napkin_main\(\[\"(?:measure|depth|verify)"
                        r"|session\.run\(|verify\.run\(|batched\.run\(|depth\.run\(")


def slow(item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return False
    return bool(SLOW_CALLS.search(source))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A copy of data/ that the library reads instead (``NAPKIN_DATA``)."""
    copy = tmp_path / "data"
    shutil.copytree(tables.data_dir(), copy)
    monkeypatch.setenv("NAPKIN_DATA", str(copy))
    return copy
