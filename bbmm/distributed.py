"""Several processes (MPI ranks), each driving its own devices, running one program.

The paper's multi-GPU machine is one node of a cluster. Here every rank runs the same
host driver: it evaluates every tile of every phase (the closed-form boxes cost a few
microseconds), so every rank knows, with no communication, which device of which rank
runs each tile (the static block distribution over *all* devices of all ranks) and
which boxes each tile reads and writes. Each rank runs only its own tiles, on its own
devices, with the single-node :class:`~bbmm.runtime.Runtime` (its host copy, box
buffers and device coherence unchanged).

Between ranks, "the host copy" becomes "the ranks that need it", in the spirit of
flow-out partitioning (Dathathri et al., PACT 2013): data moves from the rank that last
wrote it only to the ranks whose tiles read it, in one point-to-point message per pair
of ranks, sized by the exact region needed. What each rank needs follows from the
bookkeeping every rank keeps identically (:class:`~bbmm.ownership.Ownership`):

- ``records[a]``: disjoint boxes of array ``a``, each with the rank whose tile wrote it
  last (the *owner*) and the ranks that hold that newest value (*holders*: the owner,
  and those it was sent to). Elements in no record still hold their initial value,
  which every rank has (each rank fills its host arrays with the same inputs).
- before a phase runs (:func:`~bbmm.ownership.plan_exchange`), every rank that is not a holder of an
  element its tiles' boxes cover receives it from the owner, and becomes a holder;
  after it, every tile's write boxes make its rank the owner and only holder there.

A phase whose tiles on different ranks have overlapping write boxes (possible only when
boxes over-approximate the written elements) runs in *stages* (:func:`~bbmm.ownership.stages`): a tile
never runs concurrently with an overlapping writer of another rank, so that the later
one starts from the earlier one's values, as the single-node runtime's rounds ensure.
At the end, :meth:`DistributedRuntime.finish` gathers on rank 0 the elements it does
not hold (from their owners only), or leaves the result distributed.

Correctness does not rest on the compile-time flow-out sets: a rank receives exactly
the elements its tiles' boxes cover and that another rank wrote since it last had
them. On Floyd-Warshall that is row ``k`` from its owner at iteration ``k``: one row
per serial iteration to each other rank (``tests/app/e2e/test_mpi.py`` checks the bytes).

The bookkeeping and the planning are in :mod:`bbmm.ownership`.

.. autoclass:: DistributedRuntime
"""
from __future__ import annotations

import time
from functools import partial
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .box import Box, hull_all
from .coherence import HostCopy
from .devices.base import Device
from .messages import Boxes, Comm, apart, swap
from .ownership import Messages, Ownership, PlanMemo, SpecKey, plan_gather
from .planchain import PlanChain
from .runtime import PhaseSizes, Runtime, Tile


# {{{ the runtime over ranks

def _moved(t: Tile, device: int) -> Tile:
    """``t`` on another device."""
    return t.but(device=device)


class _SharedHost(HostCopy):
    """The host copy of a rank whose large messages stay in their sender's arrays
    (:mod:`bbmm.shm`): it leaves its own for its receivers and goes on
    (:attr:`~bbmm.shm.ShmComm.defer_takes`), and its devices load what it receives
    straight out of the sender's (:attr:`~bbmm.shm.ShmComm.lend`). A copy from a device
    into a region a message of either kind covers first waits for the receiver, or
    repays the loan."""

    def __init__(self, arrays: dict[str, np.ndarray], comm: Any):
        super().__init__(arrays)
        self.comm = comm

    def source(self, name: str, box: Box) -> tuple[np.ndarray, tuple[int, ...]] | None:
        return self.comm.loaned(name, box) if self.comm.lend else None

    @property
    def lends(self) -> bool:  # type: ignore[override]
        return bool(self.comm.lend)

    def lent(self, name: str, box: Box) -> bool:
        return self.comm.lend and self.comm.loaned(name, box, load=False) is not None

    def storing(self, name: str, box: Box) -> None:
        comm = self.comm
        if comm.lend:
            comm.repay(name, box)
        if comm.untaken(name, box):
            comm.settle_sends(name, box)

    def lent_load(self, name: str, box: Box, event: Any, device: Any) -> None:
        self.comm.lent_load(name, box, event, device)

    def written_back(self, name: str, box: Box) -> None:
        self.comm.written_back(name, box)


