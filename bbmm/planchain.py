"""The plans of the last serial iterations over processes, and the next one's moved on
from them (:meth:`bbmm.distributed.DistributedRuntime.ahead`): where each iteration's
phases were planned by the same verified templates of :class:`bbmm.ownership.PlanMemo`,
their coordinates moving by the same amount from one iteration to the next, the next
iteration's plans are the last ones moved on once more.

.. autoclass:: PlanChain
"""
from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from .ordertype import delta, moved_on
from .ownership import PlanMemo
from .tiles import Tile


class PlanChain:
    """The last serial iterations' plans
    (:meth:`~bbmm.distributed.DistributedRuntime.ahead`): per iteration, the driver's
    comparisons and, per phase, its tiles, the verified template of :class:`PlanMemo` that
    planned it and its coordinates.

    The records the plans leave may cycle: LU's grow by a record or two each step and are
    compacted every few steps, each step of the cycle planned by its own template. The
    plans move on with period ``P`` (at most :attr:`PERIOD`) where each of the last ``P``
    iterations had the template of the iterations ``P`` and ``2P`` before it, and moved
    from them by the same amount: the next is then the one ``P`` before it moved on by
    that amount once more (the argument of :class:`bbmm.shifted.Chain`, applied to ``P``
    iterations at a time)."""

    PERIOD = 8

    def __init__(self) -> None:
        self.history: deque[tuple[Any, list[tuple[Sequence[Tile], Any]],
                                  list[dict[str, list[list[int]]]]]] = deque(
                                      maxlen=3 * self.PERIOD)
        self.period: int | None = None
        """A period checked against every iteration planned since (None: none yet)."""
        self._moves: deque[list[Any]] = deque()
        """With a period ``P``: how each of the last ``P`` iterations moved from the one
        ``P`` before it, per phase, oldest first; the next moves as the first did."""

    def add(self, sig: Any, entries: list[tuple[Sequence[Tile], Any]],
            bases: list[dict[str, list[list[int]]]], moved: bool = False) -> None:
        """The iteration just run (per phase, the bases its plan was decoded with):
        planned for real, or moved on (``moved``: as :meth:`next` gave it, which keeps the
        period)."""
        self.history.append((sig, entries, bases))
        if not moved:
            self.period = None
        elif self._moves:
            self._moves.rotate(-1)  # it moved as the one P before it did

    def next(self, sig: Any) -> tuple[list[tuple[Sequence[Tile], Any]],
                                      list[dict[str, list[list[int]]]]] | None:
        """Each phase's tiles, template and bases at the next iteration, moved on; None
        where the plans do not move on evenly, or two coordinates come too close for a
        template's key."""
        h = self.history
        if not h or h[-1][0] != sig:
            return None
        p = self.period
        if p is None:
            p = self.period = self._period(sig)
            if p is None:
                return None
            self._moves = deque([delta(bn, bb) for bn, bb in zip(h[i - p][2], h[i - 2 * p][2])]
                                for i in range(p))
        _, entries, now = h[-p]
        out = []
        for (_, entry), bn, by in zip(entries, now, self._moves[0]):
            moved = None if by is None else moved_on(entry[1], bn, by, PlanMemo.GAP)
            if moved is None:
                return None
            out.append(moved)
        return entries, out

    def _period(self, sig: Any) -> int | None:
        h = self.history
        for p in range(1, self.PERIOD + 1):
            if len(h) < 3 * p:
                return None
            if any(h[-j][0] != sig for j in range(1, 3 * p + 1)):
                return None
            if all(self._even(h[-j], h[-j - p], h[-j - 2 * p]) for j in range(1, p + 1)):
                return p
        return None

    @staticmethod
    def _even(a: tuple, b: tuple, c: tuple) -> bool:
        """Iterations ``c``, ``b``, ``a`` (in that order) planned by the same templates,
        their coordinates moving by the same amount from each to the next."""
        if len(a[1]) != len(b[1]) or len(b[1]) != len(c[1]):
            return False
        for (_, ea), (_, eb), (_, ec) in zip(a[1], b[1], c[1]):
            if ea[2] is not eb[2] or eb[2] is not ec[2]:
                return False  # (a template's entry of PlanMemo.plans, by identity)
        for ba, bb, bc in zip(a[2], b[2], c[2]):
            d = delta(ba, bb)
            if d is None or d != delta(bb, bc):
                return False
        return True
