"""ferry.Loader (batches of images from a folder or a list file, through
the C loader's ring) and the single-image functions decode and probe."""

from __future__ import annotations

import atexit
import difflib
import inspect
import os
import warnings
import weakref
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _ferry
from ._ferry import InvalidArgument, StateError, Tensor
from ._common import user_path
from ._log import emit_notices
from ._common import (
    _Closable, _DTYPE_NAMES, _OUTPUTS, _device_index, _dist_defaults,
    _dtype_name, _normalization, _size, _stall_ms)

# The options that ferry.Loader takes under a name of its own (and in its own
# units or form): the C library's name -> Python's.
_PYTHON_NAMES = {"width": "size", "height": "size", "flip_prob": "flip", "cache_bytes": "cache",
                 "allow_dct_scaling": "dct_scaling", "stall_timeout_ms": "stall_timeout"}

# torch.utils.data.DataLoader's keywords, and what ferry does instead
_DATALOADER_NAMES = {
    "num_workers": "workers= (decoding threads inside this process: ferry needs no worker "
                   "processes; the default uses every core, divided by $LOCAL_WORLD_SIZE)",
    "transform": "size=, crop=, flip=, mean=/std=, dtype= (done inside the loader, fused); "
                 "other per-sample augmentations: Loader(..., augment=...) or a function over "
                 "each batch (docs/PYTHON.md, 'Augmentations')",
    "target_transform": "a function over each batch's labels",
    "collate_fn": "nothing: batches come already stacked ([N, C, H, W] and [N] labels)",
    "sampler": "shuffle=, seed= and rank=/world_size= (the order depends only on seed and "
               "epoch: call set_epoch(epoch))",
    "batch_sampler": "batch_size=, shuffle=, drop_last=",
    "prefetch_factor": "prefetch= (batches in flight for the whole loader)",
    "persistent_workers": "nothing: the loader's threads live as long as the Loader",
    "worker_init_fn": "nothing: no worker processes are started",
    "generator": "seed=",
    "timeout": "stall_timeout= (seconds)",
    "multiprocessing_context": "nothing: no worker processes are started",
    "in_order": "nothing: batches always come in order",
}



# Every C loader not yet freed. A script that ends without close(), or with
# a batch still referenced (a loop variable), would otherwise leave the
# loader's threads working (on the next epoch, made ahead) while the
# interpreter, CUDA and nvJPEG shut down under them: at exit they are
# stopped and joined first. Batches stay valid; the loaders are freed as
# usual.
_open_cores: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _stop_loaders() -> None:
    for core in list(_open_cores):
        core.stop()


class SkippedFileWarning(UserWarning):
    """A file the loader could not use and left out of its batch (on_error="skip").
    Each bad file is reported once; Loader.skipped lists them all."""


class Batch(NamedTuple):
    """A batch with its bookkeeping (Loader.batches()). images and labels are
    as Loader yields them; indices are the samples' indices into the source
    (Loader.path(i)); index is the batch number within the epoch."""
    images: Any
    labels: Any
    indices: Any
    epoch: int
    index: int


class FieldsBatch(NamedTuple):
    """Loader.batches() when fields= are asked: a Batch and, in `fields`, each
    field's per-batch list of bytes (None where a sample has no such member),
    in the batch's order."""
    images: Any
    labels: Any
    indices: Any
    epoch: int
    index: int
    fields: Dict[str, List[Optional[bytes]]]


class _Converter:
    """Turns the extension's Tensors into what the user asked for."""

    def __init__(self, output: str, copy: bool, on_gpu: bool):
        self.kind = output
        self.copy = copy
        if output == "torch":
            import torch
            self.torch = torch
        elif output == "numpy":
            import numpy
            self.np = numpy
            self.from_dlpack = getattr(numpy, "from_dlpack", numpy.asarray)
        self.on_gpu = on_gpu

    def images(self, t: Tensor) -> Any:
        if self.kind == "torch":
            x = self.torch.from_dlpack(t)
            return x.clone() if self.copy else x
        if self.kind == "numpy":
            x = self.from_dlpack(t)
            return x.copy() if self.copy else x
        if self.copy:
            raise InvalidArgument('copy=True needs output="torch" or "numpy"')
        return t

    def small(self, t: Tensor, device: Any = None) -> Any:
        """Labels and indices: small host arrays of their own, copied to a GPU device if given
        (non-blocking, from pageable memory: through pinned memory it cost the host more and
        was no faster, bench/CLAIMS.md C33)."""
        if self.kind == "torch":
            x = self.torch.from_dlpack(t)
            if t.owner is not None:  # a view of the loader's ring: a copy of its own
                x = x.clone()
            if device is not None and device.type != "cpu":
                x = x.to(device, non_blocking=True)
            return x
        if self.kind == "numpy":
            x = self.from_dlpack(t)
            return x.copy() if t.owner is not None else x
        return t


