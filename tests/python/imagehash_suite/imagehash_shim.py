"""Installed as the module `imagehash` for imagehash's own tests: every
name comes from ferry.imagehash."""
from ferry.imagehash import *  # noqa: F401,F403
from ferry.imagehash import ANTIALIAS, _binary_array_to_hex, _find_all_segments  # noqa: F401

__version__ = "4.3.2 (ferry.imagehash)"
