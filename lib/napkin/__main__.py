"""``python -m napkin``: the command line is :mod:`napkin.cli`."""
from .cli import main

if __name__ == "__main__":  # imported (the API page imports every module), it runs nothing
    raise SystemExit(main())