class _EpochIterator:
    """Iterates one epoch. Holds no batch between calls: the batch you hold
    is the only reference that keeps its buffer."""

    __slots__ = ("_loader", "_core", "_generation", "_records", "_done", "epoch")

    def __init__(self, loader: "Loader", core: Any, epoch: int, records: bool):
        self._loader = loader
        self._core = core
        self._generation = loader._generation
        self._records = records
        self._done = False
        self.epoch = epoch

    def __iter__(self) -> "_EpochIterator":
        return self

    def __len__(self) -> int:
        return self._loader.__len__()

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        loader = self._loader
        if loader._generation != self._generation:
            self._done = True
            raise StateError(f"this iterator was for epoch {self.epoch}; the loader has started "
                             "another epoch since (iterate one epoch at a time)")
        b = loader._next_batch(self._core)
        if b is None:
            self._done = True
            raise StopIteration
        return loader._convert(b, self._records)


class Loader(_Closable):
    """Loads batches of images from an ImageFolder directory or a list file.

    Args:
      source: a directory whose sorted sub-folders are the classes (labels
        0..K-1), or a text file of `path[,label]` lines.
      batch_size: images per batch (the last batch of an epoch may be
        smaller unless drop_last; a skipped file's place takes the next
        sample of the epoch's tail, so the other batches stay full).
      size: output size, N or (height, width).
      device: "cpu" (default), "cuda" (the current device, or LOCAL_RANK) or
        "cuda:N": where the batches are made. On a GPU the images are
        decoded by the GPU's JPEG engine where it can, resized and
        normalised on the device, and yielded as CUDA tensors.
      dtype: "uint8" (default), "float16" or "float32" (also torch/NumPy
        dtypes). Floats are x/255, normalised when mean/std are given.
      layout: "chw" (default, [N, C, H, W]) or "hwc" ([N, H, W, C]).
      mean, std: per channel, in 0..1 units (torchvision's): pixels become
        (x/255 - mean) / std. Either one switches normalisation on (the
        other defaults to ImageNet's); normalize=True alone uses ImageNet's.
      crop: "center" (Resize + CenterCrop, crop_ratio 0.875), "random"
        (RandomResizedCrop with scale and ratio) or "none" (resize the
        whole image).
      flip: horizontal flip: True (probability 0.5) or a probability.
      shuffle, seed: the epoch's order is a permutation that depends only
        on (seed, epoch); crops and flips on (seed, epoch, sample).
      drop_last: every rank gets the same number of full batches.
      rank, world_size: sharding: rank r takes every world_size-th sample
        of the epoch's permutation. Default: torch.distributed when
        initialised, else $RANK / $WORLD_SIZE (torchrun), else 0 / 1.
      workers: CPU decoding threads; default (None) ferry's choice: the cores
        this process may use, divided by $LOCAL_WORLD_SIZE, less the threads
        that feed the GPU's JPEG engine when it decodes, and one core more
        on 8 or fewer (Loader.workers says how many).
      cache: "memory" (up to a quarter of RAM) or a number of bytes: transformed samples are
          kept after they are first made and later epochs are served from RAM; needs a
          deterministic pipeline (crop="center" or "none", no flip).
      output: "auto" (torch tensors when torch can be imported, else NumPy
        arrays), "torch", "numpy", or "tensor" (ferry.Tensor objects that
        any DLPack consumer takes).
      copy: False (default): arrays are views of the loader's buffers (see
        the lifetime note in the module docstring). True: arrays of your own,
        and the buffer goes back at once.
      dct_scaling: the C library's allow_dct_scaling.
      stall_timeout: seconds (default 60) the iteration waits without any image finishing
          before it raises StallError (a TimeoutError), naming what each loader thread was
          doing and for how long; the loader then stays failed. 0 or None: wait for ever.
      fields: WebDataset shards only: names of other members of each sample to give
        beside the batch (fields=("txt", "json"): captions, metadata; webdataset's
        field names). Iteration then yields (images, labels, fields) and batches()
        FieldsBatch records; fields is {name: [bytes or None per image]}, in the
        batch's order (None where the sample has no such member).
      **options: every other option of the C library's loader, by its name
        (docs/OPTIONS.md; ferry._ferry.loader_options() lists them): prefetch
        (batches in the ring, as in C and `ferry load --prefetch`; default
        None: 4, or 6 on a GPU with the JPEG engine; Loader.ring says which),
        crop ("center", "random", "none"), crop_ratio, scale, ratio, filter,
        layout, shuffle, seed, drop_last, on_error ("skip": a bad file is left
        out of its batch with a SkippedFileWarning, once; "fail": the iteration
        raises), ignore_orientation, max_pixels, hw_decode, device_memory,
        exact_decode, max_batch_bytes, read_timeout_ms, ... The C library
        checks each value (InvalidArgument naming the option, the range and
        the value, as `ferry load` words it); None leaves an option at its
        default.
    """

    def __init__(self, source: Union[str, "os.PathLike[str]", Sequence[Any]],
                 batch_size: int = 256,
                 size: Union[None, int, Sequence[int]] = 224, *, device: Any = "cpu",
                 dtype: Any = "uint8", mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None, normalize: Optional[bool] = None,
                 flip: Union[bool, float] = False, rank: Optional[int] = None,
                 world_size: Optional[int] = None, workers: Optional[int] = None,
                 cache: Any = None, output: str = "auto", copy: bool = False,
                 dct_scaling: Optional[bool] = None, stall_timeout: Optional[float] = 60.0,
                 labels: Optional[Sequence[int]] = None, pin_memory: bool = False,
                 augment: Any = None, fields: Optional[Sequence[str]] = None,
                 **options: Any):
        self._core = None  # so that close() and __del__ work after a failed __init__
        self._augment = None
        for name in options:
            if name in _PYTHON_NAMES:
                raise TypeError(f"Loader() takes {_PYTHON_NAMES[name]}=, not {name}=")
            if name in _DATALOADER_NAMES:
                raise TypeError(f"Loader() has no {name}= (a torch DataLoader keyword); "
                                f"ferry's equivalent: {_DATALOADER_NAMES[name]}")
            _check_keyword(name, options[name])
        cache_bytes = None
        if cache not in (None, False):
            # "memory": up to a quarter of the machine's RAM; an int: that many bytes
            if cache == "memory":
                cache_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
            elif isinstance(cache, int) and not isinstance(cache, bool):
                cache_bytes = cache
            else:
                raise InvalidArgument(f"cache must be None, 'memory' or a number of bytes, "
                                      f"not {cache!r}")
        # None: the C library's default (its option registry), as PYTHON.md says
        height, width = (None, None) if size is None else _size(size)
        dev = _device_index(device)
        if output not in _OUTPUTS:
            raise InvalidArgument(f"output must be one of {', '.join(_OUTPUTS)}, not {output!r}")
        if output == "auto":
            try:
                import torch  # noqa: F401
                output = "torch"
            except ImportError:
                output = "numpy"
        if output == "numpy" and dev >= 0:
            raise InvalidArgument('output="numpy" needs device="cpu": a NumPy array cannot live '
                                  'on a GPU (use output="torch" or "tensor")')
        normalize, mean3, std3 = _normalization(normalize, mean, std)
        rank, world_size = _dist_defaults(rank, world_size)
        options.update(
            batch_size=batch_size, width=width, height=height,
            workers=0 if workers is None else workers,  # 0: the C library's one rule
            flip_prob=0.5 if flip is True else 0.0 if flip is False or flip is None else flip,
            normalize=normalize, mean=mean3, std=std3,
            dtype=None if dtype is None else _dtype_name(dtype), rank=rank,
            world_size=world_size, allow_dct_scaling=dct_scaling, device=dev,
            cache_bytes=cache_bytes, stall_timeout_ms=_stall_ms(stall_timeout),
            pin_memory=_pin_device(pin_memory) if dev < 0 else None)
        self._source, self._labels = _source_arg(source, labels)
        if augment is not None and not callable(augment):
            raise TypeError("augment must be a callable f(images, indices, epoch) -> images "
                            f"(e.g. ferry.ColorJitter(...)), not {type(augment).__name__}")
        self._augment = augment
        self._options = {k: v for k, v in options.items() if v is not None}
        self._output = output
        self._convert_to = _Converter(output, bool(copy), dev >= 0)
        self._torch_device = None
        self._generation = 0
        self._epoch_next = 0
        self._skipped: List[Tuple[str, str]] = []
        self._reported: set = set()
        self._fields = _fields_arg(fields)
        self._core = self._open()
        if size is None:  # the size the C library's default gave
            resolved = self._core.options
            self._options.update(width=resolved["width"], height=resolved["height"])
        if self._fields and self._core.source_size:
            for f in self._fields:  # a source that is not shards refused now, not mid-epoch
                self._core.field(0, f)
        if dev >= 0 and output == "torch":
            self._torch_device = self._convert_to.torch.device("cuda", dev)
        emit_notices()  # the open's notices (pin_memory, shards) as FerryWarning

    def _open(self) -> Any:
        # Without CUDA in the C library, device >= 0 fails here with
        # UnsupportedError("... built without CUDA").
        if isinstance(self._source, list):
            core = _ferry.Loader(self._source, self._labels, **self._options)
        else:
            core = _ferry.Loader(self._source, **self._options)
        _open_cores.add(core)
        return core

    # ---------------------------------------------------------- iteration

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (its shuffle, crops and flips).
        Without set_epoch, iterations run epochs 0, 1, 2, ..."""
        if not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgument(f"epoch must be an int >= 0, not {epoch!r}")
        self._epoch_next = epoch

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        """Runs the next epoch: yields (images, labels)."""
        emit_notices()  # the loader's threads' since the last call
        return self._start(None, records=False)

    def batches(self, epoch: Optional[int] = None) -> Iterator[Batch]:
        """Runs an epoch (the next one by default): yields Batch records with
        the samples' indices and the batch numbers."""
        return self._start(epoch, records=True)

    def __len__(self) -> int:
        """Batches per epoch for this rank, planned: an upper bound when
        files are skipped (their places are filled from the epoch's tail)."""
        return self._live_core().num_batches

    def _live_core(self) -> Any:
        if self._core is None or self._core.closed:
            raise StateError("the loader is closed")
        return self._core

    def _start(self, epoch: Optional[int], records: bool) -> _EpochIterator:
        core = self._live_core()
        if epoch is None:
            epoch = self._epoch_next
        if core.live_batches and not _ferry.HELD_ACROSS_EPOCHS:
            # Batches of the previous epoch are still referenced (the loop
            # variable holds the last one), and this C library reuses every
            # slot when an epoch starts: open a fresh loader; the old one is
            # freed with its last batch.
            self._report_skips(core)
            core.close()
            core = self._core = self._open()
        core.start_epoch(epoch)
        self._epoch_next = epoch + 1
        self._generation += 1
        return _EpochIterator(self, core, epoch, records)

    def _next_batch(self, core: Any) -> Any:
        try:
            try:
                return core.next()
            except StateError as e:
                if getattr(e, "status", None) != _ferry.ESTATE:
                    raise
                # Every slot is held. Batches caught in reference cycles
                # (tracebacks, closures) are freed by a collection.
                import gc
                gc.collect()
                try:
                    return core.next()
                except StateError as e2:
                    if getattr(e2, "status", None) != _ferry.ESTATE:
                        raise
                    hint = (" (a ring of one cannot serve a for loop, which holds the last batch "
                            "while it asks for the next: prefetch=2 or more)"
                            if core.ring == 1 else "")
                    raise StateError(
                        f"{e2}. {core.live_batches} batches are still referenced and the ring "
                        f"has {core.ring} buffers: drop references to old "
                        "batches, copy what you keep (tensor.clone(), array.copy()), or "
                        f"create the Loader with copy=True or a larger prefetch{hint}") from None
        finally:
            self._report_skips(core)

    def _convert(self, b: Any, records: bool) -> Any:
        c = self._convert_to
        images = c.images(b.images)
        labels = c.small(b.labels, self._torch_device)
        if self._augment is not None:
            images = self._augment(images, c.small(b.indices), b.epoch)
        if self._fields:
            fields = self._batch_fields(b)
            if not records:
                return images, labels, fields
            return FieldsBatch(images, labels, c.small(b.indices), b.epoch, b.index, fields)
        if not records:
            return images, labels
        return Batch(images, labels, c.small(b.indices), b.epoch, b.index)

    def _batch_fields(self, b: Any) -> Dict[str, List[Optional[bytes]]]:
        """The fields of a batch's samples, by their indices (the batch's order)."""
        core = self._core
        indices = memoryview(b.indices).cast("B").cast("q").tolist()
        return {f: [core.field(i, f) for i in indices] for f in self._fields}

    def _report_skips(self, core: Any) -> None:
        for path, status, message in core.take_skipped():
            if path in self._reported:
                continue
            self._reported.add(path)
            self._skipped.append((path, message))
            warnings.warn(f"ferry: skipped {message}", SkippedFileWarning, stacklevel=4)

    # ------------------------------------------------------------- info

    @property
    def skipped(self) -> List[Tuple[str, str]]:
        """(path, message) of every file skipped so far, once each."""
        if self._core is not None and not self._core.freed:
            self._report_skips(self._core)
        return list(self._skipped)

    @property
    def source_size(self) -> int:
        """Samples in the source (all ranks)."""
        return self._live_core().source_size

    @property
    def num_samples(self) -> int:
        """Samples in this rank's epoch."""
        return self._live_core().epoch_size

    @property
    def num_classes(self) -> int:
        return self._live_core().num_classes

    @property
    def pinned(self) -> bool:
        """True when CPU batches are in page-locked memory (pin_memory=True took)."""
        return bool(self._live_core().pinned)

    @property
    def numa(self) -> Tuple[int, str]:
        """Where the loader's threads run (the numa option): (the GPU's NUMA
        node, its CPUs as a cpulist such as "16-23,80-87") when they were
        placed near the GPU on a host of several NUMA nodes, else (-1, why
        not)."""
        node, text = self._live_core().numa
        return int(node), str(text)

    @property
    def dtype(self) -> str:
        return _DTYPE_NAMES[self._core.options["dtype"]]

    @property
    def ring(self) -> int:
        """Batch buffers in the ring: prefetch, or ferry's choice for prefetch=None."""
        return self._live_core().ring

    @property
    def workers(self) -> int:
        """CPU worker threads decoding: workers=, or ferry's choice for workers=None."""
        return self._live_core().workers

    @property
    def classes(self) -> List[str]:
        """Class names (the ImageFolder's sub-folders), index = label."""
        core = self._live_core()
        return [core.class_name(i) for i in range(core.num_classes)]

    def path(self, index: int) -> str:
        """Path of sample `index` of the source (see Batch.indices)."""
        return self._live_core().path(index)

    def label(self, index: int) -> int:
        return self._live_core().label(index)

    @property
    def rank(self) -> int:
        return self._options["rank"]

    @property
    def world_size(self) -> int:
        return self._options["world_size"]

    @property
    def output(self) -> str:
        return self._output

    def stats(self) -> dict:
        """Seconds per stage summed over workers (read_s, decode_s,
        transform_s), the consumer's wait_s, the workers' idle_s (nothing to
        claim: the ring full or between epochs), and counters; workers_active:
        the workers claiming samples now (all, unless park_workers=True parked
        some)."""
        return self._live_core().stats()

    # ------------------------------------------------------------ closing

    def __reduce__(self) -> Any:
        raise TypeError("a ferry.Loader cannot be pickled (it owns threads and buffers): create "
                        "one in each process")

    def __repr__(self) -> str:
        o = self._options
        state = "closed" if self._core is None or self._core.closed else (
            f"{self._core.source_size} samples, {self._core.num_batches} batches/epoch")
        src = (f"<{len(self._source)} paths>" if isinstance(self._source, list)
               else repr(self._source))
        return (f"ferry.Loader({src}, batch_size={o['batch_size']}, "
                f"size=({o['height']}, {o['width']}), device={self.device!r}, "
                f"dtype={self.dtype!r}, rank={o['rank']}/{o['world_size']}, {state})")


