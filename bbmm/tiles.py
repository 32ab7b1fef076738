"""The runtime's data types, apart from the code that uses them: a :class:`Tile` as the
generated driver hands it over (built from the :class:`TileSpec` of its ``nest<N>_tile``
functions), a resident box (:class:`Copy`) as the buffer managers and
the coherence directory keep it, and the boxes a tile got (:class:`TileBuffers`), from
which its kernel's arguments are packed."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .box import Box
from .devices.base import MEMO_SIZE, Allocation, Device

__all__ = ["Tile", "TileSpec", "Copy", "TileBuffers", "INT32", "int32", "last_use"]


class _Interned(dict):
    """``np.int32`` kernel scalars by value, made on first use (:data:`INT32`)."""

    def __missing__(self, v: int) -> np.int32:
        if len(self) >= 1 << 16:
            self.clear()
        x = self[v] = np.int32(v)
        return x


INT32: dict[int, np.int32] = _Interned()
"""``INT32[v]`` is ``np.int32(v)``, the same object for the same value: a launch that sets
only the arguments that changed (:func:`bbmm.devices.kernelargs.set_changed`) then finds
the unchanged ones by identity, without a numpy comparison, and no scalar is made anew.
A subscript, not a call: sizes, host iterators, tile bounds, grid origins, strides and
access slots are looked up several times per tile."""


def int32(v: int) -> np.int32:
    """``INT32[v]`` (:data:`INT32`), for a caller that wants a function."""
    return INT32[v]


_STRIDES: dict[tuple[int, ...], tuple[list[int], list[np.int32]]] = {}
"""A copy's strides by its shape, as ints and as kernel arguments: a transient box (a
row ``k`` replayed up to a shift) is a new copy of one shape every serial iteration."""


class TileSpec(NamedTuple):
    """What a generated driver's ``nest<N>_tile`` function returns for a non-empty tile:
    its boxes at one serial iteration, evaluated from the compiler's closed forms, read by
    field when the driver builds the :class:`Tile` (fields as there)."""

    boxes: Mapping[str, Sequence[Box]]
    """Initial bounding boxes per array, one per distinct access (Algorithm 1)."""
    writes: Mapping[str, Sequence[Box]]
    flowout: Mapping[str, Sequence[Box]]
    writeout: Mapping[str, Sequence[Box]]
    cleanup: Mapping[str, Sequence[bool]]
    """Per box of :attr:`boxes`: freed at the end of the serial iteration (Section 7.2)."""
    grid: tuple[tuple[int, int], ...]
    """``(lo, hi)`` of each band iterator over the tile: the kernel's NDRange."""


