"""Copies of host memory split over a few threads: the exchange's packing and unpacking.

A process of ``bbmm run --procs`` moves a halo between the host arrays and the shared
mailboxes with the processor (:meth:`bbmm.shm.ShmComm.swap`). One core copies at about
12 GB/s on a 4 x H100 host, so a middle process of four packing and unpacking heat3d's
two 1 MiB planes each way spends about 340 us per phase in copies, more than the phase's
kernels. numpy lets go of the GIL while it copies, so threads copy at once: two 1 MiB
copies took 171 us one after the other and 134 us on two threads, two of 2.6 MB 480 and
326 us, two of 8 MiB 1611 and 843 us (on that host).

:class:`Copier` splits a list of copies into about equal pieces (along the first axis of
an array that has more than one slice) and gives all pieces but one to its threads,
which wait on an event between copies; small lists are copied on the calling thread,
where waking a thread would cost more than it saves.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

Copy = tuple[np.ndarray, np.ndarray]
"""``(dst, src)``: views of one shape; ``dst[...] = src``."""

MIN_BYTES = 2 << 20
"""Bytes of a list of copies below which one thread copies it all."""
PIECE = 1 << 20
"""Bytes a thread copies at least: a wake-up costs tens of microseconds, and four
processes swapping two 1 MiB planes each took 474 us a round with pieces of 256 KiB (four
threads each) against 406 us on one thread (``python3 scripts/bench_exchange.py --procs 4
--shape 512x512`` on 4 x H100)."""


def split(copies: Sequence[Copy], parts: int) -> list[list[Copy]]:
    """``copies`` in ``parts`` lists of about equal bytes, in order, each copy cut along
    the first axis longer than one where it straddles two lists."""
    total = sum(d.nbytes for d, _ in copies)
    target = -(-total // parts) if parts else total
    out: list[list[Copy]] = [[]]
    room = target
    for d, s in copies:
        while d.nbytes > room and len(out) < parts:
            axis = next((i for i, n in enumerate(d.shape) if n > 1), None)
            # bytes of one slice along the axis (one element: the copy is one slice)
            per = d.nbytes if axis is None else d.nbytes // d.shape[axis]
            k = max(0, room) // per
            if k == 0:
                if out[-1]:
                    out.append([])
                    room = target
                    continue
                if axis is None:
                    break  # one element more than a list's share: whole, alone
                k = 1  # one slice is more than a list's share: it goes alone
            idx = (slice(None),) * axis
            out[-1].append((d[idx + (slice(0, k),)], s[idx + (slice(0, k),)]))
            d, s = d[idx + (slice(k, None),)], s[idx + (slice(k, None),)]
            out.append([])
            room = target
        if d.size:
            out[-1].append((d, s))
            room -= d.nbytes
    return [p for p in out if p]


def _run(copies: Sequence[Copy]) -> None:
    for d, s in copies:
        d[...] = s


class _Worker:
    """A thread that copies what it is handed, then says so."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.done = threading.Event()
        self.task: Sequence[Copy] = ()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="bbmm-copier", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            task = self.task
            if task is None:
                return
            try:
                _run(task)
            except BaseException as e:  # handed back to the caller
                self.error = e
            self.done.set()


class Copier:
    """Runs lists of copies on the calling thread and up to ``threads`` more (made on
    first use); ``min_bytes`` below which one thread copies a list."""

    def __init__(self, threads: int, min_bytes: int = MIN_BYTES, piece: int = PIECE):
        self.threads, self.min_bytes, self.piece = max(0, threads), min_bytes, piece
        self._workers: list[_Worker] = []

    def copy(self, copies: Sequence[Copy]) -> None:
        """Every ``dst[...] = src`` of ``copies``; returns once all are done."""
        total = sum(d.nbytes for d, _ in copies)
        parts = min(self.threads + 1, total // self.piece) if total >= self.min_bytes else 1
        if parts <= 1:
            _run(copies)
            return
        pieces = split(copies, parts)
        while len(self._workers) < len(pieces) - 1:
            self._workers.append(_Worker())
        busy = self._workers[:len(pieces) - 1]
        for w, task in zip(busy, pieces[1:]):
            w.task = task
            w.go.set()
        error = None
        try:
            _run(pieces[0])
        finally:
            for w in busy:
                w.done.wait()
                w.done.clear()
                w.task = ()
                if w.error is not None and error is None:
                    error = w.error
                w.error = None
        if error is not None:
            raise error

    def close(self) -> None:
        """Stop the threads."""
        for w in self._workers:
            w.task = None  # type: ignore[assignment]
            w.go.set()
        for w in self._workers:
            w.thread.join(timeout=1)
        self._workers.clear()
