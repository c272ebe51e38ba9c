"""Catalog files (.fidx) from Python, and catalogs past one machine:
index_update hashes folders into a catalog (all of their files, or with
rank/world_size one rank's share: a partial catalog), index_merge combines
partial catalogs into one, index_rank_of says which rank a file falls to.
The C library's ferry_index_update, ferry_index_merge and
ferry_index_rank_of: what `ferry hash --rank R --world-size W` and `ferry
index merge` do (docs/DEDUP.md, "Catalogs past one machine")."""

from __future__ import annotations

import bisect
import os
import warnings
from collections.abc import Sequence as _SequenceABC
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _ferry
from ._ferry import InvalidArgument
from ._common import _choice, _compute_device, _default_workers, user_path
from ._log import emit_notices
from ._dedup import _MODES

PathLike = Union[str, bytes, "os.PathLike[str]"]


class MissingRanksWarning(RuntimeWarning):
    """index_merge (strict=False): a rank of a sharded run that no part
    holds; its files are not in the merged catalog (hashing the folder into
    it afterwards fills the gap)."""


class MissingRanks(_SequenceABC):
    """The ranks index_merge found missing, as a read-only sequence of ints
    in order (len, indexing, slices, `in`, equal to a list of the same
    ranks), held as runs of consecutive ranks: one part of a world of 2^20
    costs two runs, not a million ints. `ranges`: the (first, last) runs."""

    def __init__(self, ranges: Sequence[Tuple[int, int]]):
        self.ranges: List[Tuple[int, int]] = [(int(a), int(b)) for a, b in ranges]
        self._starts = []  # the index in the sequence of each run's first rank
        n = 0
        for a, b in self.ranges:
            self._starts.append(n)
            n += b - a + 1
        self._len = n

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("MissingRanks index out of range")
        run = bisect.bisect_right(self._starts, i) - 1
        return self.ranges[run][0] + i - self._starts[run]

    def __contains__(self, rank) -> bool:
        run = bisect.bisect_right(self.ranges, (rank, float("inf"))) - 1
        return run >= 0 and self.ranges[run][0] <= rank <= self.ranges[run][1]

    def __iter__(self):
        for a, b in self.ranges:
            yield from range(a, b + 1)

    def __eq__(self, other) -> bool:
        if isinstance(other, MissingRanks):
            return self.ranges == other.ranges
        if isinstance(other, (list, tuple, range)):
            return len(other) == self._len and all(x == y for x, y in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        runs = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in self.ranges[:8])
        more = f", ... {len(self.ranges) - 8} more runs" if len(self.ranges) > 8 else ""
        return f"MissingRanks([{runs}{more}])"


# How many runs of missing ranks get a warning of their own (the rest: one
# warning counting them), as the command's log does.
_WARN_RUNS = 8


def _paths(value: Any, what: str) -> list:
    if isinstance(value, (str, bytes, os.PathLike)):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise InvalidArgument(f"{what} must be a path or a sequence of paths, "
                              f"not {type(value).__name__}") from None
    return [user_path(v, what) if isinstance(v, (str, bytes, os.PathLike)) else v
            for v in items]