def _pin_device(pin: Any) -> Optional[int]:
    """pin_memory=True: the CUDA device batches will be copied to (torch's
    current device where torch has CUDA, else $LOCAL_RANK, else 0)."""
    if pin is None or pin is False:
        return None
    if pin is not True:
        raise InvalidArgument(f"pin_memory must be True or False, not {pin!r}")
    import sys
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
    except Exception:  # a torch without CUDA: the environment decides
        pass
    return int(os.environ.get("LOCAL_RANK", "0") or 0)


def _check_keyword(name: str, value: Any) -> None:
    """A keyword of **options: one of the C registry's options (the nearest
    names suggested otherwise), a yes/no option given a bool, not a string
    ("no" would be true)."""
    registry = {o["name"]: o for o in _ferry.loader_options()}
    if name not in registry:
        known = [n for n in registry if n not in _PYTHON_NAMES]
        known += [p for p in inspect.signature(Loader.__init__).parameters
                  if p not in ("self", "options")]
        near = difflib.get_close_matches(name, known, n=1)
        raise TypeError(f"Loader() got an unexpected keyword argument {name!r}" +
                        (f"; did you mean {near[0]!r}?" if near else ""))
    if registry[name]["type"] == "bool" and isinstance(value, (str, bytes)):
        raise TypeError(f"Loader(): {name}= takes True or False, not {value!r}")