@dataclass
class RankStats:
    """Inter-rank traffic of one rank. ``exchange`` is the coherence between phases,
    ``gather`` the final collection on rank 0."""

    rank: int
    devices: int
    sent_bytes: dict[str, int] = field(default_factory=lambda: {"exchange": 0, "gather": 0})
    received_bytes: dict[str, int] = field(default_factory=lambda: {"exchange": 0, "gather": 0})
    messages_sent: int = 0
    messages_received: int = 0
    sent_to: dict[int, int] = field(default_factory=dict)
    """Exchange bytes sent to each other rank."""
    received_from: dict[int, int] = field(default_factory=dict)
    stages: int = 0
    sent_early: int = 0
    """Stages in which this rank only sent, and sent before enqueuing its tiles (the
    regions' newest values were home already: :meth:`DistributedRuntime._send_before`)."""
    serial_iterations: int = 0
    """Iterations of the outermost serial loop run (for per-iteration times)."""
    plan_s: float = 0.0
    exchange_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "devices": self.devices,
                "sent_bytes": sum(self.sent_bytes.values()),
                "received_bytes": sum(self.received_bytes.values()),
                "exchange_sent_bytes": self.sent_bytes["exchange"],
                "exchange_received_bytes": self.received_bytes["exchange"],
                "gather_sent_bytes": self.sent_bytes["gather"],
                "gather_received_bytes": self.received_bytes["gather"],
                "messages_sent": self.messages_sent,
                "messages_received": self.messages_received,
                "sent_to": {str(k): v for k, v in sorted(self.sent_to.items())},
                "received_from": {str(k): v for k, v in sorted(self.received_from.items())},
                "stages": self.stages, "sent_early": self.sent_early,
                "serial_iterations": self.serial_iterations,
                "time_s": {"plan": self.plan_s, "exchange": self.exchange_s}}


class RemoteDevice:
    """A device of another rank in the global device list (only counted, never used)."""

    def __init__(self, rank: int, index: int):
        self.rank = rank
        self.index = index
        self.name = f"rank{rank}:{index}"

    def __repr__(self) -> str:
        return f"<RemoteDevice {self.name}>"