def index_update(index: PathLike, roots: Union[PathLike, Sequence[PathLike]], *,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 mode: str = "fast", hash_size: int = 16, threads: Optional[int] = None,
                 device: Any = None, recursive: bool = True, all_files: bool = False,
                 retry_failed: bool = False, prune: bool = False,
                 engine_min_s: float = 2.5) -> Dict[str, Any]:
    """Creates or updates the catalog `index` (a .fidx file) for the images
    under `roots` (folders or files), as `ferry hash ROOTS -o INDEX` does:
    new and changed files hashed on every core, unchanged ones kept,
    vanished ones dropped, crash-safe (a journal, an atomic replace).

    rank, world_size: one share of a run spread over several processes or
      machines (both, or neither: every file). The files whose path under
      its root falls to `rank` (index_rank_of) are hashed into a partial
      catalog; index_merge combines the parts. The share depends on that
      relative path alone, never on the machine or the walk's order. An
      existing catalog is updated only by the same share.
    mode: "fast" (default) or "compatible"; hash_size: 16 (default) or 8.
    threads: default every core this process may use, shared between the
      processes of this node under torchrun (LOCAL_WORLD_SIZE).
    device: None (the CPU), or "cuda" / "cuda:N" / N, or "opencl" / "opencl:N"
      (compatible mode: the same bits as the CPU's).
    engine_min_s: fast mode on a GPU: its JPEG engine starts only when the
      cores, half a second in, would take longer than this for the rest
      (0..3600 seconds, default 2.5; 0: at once).

    Returns the run's counts (files, hashed, reused, failed, removed, ...,
    other_ranks: files left to the other ranks) and "errors": (path,
    message) of each file that could not be hashed (kept in the catalog with
    its error, as the command does).
    """
    if (rank is None) != (world_size is None):
        raise InvalidArgument("index_update: rank and world_size go together (both, or "
                              "neither for a whole catalog)")
    for name, v in (("rank", rank), ("world_size", world_size), ("hash_size", hash_size)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise InvalidArgument(f"index_update: {name} must be an integer, not {v!r}")
    stats, errors = _ferry.index_update(
        user_path(index, "index", must_exist=False), _paths(roots, "index_update: roots"), mode=_choice(_MODES, mode, "mode"),
        hash_size=int(hash_size), threads=_default_workers() if threads is None else int(threads),
        device=_compute_device(device), rank=0 if rank is None else rank,
        world_size=1 if world_size is None else world_size, recursive=bool(recursive),
        all_files=bool(all_files), retry_failed=bool(retry_failed), prune=bool(prune),
        engine_min_s=float(engine_min_s))
    stats["errors"] = [(path, message) for path, _status, message in errors]
    emit_notices()
    return stats


def index_merge(out: PathLike, parts: Sequence[PathLike], strict: bool = False) -> Dict[str, Any]:
    """Merges the catalogs `parts` into `out`, as `ferry index merge OUT
    PART...` does: every path once; a path in several parts keeps the entry
    with the newer mtime (equal: the later part). The parts are either the
    partial catalogs of one run (index_update with rank and world_size: the
    same world size, roots and settings, each rank at most once) or whole
    catalogs of the same settings; anything else raises InvalidArgument
    naming the two parts. `out` is written atomically, a whole catalog; it
    may be one of the parts.

    A part holding entries outside its share (another rank's files, files
    under none of its roots: a crafted or mixed-up part) raises
    InvalidArgument naming it and the first such entry; nothing is written.

    A rank no part holds: with strict, StateError naming it and nothing
    written; else a MissingRanksWarning per run of consecutive missing ranks
    ("rank 1 of 3 missing: its files are not in OUT", "ranks 4..9 of 16
    missing (6 ranks): ..."; the first 8 runs, then one warning counting the
    rest) and the rest merged.

    Returns {"entries", "conflicts" (paths in more than one part),
    "world_size" (1: whole catalogs), "missing" (the ranks missing: a
    MissingRanks sequence, held as runs)}.
    """
    parts = _paths(parts, "parts")
    if not parts:
        raise InvalidArgument("index_merge: give at least one part")
    entries, conflicts, world_size, runs = _ferry.index_merge(out, parts, strict=bool(strict))
    for _first, _count, message in runs[:_WARN_RUNS]:
        warnings.warn(message, MissingRanksWarning, stacklevel=2)
    if len(runs) > _WARN_RUNS:
        rest = runs[_WARN_RUNS:]
        warnings.warn(f"... and {len(rest)} more runs of missing ranks "
                      f"({sum(c for _, c, _ in rest)} ranks): their files are not in "
                      f"{os.fsdecode(os.fspath(out))}", MissingRanksWarning, stacklevel=2)
    return {"entries": entries, "conflicts": conflicts, "world_size": world_size,
            "missing": MissingRanks([(a, a + c - 1) for a, c, _ in runs])}


def index_rank_of(path: PathLike, world_size: int) -> int:
    """The rank (0 .. world_size - 1) that the file at `path` relative to its
    root ("cats/001.jpg") falls to in a sharded run: the CRC-32 of those
    bytes modulo world_size (zlib.crc32(path) % world_size)."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise InvalidArgument(f"index_rank_of: world_size must be an integer >= 1, "
                              f"not {world_size!r}")
    return _ferry.index_rank_of(path, world_size)