def _fields_arg(fields: Any) -> Tuple[str, ...]:
    """fields=: a name ("txt") or names ("txt", "json") of WebDataset members."""
    if fields is None:
        return ()
    if isinstance(fields, str):
        fields = (fields,)
    out = tuple(fields)
    for f in out:
        if not isinstance(f, str) or not f or f.startswith("."):
            raise InvalidArgument(f"fields must be WebDataset field names such as 'txt' or "
                                  f"'json', not {f!r}")
    return out


def _source_arg(source: Any, labels: Any) -> Tuple[Any, Any]:
    """A path as a str; a sequence of paths, of (path, label) pairs, or of
    .tar shards as a list of bytes (and labels as int32)."""
    if isinstance(source, (str, bytes, os.PathLike)):
        if labels is not None:
            raise TypeError("labels= goes with a sequence of paths, not with a directory, "
                            "list file or shard pattern (whose labels come from the source)")
        return user_path(source, "Loader source", pattern=True), None
    try:
        items = list(source)
    except TypeError:
        raise TypeError(f"source must be a path (a directory, list file, pack or .tar shards) "
                        f"or a sequence of paths, not {type(source).__name__}") from None
    if items and all(isinstance(x, tuple) and len(x) == 2 for x in items):
        if labels is not None:
            raise TypeError("labels= given twice: as (path, label) pairs and as labels=")
        labels = [x[1] for x in items]
        items = [x[0] for x in items]
    paths = []
    for i, x in enumerate(items):
        if not isinstance(x, (str, bytes, os.PathLike)):
            raise TypeError(f"source[{i}] must be a path, not {type(x).__name__}")
        paths.append(os.fsencode(user_path(x, "Loader source", must_exist=False)))
    if labels is None:
        return paths, None
    import array
    try:
        lab = array.array("i", (int(v) for v in labels))
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgument(f"labels must be integers: {e}") from None
    if len(lab) != len(paths):
        raise InvalidArgument(f"{len(lab)} labels for {len(paths)} paths")
    return paths, lab