@dataclass(frozen=True)
class Tile:
    """One tile of a parallel loop instance, with everything the runtime needs about it.

    Boxes are in array coordinates (inclusive bounds); empty boxes are ignored.
    ``writes`` must cover every element the kernel writes; ``flowout`` and
    ``writeout`` are the bounding boxes of the compile-time flow-out and write-out
    sets (optional for correctness: the runtime pulls what is missing, at a cost).
    """

    device: int
    boxes: Mapping[str, Sequence[Box]]
    """Initial bounding boxes per array (Algorithm 1): one per access function, or one for
    the accesses whose boxes are the same (the generated drivers')."""
    kernel: Callable[[Device, TileBuffers], Any]
    """Launches the computation: ``kernel(device, buffers)``."""
    writes: Mapping[str, Sequence[Box]] = field(default_factory=dict)
    flowout: Mapping[str, Sequence[Box]] = field(default_factory=dict)
    writeout: Mapping[str, Sequence[Box]] = field(default_factory=dict)
    cleanup: Mapping[str, Sequence[bool]] = field(default_factory=dict)
    """Per initial box: True when it depends on the serial iterators only (Section 7.2)."""
    fresh: frozenset[str] = frozenset()
    """Arrays the tile only writes, through exact write boxes: every element of their
    boxes is overwritten, so new boxes need no read-in."""
    name: str = ""
    span: tuple[int, int] | None = None
    """The range of the tiled iterator (band loop 0) over the tile, when the kernel runs
    a part of it as ``kernel(device, buffers, rows=(lo, hi))``."""
    writers: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    """Per array, ``(d, cmin, cmax)``: its element ``x`` along dimension ``d`` is written
    only by points whose tiled iterator lies in ``[x - cmax, x - cmin]``
    (:func:`bbmm.codegen.flow.edge_writers`; only for a tiled loop that carries no
    dependence, so that the tile's rows may run as several launches)."""
    original: Tile | None = field(default=None, compare=False, repr=False)
    """The tile as the driver gave it, when the runtime widened its boxes of arrays held
    whole (taken instead if the widened tile does not fit the device)."""

    def __init__(self, device: int, boxes: Mapping[str, Sequence[Box]],
                 kernel: Callable[[Device, TileBuffers], Any],
                 writes: Mapping[str, Sequence[Box]] | None = None,
                 flowout: Mapping[str, Sequence[Box]] | None = None,
                 writeout: Mapping[str, Sequence[Box]] | None = None,
                 cleanup: Mapping[str, Sequence[bool]] | None = None,
                 fresh: frozenset[str] = frozenset(), name: str = "",
                 span: tuple[int, int] | None = None,
                 writers: Mapping[str, tuple[int, int, int]] | None = None,
                 original: Tile | None = None) -> None:
        # the fields set at once, past the frozen class's per-field checks: a driver
        # builds every tile of Floyd's every k (2.9 us a tile that way, 1.7 us this way)
        self.__dict__.update(
            device=device, boxes=boxes, kernel=kernel,
            writes={} if writes is None else writes,
            flowout={} if flowout is None else flowout,
            writeout={} if writeout is None else writeout,
            cleanup={} if cleanup is None else cleanup, fresh=fresh, name=name, span=span,
            writers={} if writers is None else writers, original=original)

    def but(self, **changes: Any) -> Tile:
        """A copy with ``changes`` to its fields, as ``dataclasses.replace`` makes, without
        running :meth:`__init__` again: a step moved on moves a tile to another device or
        its boxes along (2.5 us a tile with ``replace``, 0.5 us this way, on the development
        machine)."""
        c = object.__new__(Tile)
        c.__dict__.update(self.__dict__)
        c.__dict__.update(changes)
        return c


