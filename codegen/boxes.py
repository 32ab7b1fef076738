"""Initial bounding boxes of a tile, one per access (paper Section 6.1, Algorithm 1
``extract_initial_bounding_boxes``), with the cleanup flag of Section 7.2.

For every read and write access of a nest's statements (kept separate, in access-id
order), the data space of one tile is the image of the tile
(``[n, k, lb, ub] -> { S0[k, i, j] : lb <= i <= ub and ... }``, :mod:`bbmm.codegen.tiling`)
under the access relation; its bounding box comes from ``dim_min``/``dim_max``. The
runtime turns these initial boxes into disjoint ones (Algorithm 2, :mod:`bbmm.box`).

Floyd-Warshall, tile rows ``lb..ub`` at iteration ``k`` (``path[k][j]``; ``else 0`` /
``else -1`` make the box empty for a tile past the last row)::

    lo = ("k if ub >= 0 and n >= lb + 1 else 0", "0")
    hi = ("k if ub >= 0 and n >= lb + 1 else -1", "n - 1 if ub >= 0 and n >= lb + 1 else -1")
    cleanup = True           # path[i][j], path[i][k]: False (they move with lb, ub)

Every box is exact as a bounding box (the smallest one); :attr:`ParamBox.exact` says
whether it also equals the data space (a rectangular copy moves no extra element).
Accesses with the same box share it (:meth:`NestBoxes.shared`): the runtime gets one box
for them and the kernel one slot argument.

.. autoclass:: AccessBox
.. autoclass:: NestBoxes
.. autofunction:: extract_initial_bounding_boxes
.. autofunction:: plan_boxes
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from bbmm.codegen.deps import Plan
from bbmm.codegen.scop import Access, Scop
from bbmm.codegen.tiling import NestTiling, ParamBox, param_box, tile_plan

__all__ = ["AccessBox", "NestBoxes", "extract_initial_bounding_boxes", "plan_boxes",
           "access_box"]


@dataclass(frozen=True)
class AccessBox(ParamBox):
    """The initial bounding box of one access for one tile: ``lo``/``hi`` over the nest's
    :attr:`NestTiling.variables` (``n, k, lb, ub``); empty (``lo[0] > hi[0]``) where the
    tile does not execute the access. :attr:`ParamBox.set` is the data space,
    ``[n, k, lb, ub] -> { path[a, b] : ... }``."""

    access_id: int
    statement: str
    array: str
    kind: str
    """``read`` or ``write``."""
    text: str
    """The reference as written (``path[i][k]``)."""
    cleanup: bool
    """Section 7.2: the box depends only on the parameters and host (serial) iterators,
    not on the tile bounds, so it can be freed at the end of the host iteration. Always
    True for an empty-band nest (it has no tile bounds)."""


@dataclass(frozen=True)
class NestBoxes:
    """Algorithm 1's output for every array of one nest."""

    tiling: NestTiling = field(repr=False)
    accesses: tuple[AccessBox, ...]
    """One box per access of the nest's statements, in access-id order."""

    @property
    def nest_id(self) -> int:
        return self.tiling.nest.id

    @property
    def p0_range(self) -> ParamBox | None:
        return self.tiling.p0_range

    @property
    def grid(self) -> ParamBox | None:
        return self.tiling.grid

    @property
    def empty_cond(self) -> str:
        return self.tiling.empty_cond

    @property
    def variables(self) -> tuple[str, ...]:
        return self.tiling.variables

    @property
    def arrays(self) -> tuple[str, ...]:
        """Arrays accessed, in order of first access."""
        return tuple(dict.fromkeys(a.array for a in self.accesses))

    @property
    def writes(self) -> tuple[AccessBox, ...]:
        """The boxes of write accesses (what a tile may modify)."""
        return tuple(a for a in self.accesses if a.kind == "write")

    def of_array(self, array: str) -> tuple[AccessBox, ...]:
        """S_a^init of Algorithm 1: the boxes of every access to ``array``."""
        return tuple(a for a in self.accesses if a.array == array)

    def shared(self) -> dict[int, int]:
        """Access id -> the id of the first access (in access-id order) with the same
        initial bounding box and cleanup flag, itself for that one. Accesses that share a
        box (Floyd's ``path[i][j]``, read twice by its ``MIN`` macro and written) give the
        runtime one box between them and the kernel one slot argument: what a tile does
        with a box depends on the box alone, not on how many references name it or
        whether they read or write (the writes are :attr:`writes`)."""
        first: dict[tuple, int] = {}
        return {a.access_id: first.setdefault((a.array, a.lo, a.hi, a.cleanup), a.access_id)
                for a in self.accesses}

    def distinct(self, array: str) -> tuple[AccessBox, ...]:
        """The boxes of ``array`` that :meth:`shared` keeps, one per distinct box, each
        the first access holding it."""
        rep = self.shared()
        return tuple(a for a in self.of_array(array) if rep[a.access_id] == a.access_id)

    def sharers(self, box: AccessBox) -> tuple[AccessBox, ...]:
        """The accesses whose box is ``box``'s (itself included), in access-id order."""
        rep = self.shared()
        return tuple(a for a in self.accesses if rep[a.access_id] == rep[box.access_id])


def access_box(acc: Access, tiling: NestTiling, within: isl.Set | None = None) -> AccessBox:
    """``get_bounding_box(get_data_polyhedron(f))`` of one access for one tile (``within``:
    the array's elements, see :func:`bbmm.codegen.tiling.param_box`)."""
    data = acc.relation.intersect_domain(tiling.tile_of(acc.statement)).range()
    box = param_box(data, tiling.context, within=within, loose_divs=tiling.loose_divs)
    bounds = [tiling.lb, tiling.ub] if tiling.lb else []
    # Section 7.2: a box that does not move with the tile depends on the serial iterators
    # only and is freed at the end of their iteration; one that does not move with them
    # either (a break flag's one element, a scalar's) is the same box at the next
    # iteration: kept, so that a time step can leave the device as it found it (replay)
    cleanup = box.invariant_in(bounds) and not (tiling.host and box.invariant_in(tiling.host))
    return AccessBox(**{f: getattr(box, f) for f in ParamBox.__dataclass_fields__},
                     access_id=acc.id, statement=acc.statement, array=acc.array,
                     kind=acc.kind, text=acc.text, cleanup=cleanup)


def extract_initial_bounding_boxes(scop: Scop, tiling: NestTiling) -> NestBoxes:
    """Algorithm 1 for every array of a nest: the initial bounding box of each access."""
    accs = sorted((a for s in tiling.statements for a in scop.statement(s).accesses),
                  key=lambda a: a.id)
    within = {a: scop.bounds(a) for a in dict.fromkeys(acc.array for acc in accs)}
    return NestBoxes(tiling, tuple(access_box(a, tiling, within[a.array]) for a in accs))


def plan_boxes(scop: Scop, plan: Plan, tilings: tuple[NestTiling, ...] | None = None
               ) -> tuple[NestBoxes, ...]:
    """:func:`extract_initial_bounding_boxes` for every nest of a plan."""
    if tilings is None:
        tilings = tile_plan(scop, plan)
    return tuple(extract_initial_bounding_boxes(scop, t) for t in tilings)


def data_space(acc: Access, tiling: NestTiling) -> isl.Set:
    """The data space of one access for one tile (``[n, k, lb, ub] -> { A[a] : ... }``)."""
    return acc.relation.intersect_domain(tiling.tile_of(acc.statement)).range()