# ------------------------------------------------------------ single images

def _image_arg(source: Any) -> Any:
    """A path (str, os.PathLike) as os.fspath gives it; an image in memory
    (bytes, bytearray, memoryview, a NumPy uint8 array, any buffer) as it
    is; a file object (read() -> bytes) read."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source
    read = getattr(source, "read", None)
    if callable(read):
        data = read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"{type(source).__name__}.read() gave {type(data).__name__}, not "
                            "bytes: open the file in binary mode ('rb')")
        return data
    try:
        return memoryview(source)
    except TypeError:
        raise TypeError(f"an image is a path (str, os.PathLike), its bytes (bytes, bytearray, "
                        f"memoryview, a buffer) or a binary file object, not "
                        f"{type(source).__name__}") from None


def decode(source: Any, *, channels: int = 3,
           ignore_orientation: bool = False, max_pixels: Optional[int] = None,
           max_bytes: Optional[int] = None) -> Any:
    """Decodes an image (JPEG, PNG, WebP, TIFF, GIF, HEIF, BMP, camera raw;
    sniffed from the bytes) into a uint8 NumPy array [H, W, channels]
    (channels 3: RGB, 1: gray), EXIF orientation applied unless
    ignore_orientation. `source`: a path (str, os.PathLike), the file's
    bytes (bytes, bytearray, memoryview, any buffer: a WebDataset sample's
    "jpg" value, say) or a binary file object. No copy: the array owns the
    decoder's buffer."""
    import numpy
    kw = {}
    if max_pixels is not None:
        kw["max_pixels"] = max_pixels
    if max_bytes is not None:
        kw["max_bytes"] = max_bytes
    t = _ferry.decode(_image_arg(source), channels=channels,
                      ignore_orientation=ignore_orientation, **kw)
    return numpy.asarray(t)


def probe(source: Any) -> dict:
    """What an image's header says (format, width, height, channels,
    bit_depth, orientation, progressive, subsampling, ...) without decoding;
    `source` as for decode()."""
    return _ferry.probe(_image_arg(source))