@dataclass(eq=False, slots=True)
class Copy:
    """A resident bounding box of one array on one device (the paper's box buffer)."""

    array: str
    box: Box
    device: Device
    alloc: Allocation
    itemsize: int
    stale: list[Box] = field(default_factory=list)
    """Disjoint parts of ``box`` where this copy does not hold the newest value."""
    uses: int = 0
    """Tiles using the box now (Figure 7's usage count); 0 means it is on the unused list."""
    cleanup_iter: object = None
    """Serial iteration at whose end the box is freed (cleanup flag), or None."""
    touched: bool = True
    """Used by a tile since the last end of a serial iteration."""
    last: Any = None
    """The event of the last command that used the copy's memory (None: none pending
    that a later user of the memory must wait for); handed to the device on free."""
    uid: int = field(default_factory=count().__next__)
    """A number no other copy of the run has (unlike ``id``, never reused after a free):
    the copy's name in a replay template's key (:mod:`bbmm.shifted`)."""
    _kargs: list | None = None
    _bargs: tuple | None = None
    _fits: bool | None = None

    @property
    def nbytes(self) -> int:
        return self.box.volume * self.itemsize

    def kernel_args(self) -> list:
        """``[buffer, base, strides...]`` of this copy for kernels (computed once)."""
        if self._kargs is None:
            box = self.box
            lo = box.lo
            shape = box.shape
            got = _STRIDES.get(shape)
            if got is None:
                strides = [1] * len(shape)
                for d in range(len(shape) - 2, -1, -1):
                    strides[d] = strides[d + 1] * shape[d + 1]
                if len(_STRIDES) >= MEMO_SIZE:
                    _STRIDES.clear()
                got = _STRIDES[shape] = (strides, [np.int32(st) for st in strides[:-1]])
            strides, args = got
            base = self.alloc.offset // self.itemsize
            top = 0  # the largest |x[d]| * stride[d] summed: what fits_int bounds
            for l, h, st in zip(lo, box.hi, strides):
                base -= l * st
                top += max(abs(l), abs(h)) * st
            # the kernel computes base + sum(x[d] * stride[d]) with each product in BBMM_IDX
            self._fits = abs(base) + top < 2**31
            self._kargs = [self.alloc.buf, np.int64(base), *args]
        return self._kargs

    def bound_args(self, piece: Box) -> list:
        """``[lo..., hi...]`` of a piece of this copy as int32 kernel arguments (the last
        piece's are kept: a tile takes the same piece of a copy again and again)."""
        last = self._bargs
        if last is not None and last[0] == piece:
            return last[1]
        get = INT32.__getitem__
        args = [*map(get, piece.lo), *map(get, piece.hi)]
        self._bargs = (piece, args)
        return args

    def fits_int(self) -> bool:
        """Every element offset of this copy in its arena fits a 32-bit int."""
        if self._fits is None:
            self.kernel_args()  # (which works it out)
        return self._fits

    def element_offset(self) -> int:
        """Offset of the box's first element in its arena, in elements (a kernel argument)."""
        return self.alloc.offset // self.itemsize

    def __repr__(self) -> str:
        return f"Copy({self.array}{self.box} on {self.device.name}, uses={self.uses})"


@dataclass
class TileBuffers:
    """The tile's disjoint boxes per array and the resident copy holding each.

    ``pieces[a][i] = (box, copy)``: ``box`` is the i-th disjoint box of array ``a``,
    held by ``copy`` (whose own box contains it, and may be larger when the box was
    found present). ``access[a][k]`` is the index of the single piece holding the
    k-th initial box, or -1 when that access is split over several pieces (Fig. 9).
    """

    pieces: dict[str, list[tuple[Box, Copy]]] = field(default_factory=dict)
    access: dict[str, list[int]] = field(default_factory=dict)
    launches: dict[Any, Any] = field(default_factory=dict)
    """Launch preparations derived from the pieces (kernel object, array arguments), per
    device and kernel: the pieces never change, and a replayed tile launches again."""
    before: TileBuffers | None = None
    """The buffers the same tile took at the last replay, with the same accesses but
    other pieces (a row ``k`` replayed up to a shift is a new copy every serial
    iteration): its launches are this one's but for the array arguments
    (:func:`bbmm.hostlib.launch`)."""
    prepared: tuple | None = None
    """``(device, grid, kernel, global size, local size, arguments after the scalars,
    regridder, how, name, bare)`` of the last launch on these buffers of a whole tile (no
    ``rows``), whose arguments are then ``[*scalars, *arguments]``; ``regridder(device,
    len(grid), how)`` gives a function from another grid to the global and local sizes
    and the first ``len(grid)`` of those arguments, or None; ``name``: the kernel's;
    ``bare``: the arrays whose pieces' bounds the (lean) kernel does not take.
    What a template's replay repeats with the new pieces' arguments in place
    (:class:`bbmm.shiftcode.Relaunch`), and a fixed point's replay as it is
    (:func:`bbmm.replay.relaunch`)."""

    def copies(self) -> list[Copy]:
        return [c for ps in self.pieces.values() for _, c in ps]


def last_use(copies: Iterable[Copy], before: Any, event: Any) -> None:
    """A launch's ``event`` as the last use so far of the ``copies`` it took (``before``:
    its device's last command before it): a side read-in into their memory, once they
    are freed, waits for it. A launch that enqueued nothing (``event`` is ``before``)
    leaves them as they were (the device's older kernel would understate a read-in still
    queued)."""
    if event is not before:
        for c in copies:
            c.last = event
