"""The level of the C library's messages on stderr (ferry_set_log_level):
"debug" adds its debug lines (where nvJPEG was looked for, the GPU loader's
JPEG engine controller, where hashing and search spent their time) and
FFmpeg's own log for the video files opened after it; "info" (the default)
what ferry chose and what it skipped; "warning" only what was skipped or
fell back.

The warning-level messages (notices: pin_memory unavailable, a shard's
samples without an image, ...) are Python warnings of the category
FerryWarning, raised when the ferry call that noticed them returns (those
of the loader's threads at the next call into the loader, or at exit):
warnings.simplefilter("error", ferry.FerryWarning) makes them errors,
"ignore" silences them."""

from __future__ import annotations

import atexit
import warnings

from . import _ferry
from ._ferry import InvalidArgument


class FerryWarning(UserWarning):
    """A notice of the C library's: something was skipped or fell back;
    the run goes on."""


def emit_notices(stacklevel: int = 3) -> None:
    """The C library's notices since the last call, as FerryWarning
    (stacklevel: the user's call that returned)."""
    for message in _ferry.take_notices():
        warnings.warn(f"ferry: {message}", FerryWarning, stacklevel=stacklevel)


atexit.register(emit_notices, 2)

_LEVELS = {"debug": _ferry.LOG_DEBUG, "info": _ferry.LOG_INFO, "warning": _ferry.LOG_WARNING}


def set_log_level(level: str) -> None:
    """Sets the least level of the library's messages, process-wide:
    "debug", "info" (the default) or "warning" (`ferry --verbose` is
    "debug")."""
    key = level.lower() if isinstance(level, str) else None
    if key not in _LEVELS:
        raise InvalidArgument(f"log level must be one of debug, info, warning, not {level!r}")
    _ferry.set_log_level(_LEVELS[key])


def get_log_level() -> str:
    """The least level of the library's messages: "debug", "info" or "warning"."""
    code = _ferry.get_log_level()
    return next(name for name, c in _LEVELS.items() if c == code)