class DistributedRuntime:
    """The runtime as a generated driver sees it, over the devices of every rank.

    ``devices`` lists all devices of all ranks (this rank's own, and
    :class:`RemoteDevice` placeholders), so the driver's static block distribution
    spreads tiles over all of them; :meth:`run_phase` runs this rank's tiles on its
    local :class:`~bbmm.runtime.Runtime` after the exchange that brings their data.

    :arg devices: this rank's devices (ranks may have different numbers).
    :arg gather: at :meth:`finish`, collect the result on rank ``root``; otherwise
        each rank keeps what it holds (:meth:`held`).
    """

    def __init__(self, devices: Sequence[Device], arrays: Mapping[str, np.ndarray] | HostCopy,
                 comm: Comm, *, gather: bool = True, root: int = 0, **runtime: Any):
        self.comm = comm
        self.rank = comm.rank
        self.gather_result = gather
        self.root = root
        # Replay (bbmm.replay) over ranks: each phase's exchange runs as the phase's
        # ``before``/``after`` callbacks, where the local runtime issues the phase, and the
        # regions received are part of the phase's key (:meth:`run_phase`).
        shared = getattr(comm, "defer_takes", None) is not None and not isinstance(
            arrays, HostCopy)
        if shared:
            # a message left in this rank's arrays does not hold it up: what would write
            # its regions waits for its receiver instead (the next swap, a store); with
            # lend, one left in another's is loaded from there and copied here later
            comm.defer_takes = True
            arrays = _SharedHost(dict(arrays), comm)
        self.local = Runtime(devices, arrays, shared_flowout=True, processes=comm.size,
                             **runtime)
        self.local.ahead_alone = False  # moved on here, with the phase's exchange
        self._chain: PlanChain | None = None
        """Iterations whose phases were planned by verified templates with coordinates
        moving by the same amount each iteration (:meth:`ahead`)."""
        self._planned: list[tuple[Sequence[Tile], Any, Any]] = []
        """This iteration's phases: their tiles, how each was planned
        (:attr:`PlanMemo.last`) and its spec."""
        self._sig: Any = None
        self._ahead_done = False
        self._moving: tuple | None = None
        """This iteration's plans moved on (:meth:`ahead`), for a process that plans its
        tiles for real: per phase the tiles as placed and the template, and the bases."""
        if shared and self.local.config.lend:
            comm.lend = True
            comm.wait_loads = partial(self._settle, loads=True)
            comm.loads_done = self._loads_done
            comm.pin = getattr(self.local.devices[0], "pin", None) if self.local.devices \
                else None
            comm.idle_work = self._idle_work
        counts = comm.allgather(len(devices))
        self.counts = list(counts)
        self.firsts = [sum(counts[:r]) for r in range(len(counts))]
        """The global index of each rank's first device."""
        self.first = self.firsts[self.rank]
        self.rank_of = [r for r, c in enumerate(counts) for _ in range(c)]
        self.devices: list[Any] = []
        for r, c in enumerate(counts):
            if r == self.rank:
                self.devices.extend(self.local.devices)
            else:
                self.devices.extend(RemoteDevice(r, i) for i in range(c))
        self.own = Ownership(list(self.local.host.arrays), len(counts))
        self.memo = PlanMemo()
        self._messages: dict[int, tuple[Sequence[tuple[str, Box]], Boxes]] = {}
        """Messages of the lists of boxes swapped (:meth:`_message`), by identity."""
        self._stages: dict[Any, list[tuple]] = {}
        """This rank's stages of a phase, by :attr:`PlanMemo.last_spec_key`."""
        self._bare_seen: dict[tuple, None] = {}
        """The keys (:meth:`_bare_key`) of the phases met lately: one met again is looked
        up by its key."""
        self._placements: dict[SpecKey, list[int]] = {}
        """The devices :meth:`_homes` gave a small phase's tiles, by :meth:`_bare_key`
        and the records."""
        self.rank_stats = RankStats(self.rank, len(devices))
        self.place = self.local.config.place and len(counts) > 1
        """Move the tiles of small phases to the rank holding their data (:meth:`_place`)."""
        self._sizes = PhaseSizes()  # of the phases of every rank
        self.placed = 0
        """Tiles run on another rank than the driver's placement (:meth:`_place`)."""

    # the runtime's attributes that reports and drivers read
    @property
    def stats(self) -> Any:
        return self.local.stats

    @property
    def host(self) -> HostCopy:
        return self.local.host

    @property
    def mode(self) -> str:
        return self.local.mode

    @property
    def reuse(self) -> bool:
        return self.local.reuse

    @property
    def coherence(self) -> str:
        return self.local.coherence

    def run_phase(self, tiles: Sequence[Tile], serial: object = None, *,
                  spec: Any = None, args: Sequence[Any] | None = None) -> None:
        """Run one parallel loop instance: per stage, the exchange and this rank's tiles
        (``spec``, ``args``: as :meth:`bbmm.runtime.Runtime.run_phase` takes them; a stage
        is named by the phase's ``spec`` and the positions of its tiles in the phase).

        The exchange runs where the local runtime issues the stage's device operations
        (as the stage's ``before`` and ``after``): at once, or later when the local
        runtime holds the stage back and replays a repeating serial iteration. A rank
        that receives exchanges before its tiles run; a rank that only sends enqueues its
        tiles first and sends after (:meth:`_send_before`)."""
        st = self.rank_stats
        t0 = time.perf_counter()
        pend = self._moving
        i = len(self._planned)
        if (pend is not None and spec is None and i < len(pend[0])
                and len(pend[0][i][0]) == len(tiles)):
            # the plans moved on (ahead), this process's devices not: the tiles placed
            # and planned as every process that moved the iteration on has them
            tiles = [t if t.device == c.device else _moved(t, c.device)
                     for t, c in zip(tiles, pend[0][i][0])]
            entry, bases = pend[0][i][1], pend[1][i]
            plan = self.memo._decode(self.own, tiles, entry[2], bases, self.rank)
            self.memo.last = (entry, bases)
        else:
            # every phase counts toward the largest one; a small one not named by a spec
            # runs where its data is, and is looked up by what its plan depends on (its
            # placement too): one reading a table at [t] meets the same plan every step
            small = self.place and tiles and self._sizes.small(tiles) and spec is None
            bare = self._bare_key(tiles) if small else None
            if bare is not None and bare not in self._bare_seen:
                # first met: planned as before (a phase whose boxes move every step,
                # LU's row k, is never met again and would only fill the tables)
                if len(self._bare_seen) >= PlanMemo.SIZE:
                    self._bare_seen.pop(next(iter(self._bare_seen)))
                self._bare_seen[bare] = None
                bare = None
            if small:
                tiles = self._place(tiles, bare)
            plan = self.memo.plan(self.own, tiles, self.rank_of,
                                  spec if bare is None else bare)
        self._planned.append((tiles, self.memo.last, spec))
        st.plan_s += time.perf_counter() - t0
        self._step("plan", t0)
        if spec is not None:
            # a phase named by its spec that met the same records has the same plan, and
            # so the same stages of this rank (its tiles, what it sends and receives)
            rk = self.memo.last_spec_key
            stages = self._stages.get(rk)
            if stages is None:
                stages = self._stages[rk] = self._my_stages(plan, tiles, spec)
                if len(self._stages) > PlanMemo.SIZE:
                    self._stages.pop(next(iter(self._stages)))
        else:
            stages = self._my_stages(plan, tiles, None)
        for mine, sub, sends, recvs, key, exchange in stages:
            st.stages += 1
            ph = self._stage_phase(mine, serial, sends, key, exchange)
            self.local.run_phase(mine, serial, before=ph[2], after=ph[3], key=key, spec=sub,
                                 args=args)

    def _bare_key(self, tiles: Sequence[Tile]) -> tuple:
        """What the plan of a small phase not named by a spec depends on, apart from the
        records (:func:`bbmm.ownership.plan_phase`): each tile's device, its boxes, its
        writes and its fresh arrays; without the boxes of an array that no record holds
        and no tile of the phase writes, since every rank has its values and no message
        moves them, wherever the boxes lie (fdtd2d's ``_fict_[t]``, a new box every
        step). With the records, a key of :attr:`memo`'s phases named by their spec."""
        recs = self.own.records
        written = {a for t in tiles for a in t.writes}
        return ("tiles", tuple(
            (t.device, tuple((a, tuple(bs)) for a, bs in t.boxes.items()
                             if a in written or recs.get(a)),
             tuple((a, tuple(ws)) for a, ws in t.writes.items()), t.fresh)
            for t in tiles))

    def _place(self, tiles: Sequence[Tile], bare: tuple | None = None) -> Sequence[Tile]:
        """The tiles moved to the devices :meth:`_homes` gives them, looked up by the
        phase's :meth:`_bare_key` ``bare`` and the records (the placement depends on
        nothing else) where given."""
        homes = key = None
        if bare is not None:
            key = SpecKey((bare, self.own.comparable()))
            homes = self._placements.get(key)
        if homes is None:
            homes = self._homes(tiles)
            if key is not None:
                if len(self._placements) >= PlanMemo.SIZE:
                    self._placements.pop(next(iter(self._placements)))
                self._placements[key] = homes
        out = []
        for t, d in zip(tiles, homes):
            if d != t.device:
                t = _moved(t, d)
                self.placed += 1
            out.append(t)
        return out

    def _homes(self, tiles: Sequence[Tile]) -> list[int]:
        """The device each tile of a small phase runs on: its own where its rank holds
        the newest values of most of its boxes, else the first of the rank that does (by
        the records every rank keeps alike, so every rank moves them alike), the driver's
        placement winning ties.

        The driver places tiles by one global grid, so a small nest along another
        dimension than the big ones (LU's scaling of row ``k`` along ``j``, fdtd2d's
        ``ey[0][j]``: one tile on the first device, or with more tiles one on every
        rank) runs where none or little of its data is: its rank would receive the row
        and send it back, two exchanges per serial iteration instead of one. A small
        phase's kernels are too short for load balance to matter; any placement is
        correct (the exchange follows the records). Phases named by a ``spec`` keep
        their placement (their plan is kept by it), but count toward the largest.
        """
        if not tiles:
            return []
        # the records that meet the phase's boxes at all (a few: the phase is small)
        near: dict[str, list] = {}
        for a in dict.fromkeys(a for t in tiles for a in t.boxes):
            hull = hull_all(b for t in tiles for b in t.boxes.get(a, ()) if not b.is_empty)
            near[a] = [] if hull is None else [
                r for r in self.own.records.get(a, ()) if r[0].overlaps(hull)]
        out = []
        for t in tiles:
            score = [0] * len(self.counts)
            for a, bs in t.boxes.items():
                recs = near[a]
                if not recs:
                    continue
                for b in dict.fromkeys(bs):
                    for rb, _, holders in recs:
                        inter = rb.intersect(b)
                        if inter is not None:
                            for r in holders:
                                score[r] += inter.volume
            home = self.rank_of[t.device]
            best = max(range(len(score)), key=lambda r: (score[r], r == home))
            out.append(t.device if best == home else self.firsts[best])
        return out

    def _my_stages(self, plan: list[tuple[list[Tile], Messages]], tiles: Sequence[Tile],
                   spec: Any) -> list[tuple]:
        """Per stage of ``plan``: this rank's tiles (on its local devices), their spec
        (``spec`` and their positions in the phase), what it sends and receives, the
        stage's replay key (None: no exchange) and, where it receives or copies block, the
        exchange to run before its tiles."""
        lo, hi = self.first, self.first + len(self.local.devices)
        pos = None if spec is None else {id(t): i for i, t in enumerate(tiles)}
        out = []
        for stage, msgs in plan:
            mine = [t if lo == 0 else _moved(t, t.device - lo)
                    for t in stage if lo <= t.device < hi]
            sub = None if pos is None else (
                spec, tuple(pos[id(t)] for t in stage if lo <= t.device < hi))
            out.append((mine, sub, *self._stage_messages(msgs)))
        return out

    def _stage_messages(self, msgs: Messages, keyed: bool = True) -> tuple:
        """What this rank sends and receives in a stage of messages ``msgs``, the stage's
        replay key (None: no exchange; True where not ``keyed``: a step moved on, which
        the local runtime replays without matching it) and, where it receives or copies
        block, the exchange to run before its tiles."""
        me = self.rank
        sends = [(dst, items) for (src, dst), items in msgs.items() if src == me]
        recvs = [(src, items) for (src, dst), items in msgs.items() if dst == me]
        if not sends and not recvs:
            return sends, recvs, None, None
        # what the stage sends (the newest values it stores first) and receives (the
        # copies it makes stale) must repeat for the stage to be replayed
        key = (tuple((d, tuple(items)) for d, items in sends),
               tuple((s, tuple(items)) for s, items in recvs)) if keyed else True
        exchange = (partial(self._exchange_before, sends, recvs, apart(sends, recvs), [None])
                    if recvs or self.local.directory.blocking else None)
        if exchange is not None:
            # the next nest's loads may be queued before it (bbmm.replay._ahead) when what
            # it receives lands in this process's own arrays
            exchange.gate = bool(recvs) and not self._lent(recvs)
        return sends, recvs, key, exchange

    def _lent(self, recvs: list[tuple[int, list[tuple[str, Box]]]]) -> bool:
        """Whether a message of ``recvs`` may stay in its sender's arrays for this
        process's devices to load it from there (:attr:`bbmm.shm.ShmComm.lend`): one of
        at least the communicator's ``direct_min`` bytes."""
        comm = self.comm
        least = getattr(comm, "direct_min", None)
        return (bool(getattr(comm, "lend", False)) and least is not None
                and any(self._message(items).nbytes >= least for _, items in recvs))

    def _stage_phase(self, tiles: Sequence[Tile], serial: object, sends: list, key: Any,
                     exchange: Any) -> tuple:
        """A stage as the local runtime holds a phase back (:meth:`run_phase`'s calls)."""
        if key is None:
            return (tiles, serial, None, None, None, None, None)
        if exchange is not None:
            return (tiles, serial, exchange, None, key, None, None)
        box: dict[str, Any] = {}
        return (tiles, serial, partial(self._send_before, sends, box),
                partial(self._send_after, sends, box), key, None, None)

    def ahead(self, serial: object, sig: Any) -> bool:
        """:meth:`bbmm.runtime.Runtime.ahead` over processes: where the last iterations'
        phases were planned by the same verified templates (:class:`PlanMemo`), with
        coordinates that moved by the same amount each iteration, and the local runtime
        moves its own iteration on, this iteration's plans are those moved on once more
        (the records as they leave them, each stage's messages), and the local runtime
        replays the iteration with each stage's exchange. The argument is
        :class:`bbmm.shifted.Chain`'s, for the plans' coordinates (the tiles' and the
        records'). A process that moves an iteration on and one that plans it for real
        (its own devices' state did not move evenly) find the same plan, records and
        messages, so the processes need not agree on which iterations they move on."""
        self._sig = sig
        self.local.ahead(serial, sig)  # (notes sig; replays nothing alone)
        ch = self._chain
        if ch is None:
            return False
        got = ch.next(sig)
        if got is None:
            return False
        # every process has these plans (each kept the same ones); one whose own devices
        # do not move on plans its tiles by them all the same (run_phase), so that the
        # processes place and plan alike whichever moved the iteration on
        self._moving = got
        lc = self.local._chain
        if lc is None or lc.count < 2 or lc.sig != sig:
            return False
        entries, moved = got
        own = self.own
        saved = own.state()
        phases = []
        stages = lc.phases
        for (_, entry), bases in zip(entries, moved):
            for msgs in self.memo.messages(own, entry[2], bases, self.rank):
                i = len(phases)
                if i >= len(stages):
                    own.set_state(saved)
                    return False
                sends, _, key, exchange = self._stage_messages(msgs, keyed=False)
                phases.append(self._stage_phase(stages[i][0], serial, sends, key, exchange))
        if len(phases) != len(stages) or not self.local.ahead_phases(serial, phases):
            own.set_state(saved)
            return False
        ch.add(sig, entries, moved, moved=True)
        self._moving = None
        self.rank_stats.stages += len(phases)
        self._ahead_done = True
        return True

    def end_serial(self, serial: object = None) -> None:
        self.local.end_serial(serial)
        planned, self._planned = self._planned, []
        sig, self._sig = self._sig, None
        pend, self._moving = self._moving, None
        if self._ahead_done:
            self._ahead_done = False
        elif (sig is None or not planned
              or any(last is None or spec is not None for _, last, spec in planned)):
            # (from the plans alone, which every process has alike: so is the chain)
            self._chain = None
        else:
            if self._chain is None:
                self._chain = PlanChain()
            self._chain.add(sig, [(tiles, last[0]) for tiles, last, _ in planned],
                            [last[1] for _, last, _ in planned], moved=pend is not None)
        if isinstance(serial, tuple) and len(serial) == 1:
            self.rank_stats.serial_iterations += 1

    def stopped(self, flag: str) -> bool:
        """Never: a loop's ``break`` flag may be set on another rank, and every rank must
        run the same iterations (the remaining ones do nothing)."""
        return False

    def finish(self) -> None:
        """Bring every newest value to this rank's host copy of what it holds; with
        ``gather``, rank ``root`` then receives everything it does not hold."""
        self.local.finish()
        if self.gather_result:
            self._exchange(plan_gather(self.own, self.root), "gather")
        if getattr(self.comm, "lend", False):
            self.comm.repay()  # what was received in this rank's arrays at last
        settle = getattr(self.comm, "settle_sends", None)
        if settle is not None:
            settle()  # every message left in this rank's arrays taken: they are final

    def release_all(self) -> None:
        self.local.release_all()

    def held(self, array: str) -> list[Box]:
        """Disjoint boxes of ``array`` whose newest value this rank's host copy holds
        (after :meth:`finish`)."""
        shape = self.local.host.array(array).shape
        return self.own.held(array, self.rank, Box.from_shape(shape))

    # ---- moving bytes ----------------------------------------------------------------

    def _exchange(self, msgs: Messages, kind: str) -> None:
        """Move the messages of ``msgs`` that concern this rank (``kind``: exchange or
        gather), between the phases."""
        me = self.rank
        sends = [(dst, items) for (src, dst), items in msgs.items() if src == me]
        recvs = [(src, items) for (src, dst), items in msgs.items() if dst == me]
        if sends or recvs:
            self._swap(sends, recvs, kind, replaying=False)

    def _exchange_before(self, sends: list[tuple[int, list[tuple[str, Box]]]],
                         recvs: list[tuple[int, list[tuple[str, Box]]]], sep: bool,
                         kept: list, replaying: bool) -> None:
        """A stage's exchange before its tiles run (:meth:`_swap`; ``sep``: its regions
        sent and received are :func:`~bbmm.messages.apart`, found once for the stage;
        ``kept``: where the swap keeps what it finds of the stage's lists, for the
        stage's next exchanges)."""
        self._swap(sends, recvs, "exchange", replaying, sep, kept)

    def _swap(self, sends: list[tuple[int, list[tuple[str, Box]]]],
              recvs: list[tuple[int, list[tuple[str, Box]]]], kind: str,
              replaying: bool, sep: bool | None = None, kept: list | None = None) -> None:
        """Send and receive regions of the host copy. Sent regions get their newest
        values from the devices first (queued) and their queued stores waited for;
        received ones wait for the queued loads out of them, and their device copies
        become stale. In a replay the stores of newest values queued when the stage was
        recorded are replayed before this, and the received regions' effect on the
        directory (stale device copies, then read in again) is part of the recorded fixed
        point, so only the bytes move."""
        t0 = time.perf_counter()
        directory = self.local.directory
        if directory.writebacks:
            # the devices' copies back of lent regions this exchange sends or receives
            # first (their stores waited for below); the others while it waits
            directory.flush_writebacks([x for _, items in (*sends, *recvs) for x in items])
        found = None if kept is None else kept[0]
        received: list | None = None
        if found is None or found is _ONCE:
            outgoing = _distinct(sends)
            out_msgs, in_msgs = self._message_list(sends), self._message_list(recvs)
            if sep is None:
                sep = apart(sends, recvs)
            if found is _ONCE:
                # a stage kept while its plan repeats (a stencil's step) swaps these again:
                # kept from its second swap on (Floyd's stages, new every step, swap once)
                received = [x for _, items in recvs for x in items]
                sent_regions = [x for items in outgoing for x in items]
                kept[0] = (outgoing, received, sent_regions, out_msgs, in_msgs, sep)
            elif kept is not None:
                kept[0] = _ONCE
        else:
            outgoing, received, sent_regions, out_msgs, in_msgs, sep = found
        if not replaying:
            for items in outgoing:
                for a, b in items:
                    self._refresh(a, b)
        # the received regions first: their loads ended long ago, while the stores of
        # the sent ones are often the last copies queued, so the wait that blocks comes
        # last and nothing is left to ask once it ends
        settle = directory.order.settle
        if received is None:
            for _, items in recvs:
                for a, b in items:
                    settle(a, b, True)
            for items in outgoing:
                for a, b in items:
                    settle(a, b, False)
        else:
            for a, b in received:
                settle(a, b, True)
            for a, b in sent_regions:
                settle(a, b, False)
        t1 = time.perf_counter()
        sent, got = swap(self.comm, out_msgs, in_msgs, sep)
        if directory.writebacks:
            directory.flush_writebacks()  # what the wait left (none, or no wait)
        if not replaying:
            for _, items in recvs:
                for a, b in items:
                    directory.host_newer(a, b)
        self._count(kind, sent, got, t0)
        if self.local.host_log is not None:
            self._step(kind, t0, (("settle", t0, t1), ("transfer", t1, time.perf_counter())))

    def _send_before(self, sends: list[tuple[int, list[tuple[str, Box]]]],
                     box: dict[str, Any], replaying: bool) -> None:
        """A stage in which this rank only sends: before its tiles, the newest values go
        home (queued) and the copies into the sent regions queued so far are noted. If
        they are all done (Floyd's row ``k``, flowed out in the iteration before, is home
        by the time the host has planned this one when the device keeps up), the regions
        are sent at once, before the tiles are enqueued: the receivers wait for them, not
        for this rank's launches. Else the tiles are enqueued first, so that the devices
        go on computing while this rank waits for those copies (:meth:`_send_after`).

        What is sent is the host copy as the copies queued *before* the tiles leave it.
        A copy the tiles add over a sent region could land while it is packed; it can
        change only elements the receivers do not read in this stage: a receiver's tile
        reads nothing that a tile of this stage writes, or the loop would carry a
        dependence and not be parallel (an element both written and read, such as
        Floyd-Warshall's row k, is written with the value it had)."""
        t0 = time.perf_counter()
        directory = self.local.directory
        if directory.writebacks:
            directory.flush_writebacks([x for _, items in sends for x in items])
        waits = []
        ready = True
        for items in _distinct(sends):
            for a, b in items:
                if not replaying:
                    self._refresh(a, b)
                for e, dev in directory.order.touching(a, b, loads=False):
                    waits.append((e, dev))
                    ready = ready and dev.done(e)
        if ready:
            self._send(sends, t0)
            box["waits"] = None
            self.rank_stats.sent_early += 1
        else:
            box["waits"] = waits
            self.rank_stats.exchange_s += time.perf_counter() - t0

    def _send_after(self, sends: list[tuple[int, list[tuple[str, Box]]]],
                    box: dict[str, Any]) -> None:
        waits = box.pop("waits")
        if waits is None:  # sent before the tiles
            return
        t0 = time.perf_counter()
        for e, dev in waits:
            dev.wait(e)
        self._send(sends, t0, direct=False)

    def _send(self, sends: list[tuple[int, list[tuple[str, Box]]]], t0: float,
              direct: bool = True) -> None:
        """Send the regions; ``direct`` False once the stage's tiles are enqueued (their
        copies may land in the sent regions while a receiver would copy them)."""
        sent, _ = swap(self.comm, self._message_list(sends), (), direct)
        self._count("exchange", sent, {}, t0)
        self._step("send", t0)

    def _message_list(self, pairs: Sequence[tuple[int, Sequence[tuple[str, Box]]]]
                      ) -> list[tuple[int, Boxes]]:
        """``(rank, message)`` per ``(rank, items)``; ranks sent the same items in a row
        (Floyd's row ``k`` to every other process) share one message."""
        out = []
        last: Any = None
        for r, items in pairs:
            if last is None or items != last[0]:
                last = (items, self._message(items))
            out.append((r, last[1]))
        return out

    def _message(self, items: Sequence[tuple[str, Box]]) -> Boxes:
        """The message of ``items`` (boxes of the host arrays), made once per list: a
        phase's stages, and so their lists, are kept where it repeats."""
        hit = self._messages.get(id(items))
        if hit is None or hit[0] is not items:
            if len(self._messages) >= MESSAGES:
                self._messages.clear()
            hit = self._messages[id(items)] = (items, Boxes(self.local.host, items))
        return hit[1]

    def _step(self, name: str, t0: float, parts: Sequence[tuple[str, float, float]] = ()
              ) -> None:
        """A host step of this rank, from ``t0`` to now, for ``--profile``'s timeline, and
        ``parts`` of it (``(name, start, end)``: the exchange's waits for the devices
        and its transfer, packing and unpacking included)."""
        log = self.local.host_log
        if log is not None:
            log.append((name, t0, time.perf_counter()))
            log.extend(parts)

    def _refresh(self, array: str, region: Box) -> None:
        """Newest values of ``region`` still on a device (not flowed out: block
        coherence, or sets that missed them) go to the host copy (queued)."""
        directory = self.local.directory
        for rb, holder in list(directory.dirty[array]):
            inter = rb.intersect(region)
            if inter is not None:
                directory.store(holder, inter, "refresh")

    def _count(self, kind: str, sent: Mapping[int, int], sizes: Mapping[int, int],
               t0: float) -> None:
        """Count the messages of one swap (bytes per rank sent to, received from)."""
        st = self.rank_stats
        for dst, n in sent.items():
            st.sent_bytes[kind] += n
            st.messages_sent += 1
            if kind == "exchange":
                st.sent_to[dst] = st.sent_to.get(dst, 0) + n
        for src, n in sizes.items():
            st.received_bytes[kind] += n
            st.messages_received += 1
            if kind == "exchange":
                st.received_from[src] = st.received_from.get(src, 0) + n
        st.exchange_s += time.perf_counter() - t0

    def _settle(self, array: str, region: Box, loads: bool) -> None:
        """Wait for the asynchronous host copies that touch ``region`` of the host array:
        stores into it (before its bytes are sent or overwritten) and, with ``loads``,
        loads from it (before it is overwritten)."""
        self.local.directory.order.settle(array, region, loads)

    def _idle_work(self) -> bool:
        """While an exchange waits for messages: the devices' copies back of the regions
        they loaded from other processes' arrays (off the path from one phase to the
        next: enqueuing them took 40 us each on a 4 x H100 host)."""
        directory = self.local.directory
        return bool(directory.writebacks) and directory.flush_writebacks()

    def _loads_done(self, array: str, region: Box) -> bool:
        """Whether the queued copies that touch ``region`` of the host array are done."""
        return all(dev.done(e) for e, dev in
                   self.local.directory.order.touching(array, region, True))

# }}}


def _distinct(pairs: Sequence[tuple[int, Sequence[tuple[str, Box]]]]
              ) -> list[Sequence[tuple[str, Box]]]:
    """The items of ``(rank, items)`` pairs, each list once where ranks in a row are sent
    the same (Floyd's row ``k`` to every other process): its regions are refreshed and
    waited for once."""
    out: list[Sequence[tuple[str, Box]]] = []
    for _, items in pairs:
        if not out or (items is not out[-1] and items != out[-1]):
            out.append(items)
    return out


_ONCE = ("swapped once",)
"""What a stage's exchange keeps after its first swap (:meth:`DistributedRuntime._swap`)."""

MESSAGES = 64
"""Messages kept by their lists of regions (:meth:`DistributedRuntime._message`): a
replayed stencil step swaps a few lists again and again, while Floyd's and LU's moving
row is a new list every step, whose message would stay alive, and be walked by every
pass of the garbage collector, until the cache is cleared."""


# vim: foldmethod=marker
