"""The `ferry` command of a pip-installed ferry: the C build's program
(tools/*.c), shipped in the package as ferry/_bin/ferry by setup.py.

main() replaces this Python process with that program (os.execv), so its
exit codes, signals (Ctrl-C, kill), stdin, stdout, stderr and threads are
exactly those of the C build's `ferry`. The `ferry` entry point
(pyproject.toml) and `python -m ferry` (ferry/__main__.py) both run it."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional, Sequence


def command_path() -> str:
    """Where the package's ferry command is."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "ferry")


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    path = command_path()
    args = list(sys.argv[1:] if argv is None else argv)
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"ferry: {path}: this ferry package has no ferry command (built "
                         "without it?); reinstall it with `pip install .`, or use the "
                         "C build's (make: build/ferry)\n")
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(path, ["ferry", *args])
    except OSError as e:
        sys.stderr.write(f"ferry: cannot run {path}: {e.strerror}\n")
        sys.exit(126)
