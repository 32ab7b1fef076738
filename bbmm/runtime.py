"""The runtime entry point: Algorithm 4 (structure of the generated host code).

A driver (generated, or written by hand) describes each tile of a parallel loop
instance as a :class:`Tile`: its initial bounding boxes per array (Algorithm 1's
output, evaluated at run time), the boxes it writes, its flow-out and write-out
boxes, cleanup flags, and a ``kernel`` callback that launches the computation
given the tile's resident boxes. :meth:`Runtime.run_phase` then does, per tile on
its device, lines 4-18 of Algorithm 4::

    S_a = get_disjoint_bounding_boxes(t, a)        # Algorithm 2
    for bb in S_a: present? else alloc + readin     # Table II, Algorithm 3
    compute(t); flowout; flowin; writeout          # Table III
    decrement usage counts

and :meth:`Runtime.end_serial` is line 19 (bb_cleanup). Tiles of one phase run on
different devices at once; a device runs its own tiles one after the other.

A serial iteration that leaves the runtime's state as it found it (a stencil's time
step) is recorded, and the following iterations with the same boxes are replayed:
their phases are held back until ``end_serial`` and then only their copies and
launches are issued again (:mod:`bbmm.replay`). An iteration that repeats an earlier
one with its boxes moved (Floyd-Warshall's step ``k``) is replayed with them moved
(:mod:`bbmm.shifted`).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import regions as R
from .acquire import Acquire, fuse_slack
from .config import RuntimeConfig, edge_points  # noqa: F401 - edge_points: re-exported
from .box import Box, hull_all
from .buffers import BufferManager
from .coherence import Directory, HostCopy
from .devices.base import Device
from .diagnostic import UsageError
from .replay import Tape, phase_key, replay, signature
from .shifted import Chain, ShiftMemo, Template, match, replay_shifted, state_snapshot
from .stats import DeviceStats, Stats
from .tiles import Copy, Tile, TileBuffers, int32, last_use

__all__ = ["Runtime", "Tile", "TileBuffers", "Copy", "kernel_args", "lean_args", "lean_count",
           "lean_slots", "int32", "fuse_slack", "MODES", "COHERENCE"]

MODES = ("disjoint", "convex")
REPLAY_MISSES = 4
"""Recorded serial iterations in a row that are no fixed point before recording pauses."""
REPLAY_PAUSE = (4, 512)
"""First and longest pause of recording, in serial iterations (each pause doubles).
Floyd's and LU's iterations within :data:`bbmm.ordertype.GAP` rows of a block's ends
never repeat (:mod:`bbmm.shifted`), and the first regular iteration after them is found
sooner with short pauses, which a program that never repeats soon doubles away: Floyd
n=1024 on dry devices moves 924 of its 1024 iterations on with pauses from 4 against 886
from 8 on four devices (784k instructions per iteration against 841k), 824 against 738
on eight (2044k against 2341k); LU 781 against 758 on four (``python
scripts/count_host.py floyd --devices D --lag 8 --vary n=64,1024``, each first pause)."""
COHERENCE = ("exact", "block")
STOP_PERIOD = 2e-3
"""Seconds between two requests for a loop's ``break`` flag (:meth:`Runtime.stopped`): a
4-byte read each, queued behind the device's work and looked at when it has arrived."""
STOP_AHEAD = 4
"""Iterations after which the host waits for the answer to a request for a loop's
``break`` flag (:meth:`Runtime.stopped`): it runs no further ahead of the GPU than that
while the loop may stop, and the GPU has that much work queued while it waits."""
SMALL_PHASE = 1 / 64
"""A phase whose boxes hold at most this fraction of the points of the largest phase so
far runs each tile where most of its data is (:meth:`Runtime._place`)."""


class PhaseSizes:
    """Which phases are small: their tiles' boxes hold at most :data:`SMALL_PHASE` of the
    points of the largest phase so far (all accesses: a measure, not a footprint).

    A phase is measured for the first 16 phases of its nest (a nest's tiles share their
    kernel callback's code), then only at every 16th: Floyd's one large nest pays a
    lookup, and so does fdtd2d's small row phase over processes, which every step
    summed the volumes of again. A phase judged as its nest was meanwhile is only
    placed otherwise, which is as correct."""

    def __init__(self) -> None:
        self.largest = 0
        self.nests: dict[Any, list] = {}  # kernel code -> [phases seen, small]

    def small(self, tiles: Sequence[Tile]) -> bool:
        nest = getattr(tiles[0].kernel, "__code__", None)
        seen = self.nests.get(nest)
        if seen is not None and seen[0] >= 16 and seen[0] % 16 and nest is not None:
            seen[0] += 1
            return seen[1]
        size = 0
        for t in tiles:
            for bs in t.boxes.values():
                for b in bs:
                    size += b.volume
        if size > self.largest:
            self.largest = size
        small = size <= SMALL_PHASE * self.largest
        if nest is not None:
            if len(self.nests) >= 256:
                self.nests.clear()
            self.nests[nest] = [1 if seen is None else seen[0] + 1, small]
        return small


def _key(tiles: Sequence[Tile], extra: Hashable, spec: Hashable = None) -> Hashable:
    """A phase's key for replay: its tiles' (or the ``spec`` its caller names them by,
    :meth:`Runtime.run_phase`), and what else its decisions depend on."""
    k = phase_key(tiles) if spec is None else ("spec", spec)
    return k if extra is None else (k, extra)


class Runtime:
    """BBMM's runtime over a list of devices and the host arrays."""

    def __init__(self, devices: Sequence[Device], arrays: Mapping[str, np.ndarray] | HostCopy,
                 *, mode: str = "disjoint", reuse: bool = True, coherence: str = "exact",
                 max_pieces: Mapping[str, int] | None = None, verify: bool | None = None,
                 keep_idle: bool = False, replay: bool | None = None,
                 whole: Iterable[str] = (), fuse: float | None = None,
                 shared_flowout: bool = False, processes: int = 1,
                 config: RuntimeConfig | None = None):
        if mode not in MODES:
            raise UsageError(f"unknown allocation mode {mode!r}; choose from {', '.join(MODES)}")
        if coherence not in COHERENCE:
            raise UsageError(f"unknown coherence {coherence!r}; choose from {', '.join(COHERENCE)}")
        if not devices:
            raise UsageError("no devices to run on")
        self.devices = list(devices)
        self.config = config = RuntimeConfig.from_env() if config is None else config
        """The run's settings, read once where the run was set up; a generated driver's
        launches take their kernel options from it (:func:`bbmm.hostlib.kernel_options`)."""
        self.host = arrays if isinstance(arrays, HostCopy) else HostCopy(dict(arrays))
        self.mode, self.reuse, self.coherence = mode, reuse, coherence
        self.stats = Stats([DeviceStats(d.name) for d in self.devices])
        self.directory = Directory(self.host, self.stats, reuse=reuse,
                                   defer=config.defer,
                                   beside=config.beside and shared_flowout)
        self.managers = [BufferManager(d, self.directory, s)
                         for d, s in zip(self.devices, self.stats.devices)]
        self.verify = config.debug if verify is None else verify
        self.keep_idle = keep_idle
        self.host_log: list[tuple[str, float, float]] | None = (
            [] if any(getattr(d, "profiling", False) for d in self.devices) else None)
        """The host's steps of each round of tiles as ``(step, start, end)`` in
        ``time.perf_counter`` seconds (acquire, compute, flowout, flowin, writeout,
        release; replay for a replayed serial iteration), kept while a device profiles:
        the host's track of a timeline (:mod:`bbmm.profile`)."""
        self.sync = config.sync
        """Wait for every kernel before flow-out (exact compute times); otherwise the host
        goes on at once and only waits where it needs a result (a blocking copy), so the
        devices keep computing while the host works: 'compute' then counts launches and
        the waits show up in the step that needed the data."""
        if fuse is None:
            fuse = config.fuse
        if not 0 <= fuse < 1:
            raise UsageError(f"fuse slack must lie in [0, 1), got {fuse}")
        self.fuse = fuse
        """A tile's disjoint boxes of an array that it reads are fused into their hull when
        the hull adds at most this fraction of its volume (a stencil's boxes miss only
        their corners): one box means no split access in the kernel and a whole-row
        pitch. 0 keeps the paper's exact disjoint boxes."""
        self.max_pieces = dict(max_pieces or {})
        """Kernel slots per array: a tile whose disjoint boxes of an array outnumber them
        falls back to one hull box for that array (correct, only larger)."""
        self.acquirer = Acquire(self.managers, self.directory, self.host, self.stats,
                                mode=mode, reuse=reuse, fuse=fuse,
                                max_pieces=self.max_pieces, verify=self.verify)
        """Lines 4-12 of Algorithm 4 for each tile (:mod:`bbmm.acquire`)."""
        self.whole: dict[str, Box] = {}
        """Arrays no tile writes, held whole: every non-empty box of a tile becomes the whole
        array (one read-in for the run, the same boxes every serial iteration)."""
        cap = min(d.cap for d in self.devices)
        for a in whole:
            host = self.host.array(a)
            if host.nbytes * 64 > cap:
                continue  # not small next to the device memory: boxes as usual
            self.whole[a] = Box.from_shape(host.shape)
        if replay is None:
            replay = config.replay
        # Replay needs asynchronous host copies in program order (a blocking host copy
        # with hooks, as over MPI, has side effects beyond the device operations) and
        # no per-round waits (BBMM_SYNC measures exact kernel times).
        self.replay = replay and not self.directory.blocking and not self.sync
        self.shared_flowout = shared_flowout
        """The flow-out goes to other processes (a rank of
        :class:`~bbmm.distributed.DistributedRuntime`, one of ``processes``): the tiles
        that read it next run there, whatever this process's devices hold."""
        edges = config.edge
        if edges is None:
            edges = (EDGE_POINTS if not shared_flowout else
                     EDGE_POINTS_RANKS if processes <= EDGE_PROCESSES else 0)
        self.edges = (edges if (len(self.devices) > 1 or shared_flowout)
                      and not self.directory.blocking and not self.sync else 0)
        """Tiles that write at least this many points (0: none) run the rows that write
        flow-out another device (or process) holds first, then store the flow-out, then
        launch the rest of the tile (:meth:`_edges`)."""
        """Record serial iterations and replay the ones that repeat (:mod:`bbmm.replay`)."""
        self._tape: Tape | None = None
        self._fixed: Tape | None = None     # the recorded fixed point being replayed
        self._shifted: Template | None = None  # the template replayed up to a shift
        self.shift_memo = ShiftMemo()
        """Templates of iterations that repeat up to a shift (:mod:`bbmm.shifted`)."""
        self._deferred: list[tuple[list[Tile], object, Any, Any, Hashable, Hashable, Any]] = []
        self.ahead_on = config.ahead and self.replay
        """Replay iterations from the ones before without their tiles (:meth:`ahead`)."""
        self._chain: Chain | None = None
        self._sig: Any = None  # what the driver gave ahead() for this iteration
        self._ahead_done = False  # this iteration was replayed by ahead()
        self.ahead_alone = True
        """:meth:`ahead` replays by itself (not over processes, where
        :meth:`bbmm.distributed.DistributedRuntime.ahead` moves the exchanges on too)."""
        self._prev_keys: tuple | None = None
        self._prev_sig: object = None
        self._record()
        place = config.place
        self.place = place and len(self.devices) > 1
        """Move the tiles of small phases to their data (:meth:`_place`)."""
        self._looked = -STOP_PERIOD  # when stopped() last asked for a flag
        self._look: tuple[str, np.ndarray, Any, Device, int] | None = None
        """The flag asked for and not yet looked at: (flag, cell, event, its device, call
        number)."""
        self._calls = 0  # calls of stopped()
        self._sizes = PhaseSizes()
        self._loop_t0: float | None = None  # when Stats.loop_s's clock started

    # ---- Algorithm 4 ---------------------------------------------------------------

    def run_phase(self, tiles: Sequence[Tile], serial: object = None, *,
                  before: Callable[[bool], None] | None = None,
                  after: Callable[[], None] | None = None, key: Hashable = None,
                  spec: Hashable = None, args: Sequence[Any] | None = None) -> None:
        """Run the tiles of one parallel loop instance (one serial iteration of one nest).

        While a recorded fixed point is being replayed, a phase whose tiles match the
        recording's is only held back (``end_serial`` replays the whole iteration);
        one that does not match first runs the held-back phases for real.

        ``before(replaying)`` and ``after()`` run just before the phase's own device
        operations and just after them, whenever those are issued: now, when the phase
        is held back and run for real later, or in a replay (``replaying``: the device
        operations ``before`` issued when the phase was recorded are replayed before it;
        :mod:`bbmm.distributed` exchanges data between processes there). ``key``: what
        else the phase's decisions depend on (the regions ``before`` receives): a phase
        matches a recorded one only if its key is the same too.

        ``spec``: a value the caller guarantees to determine the tiles entirely (the
        generated driver's key of a tile list it built once and hands over again while
        the serial iterators stay in one regime, :func:`bbmm.codegen.regime`): the phase
        is then matched by it, without looking at the tiles' boxes. ``args``: the
        iteration's kernel arguments, given to every tile's kernel as
        ``kernel(device, buffers, args=args)`` (the tiles of a list built once carry the
        arguments of the iteration that built them).
        """
        if self._loop_t0 is None:
            self._loop_t0 = time.perf_counter()
        if spec is None:
            tiles = self._arrange(tiles)
        if self._fixed is not None:
            t0 = time.perf_counter()
            i = len(self._deferred)
            fixed = self._fixed
            match = (i < len(fixed.phases) and fixed.phases[i] == _key(tiles, key, spec)
                     and (i > 0 or self._may_replay(serial)))
            self.stats.times["memory_mgmt"] += time.perf_counter() - t0
            if match:
                self._deferred.append((list(tiles), serial, before, after, key, spec, args))
                return
            self._abandon()
        elif self._shifted is not None:
            # held back while the phases come as the template's did; their key (the
            # coordinates' order) is looked at in end_serial, once all have come
            i = len(self._deferred)
            tpl = self._shifted
            if i < len(tpl.phases) and len(tiles) == tpl.phases[i] and spec is None:
                self._deferred.append((list(tiles), serial, before, after, key, spec, args))
                return
            self._abandon()
        if spec is not None:
            tiles = self._arrange(tiles)
        self._run_phase(tiles, serial, before, after, key, spec, args)

    def ahead(self, serial: object, sig: Hashable) -> bool:
        """Replay the serial iteration ``serial`` from the iterations before it, its tiles
        never built: True where it was (the driver goes on to ``end_serial``), False
        where the driver builds and runs its tiles as always.

        ``sig``: the generated driver's comparisons of the serial iterators that pick the
        pieces of every tile of the iteration (``nest<N>_sig``). Where the last three
        iterations had the same ``sig``, were replayed by one template up to a shift
        (:mod:`bbmm.shifted`), and every coordinate of their tiles and state, and every
        kernel's scalars and grid, moved by the same amount from each to the next, this
        one is the last moved on by that amount once more (:class:`bbmm.shifted.Chain`
        says why that is exact): it is replayed from the last iteration's tiles with
        their launches moved on. That skips building the tiles, ordering their
        coordinates and matching them, most of a replayed iteration's host work."""
        self._sig = sig
        chain = self._chain
        if not self.ahead_alone or chain is None or chain.count < 2 or chain.sig != sig:
            return False  # (over processes, bbmm.distributed moves the step on)
        if any(p[2] is not None or p[3] is not None or p[4] is not None
               for p in chain.phases):
            return False  # an exchange between processes: bbmm.distributed moves it on
        return self.ahead_phases(serial, [(p[0], serial, None, None, None, None, None)
                                          for p in chain.phases])

    def ahead_phases(self, serial: object, phases: list[tuple]) -> bool:
        """:meth:`ahead` with the iteration's phases given (held back as
        :meth:`run_phase` holds them: :mod:`bbmm.distributed` gives each its
        exchange)."""
        chain = self._chain
        tpl = self._shifted
        if (chain is None or chain.count < 2 or tpl is not chain.tpl or self._deferred
                or self._fixed is not None):
            return False
        t0 = time.perf_counter()
        got = chain.next(phases)
        if got is None:
            self.stats.times["memory_mgmt"] += time.perf_counter() - t0
            return False  # two coordinates come too close: the key changes
        bases, ats, edges = got
        self._serial = serial
        if not replay_shifted(self, tpl, bases, phases, ats):
            return False
        chain.moved(phases, bases, ats, edges)
        self._ahead_done = True
        self.stats.ahead += 1
        if self.host_log is not None:
            self.host_log.append(("replay", t0, time.perf_counter()))
        return True

    def _follow(self, sig: Hashable, tpl: Template, phases: list,
                bases: dict[str, list[list[int]]]) -> None:
        """A serial iteration replayed by ``tpl`` after its tiles were matched (``sig``:
        what the driver gave :meth:`ahead` for it): it continues :attr:`_chain` or starts
        one."""
        if sig is None or not self.ahead_on:
            return
        ats = Chain.launches(phases)
        if ats is None:
            self._chain = None
            return
        chain = self._chain
        if chain is None or not chain.follow(sig, tpl, phases, bases, ats):
            self._chain = Chain(sig, tpl, phases, bases, ats)

    def _arrange(self, tiles: Sequence[Tile]) -> Sequence[Tile]:
        """The tiles as they run: small phases placed by their data, arrays held whole
        widened."""
        if self.place:
            tiles = self._place(tiles)
        if self.whole:
            tiles = [self._promote(t) for t in tiles]
        return tiles

    def _run_phase(self, tiles: Sequence[Tile], serial: object,
                   before: Callable[[bool], None] | None = None,
                   after: Callable[[], None] | None = None, key: Hashable = None,
                   spec: Hashable = None, args: Sequence[Any] | None = None) -> None:
        if self._tape is not None and not self._tape.phases:
            # the state the iteration starts from, before a phase's exchange changes it:
            # what a replay up to a shift is matched against (bbmm.shifted)
            self._tape.start = state_snapshot(self)
        if before is not None:
            before(False)
        if self._tape is not None:
            self._tape.metas.append((key, before is not None, after is not None))
            if before is not None or after is not None:
                self._tape.add("begin", (len(self._tape.phases),))
        self._run_tiles(tiles, serial, key, spec, args)
        if self._tape is not None and (before is not None or after is not None):
            self._tape.add("end", (len(self._tape.phases) - 1,))
        if after is not None:
            after()

    def _run_tiles(self, tiles: Sequence[Tile], serial: object, key: Hashable = None,
                   spec: Hashable = None, args: Sequence[Any] | None = None) -> None:
        self._serial = serial
        times = self.stats.times
        clock = time.perf_counter
        directory = self.directory
        tape = self._tape
        if tape is not None:
            if spec is not None:
                tape.plain = False
            tape.phases.append(_key(tiles, key, spec))
            tape.tiles_of.append(list(tiles))
            phase_no = len(tape.phases) - 1
            index = {id(t): i for i, t in enumerate(tiles)}
            split0 = self.stats.split_accesses
            present0 = [d.boxes_present for d in self.stats.devices]

        def launch(t: Tile, tb: TileBuffers, rows: tuple[int, int] | None) -> None:
            if tape is not None:
                tape.add("launch", (phase_no, index[id(t)], tb, rows))
            self._launch(t, tb, rows, args)
        acquire = self.acquirer.acquire
        for rnd in self._rounds(tiles):
            t0 = clock()
            if tape is not None:
                tape.timer = "memory_mgmt"
            bufs = [acquire(t) for t in rnd]
            flows = [self._flowout_boxes(t) for t in rnd]
            t1 = clock()
            if tape is not None:
                tape.timer = "compute"
            rests = []
            firsts: list[list[tuple[int, ...]] | None] = []
            for t, tb, fl in zip(rnd, bufs, flows):
                parts = self._edges(t, fl) if self.edges else None
                for rows in (None,) if parts is None else parts[0]:
                    launch(t, tb, rows)
                firsts.append(None if parts is None else parts[0])
                if parts is not None:
                    rests.append((t, tb, parts[1]))
            if self.sync:
                for t in rnd:
                    self.devices[t.device].finish()
            t2 = clock()
            for t, tb in zip(rnd, bufs):
                self._wrote(t, tb)
            t3 = clock()
            if tape is not None:
                tape.timer = "flowout"
            for t, tb, fl, first in zip(rnd, bufs, flows, firsts):
                for a, boxes in fl.items():
                    for c, r, parts in _merged(_clipped(tb, a, boxes), t.writers.get(a),
                                               first):
                        # a split tile's: beside the launch of its other rows, which
                        # neither read nor write it
                        directory.store(c, r, "flowout", parts, side=first is not None)
            t4 = clock()
            if rests:
                # the flow-out of these tiles is on its way (its rows ran first): now the
                # rest of their rows, while it travels
                if tape is not None:
                    tape.timer = "compute"
                for t, tb, rest in rests:
                    for rows in rest:
                        launch(t, tb, rows)
                self.stats.edge_first += len(rests)
                if tape is not None:
                    tape.edge_first += len(rests)
                t4b = clock()
                times["compute"] += t4b - t4
                t4 = t4b
            if tape is not None:
                tape.timer = "flowin"
            for fl in flows:
                for a, boxes in fl.items():
                    for f in boxes:
                        if not f.is_empty:
                            directory.flowin(a, f)
            t5 = clock()
            if tape is not None:
                tape.timer = "writeout"
            for t, tb in zip(rnd, bufs):
                for a, boxes in t.writeout.items():
                    for c, r in _clipped(tb, a, boxes):
                        directory.writeout(c, r)
            t6 = clock()
            if tape is not None:
                tape.timer = "memory_mgmt"
            for t, tb in zip(rnd, bufs):
                release = self.managers[t.device].release
                for ps in tb.pieces.values():
                    for _, c in ps:
                        release(c, keep=self.reuse)
            self.stats.tiles += len(rnd)
            for t in rnd:
                self.stats.devices[t.device].settle()
            t7 = clock()
            if self.host_log is not None:
                self.host_log += [("acquire", t0, t1), ("compute", t1, t2),
                                  ("flowout", t3, t4), ("flowin", t4, t5),
                                  ("writeout", t5, t6), ("release", t6, t7)]
            times["memory_mgmt"] += (t1 - t0) + (t3 - t2) + (t7 - t6)
            times["compute"] += t2 - t1
            times["flowout"] += t4 - t3
            times["flowin"] += t5 - t4
            times["writeout"] += t6 - t5
            if self.verify:
                directory.verify()
        if tape is not None:
            tape.tiles += len(tiles)
            tape.split_accesses += self.stats.split_accesses - split0
            for d, (st, p0) in enumerate(zip(self.stats.devices, present0)):
                if st.boxes_present != p0:
                    tape.boxes_present[d] = tape.boxes_present.get(d, 0) + st.boxes_present - p0

    def end_serial(self, serial: object = None) -> None:
        """bb_cleanup for every device at the end of a serial iteration (and, unless
        ``keep_idle``, boxes no tile used during it); or the replay of the iteration's
        held-back phases, when all of them matched the recorded fixed point."""
        if isinstance(serial, tuple) and len(serial) == 1:
            st = self.stats
            st.serial_iterations += 1
            n = st.serial_iterations
            if n == 1:
                # the loop's clock (Stats.loop_s) starts again after the first iteration:
                # processes that started at different times have met in its exchanges
                self._loop_t0 = time.perf_counter()
            elif not (n - 1) % st.MARK_EVERY and self._loop_t0 is not None:
                st.marks.append(time.perf_counter() - self._loop_t0)
        if self._ahead_done:
            self._ahead_done = False  # replayed by ahead(): nothing left to do
            self._sig = None
            return
        sig, self._sig = self._sig, None
        fixed = self._fixed
        if fixed is not None:
            self._chain = None
            if len(self._deferred) == len(fixed.phases):
                phases, self._deferred = self._deferred, []
                if phases:
                    self._serial = phases[-1][1]
                t0 = time.perf_counter()
                replay(self, fixed, phases)
                if self.host_log is not None:
                    self.host_log.append(("replay", t0, time.perf_counter()))
                return
            self._abandon()
        shifted = self._shifted
        if shifted is not None:
            if len(self._deferred) == len(shifted.phases):
                phases = self._deferred
                t0 = time.perf_counter()
                specs = [(p[0], p[4], p[2] is not None, p[3] is not None) for p in phases]
                bases = match(shifted, specs, self)
                if bases is None:
                    # another template's iteration (LU's steps after a deferred write-out
                    # group was stored cycle through a few): replayed by it if verified
                    got = self.shift_memo.lookup(specs, self)
                    if got is not None:
                        shifted, bases = got
                        self._shifted = shifted
                self.stats.times["memory_mgmt"] += time.perf_counter() - t0
                if bases is not None:
                    self._serial = phases[-1][1]
                    if replay_shifted(self, shifted, bases, phases):
                        self._deferred = []
                        self._follow(sig, shifted, phases, bases)
                        if self.host_log is not None:
                            self.host_log.append(("replay", t0, time.perf_counter()))
                        return
            self._abandon()
        self._chain = None
        with self.stats.timer("memory_mgmt"):
            for m in self.managers:
                m.cleanup(serial if serial is not None else self._serial,
                          idle=not self.keep_idle)
            self._close_segment()

    def stopped(self, flag: str) -> bool:
        """Whether the one element of the local array ``flag`` (a loop's ``break`` flag,
        :attr:`bbmm.codegen.scop.Loop.stop_flag`) was seen set; called once per iteration.

        A copy of the element is asked for without waiting (at most every
        :data:`STOP_PERIOD` seconds): from the device copy holding its newest value, behind
        everything that device was given, or the host's own value once its pending stores
        are done. An answer is looked at once it has arrived, or waited for once the loop
        has run :data:`STOP_AHEAD` more iterations, so that the host, which may run far
        ahead of a busy GPU, stops at most that many iterations after it (the GPU still has
        them queued meanwhile). Safe to act on: the flag is 0 before the loop and only ever
        set in it, and the loop's whole body runs while it is 0, so once it reads set every
        later iteration would do nothing; seeing it late only runs some of them."""
        self._calls += 1
        look = self._look
        if look is not None:
            name, cell, event, dev, at = look
            if event is not None and not dev.done(event):
                if self._calls - at < STOP_AHEAD:
                    return False
                dev.wait(event)
            self._look = None
            if name == flag and cell.flat[0]:
                return True
        now = time.perf_counter()
        if now - self._looked < STOP_PERIOD:
            return False
        self._looked = now
        host = self.host.array(flag)
        if host.size != 1:
            return False
        elem = Box.from_shape(host.shape)
        d = self.directory
        for b, holder in d.dirty[flag]:
            if b.overlaps(elem):
                cell = np.zeros(host.shape, host.dtype)
                if holder.device.profiling:
                    holder.device.note({"array": flag, "box": elem, "for": "stop flag"})
                e = holder.device.read_rect(holder.alloc, holder.box, elem, cell,
                                            blocking=False)
                self._look = (flag, cell, e, holder.device, self._calls)
                return False
        stores = [(e, dev) for b, e, dev, st, _ in d.order.pending.get(flag, ())
                  if st and b.overlaps(elem)]
        if stores and not stores[-1][1].done(stores[-1][0]):
            # the host's value is on its way (the flag flows out every iteration): looked
            # at once the newest store is done, as an answer from a device
            self._look = (flag, host, stores[-1][0], stores[-1][1], self._calls)
            return False
        return bool(host.flat[0])

    def finish(self) -> None:
        """Bring every newest value home; afterwards the host arrays are the result."""
        if self._fixed is not None or self._shifted is not None:
            self._abandon()
        if self._loop_t0 is not None and self.stats.loop_s is None:
            # the wait for the last kernels, which the write-out's copies made before
            with self.stats.timer("writeout"):
                for d in self.devices:
                    d.finish()
            self.stats.loop_s = time.perf_counter() - self._loop_t0
        with self.stats.timer("writeout"):
            self.directory.flush_all()
            for d in self.devices:
                d.finish()
            self.directory.order.clear()
        self._record()

    def release_all(self) -> None:
        """Free every resident box (after :meth:`finish`)."""
        if self._fixed is not None or self._shifted is not None:
            self._abandon()
        for m in self.managers:
            m.free_all()
        self._record()

    def _place(self, tiles: Sequence[Tile]) -> Sequence[Tile]:
        """Tiles of a small phase run on the device that holds most of their data
        (valid bytes of their boxes), the static placement winning ties.

        The static placement tiles every nest by the same global grid, so a small nest
        whose band is another dimension than the big nests' (LU's scaling of row k
        along j, fdtd2d's ``ey[0][j]``) has its tiles on devices that hold none of its
        data: each such tile reads its box from the host after the owner flowed it out,
        and flows it back (four host hops per serial iteration on LU's critical path
        instead of two). A small phase's kernels are too short for load balance to
        matter. Any placement is correct: coherence follows validity, not placement.
        While a fixed point or a template is replayed, a phase held back for it takes
        the devices its tiles ran on in the recorded iteration: the state they were
        chosen from is the one it starts from, and its tiles must match the recording's.
        (fdtd2d's ``ey[0][j] = _fict_[t]`` names another element of ``_fict_`` every
        step, held whole: a placement looked up by the tiles' own boxes was never found
        again, and every replayed step weighed every device's copies.)
        """
        if not tiles:
            return tiles
        fixed = self._fixed
        if fixed is not None:
            # held back for the replay of a fixed point: placed as in its iteration (the
            # same tiles by name; another phase is placed afresh, and will not match)
            i = len(self._deferred)
            if i < len(fixed.tiles_of) and len(fixed.tiles_of[i]) == len(tiles) and all(
                    r.name == t.name for t, r in zip(tiles, fixed.tiles_of[i])):
                return [t if r.device == t.device else replace(t, device=r.device)
                        for t, r in zip(tiles, fixed.tiles_of[i])]
        shifted = self._shifted
        if shifted is not None:
            # held back for a replay up to a shift: placed as in the template's iteration
            # (any placement is correct; a step not held back is placed afresh)
            i = len(self._deferred)
            if i < len(shifted.placed) and len(shifted.placed[i]) == len(tiles):
                return [t if d == t.device else replace(t, device=d)
                        for t, d in zip(tiles, shifted.placed[i])]
        if not self._sizes.small(tiles):
            return tiles
        return [t if d == t.device else replace(t, device=d)
                for t, d in ((t, self._best_device(t)) for t in tiles)]

    def _best_device(self, t: Tile) -> int:
        """The device whose resident copies hold the most valid bytes of ``t``'s boxes,
        then the one whose largest copy overlapping them is largest (``t.device`` unless
        another scores strictly more).

        The second rule finds the data's home when both hold it: fdtd2d's tile of
        ``ey[0][j]`` keeps a small copy of its part of row 0 on its static device, which
        the flow-in also keeps valid in the big copy of the rows' owner, which reads it.
        """
        best, best_score = t.device, (-1, -1)
        for d, mgr in enumerate(self.managers):
            valid = big = 0
            for a, bs in t.boxes.items():
                cs = mgr.copies.get(a)
                if not cs:
                    continue
                for b in dict.fromkeys(bs):
                    for c in cs:
                        inter = b.intersect(c.box)
                        if inter is None:
                            continue
                        stale = R.volume(R.clip(c.stale, inter))
                        valid += (inter.volume - stale) * c.itemsize
                        if c.nbytes > big:
                            big = c.nbytes
            score = (valid, big)
            if score > best_score or (score == best_score and d == t.device):
                best, best_score = d, score
        return best

    def _promote(self, t: Tile) -> Tile:
        """``t`` with its boxes of the arrays held whole replaced by the whole array (and
        no cleanup for them: they stay for the next serial iteration)."""
        if not any(a in self.whole for a in t.boxes):
            return t
        boxes = dict(t.boxes)
        cleanup = dict(t.cleanup)
        for a, bs in t.boxes.items():
            w = self.whole.get(a)
            if w is None:
                continue
            for ws in (t.writes, t.flowout, t.writeout):
                if any(not b.is_empty for b in ws.get(a, ())):
                    raise UsageError(f"tile {t.name}: array {a!r} is held whole as read-only, "
                                     f"but the tile writes it")
            boxes[a] = [b if b.is_empty else w for b in bs]
            if a in cleanup:
                cleanup[a] = [False] * len(cleanup[a])
        return replace(t, boxes=boxes, cleanup=cleanup, original=t)

    @property
    def _serial(self) -> object:
        """The serial iteration running now (its key; None before the first), which the
        acquirer stamps on boxes freed at its end."""
        return self.acquirer.serial

    @_serial.setter
    def _serial(self, serial: object) -> None:
        self.acquirer.serial = serial

    def _launch(self, t: Tile, tb: TileBuffers, rows: tuple[int, int] | None = None,
                args: Sequence[Any] | None = None, at: Any = None) -> None:
        """Run the tile's kernel callback (on its ``rows`` only, when given; with the
        iteration's kernel ``args``, when given: see :meth:`run_phase`; ``at``: its
        scalars and grid moved on, for a tile of an earlier iteration: :meth:`ahead`). What it
        enqueued last is the last use so far of every copy the tile took
        (:func:`~bbmm.tiles.last_use`)."""
        dev = self.devices[t.device]
        before = dev.last
        if dev.profiling:
            dev.note({"tile": t.name, "rows": rows,
                      "boxes": [(c.array, c.box) for c in tb.copies()]})
        if at is not None:
            t.kernel(dev, tb, rows=rows, at=at)
        elif args is not None:
            t.kernel(dev, tb, rows=rows, args=args)
        elif rows is None:
            t.kernel(dev, tb)
        else:
            t.kernel(dev, tb, rows=rows)
        self.stats.devices[t.device].launches += 1
        last_use(tb.copies(), before, dev.last)

    # ---- replay (bbmm.replay) ----------------------------------------------------------

    def _record(self) -> None:
        """Start recording a new serial iteration, forgetting what came before."""
        self._fixed = self._shifted = None
        self._prev_keys = self._prev_sig = None
        self._tape = Tape() if self.replay else None
        self.directory.tape = self._tape
        self._misses = 0                    # recorded iterations in a row, no fixed point
        self._pause_len = REPLAY_PAUSE[0]   # iterations the next pause lasts
        self._paused = 0                    # iterations left in the current pause

    def _pause(self) -> None:
        """Stop recording for a while: ``REPLAY_MISSES`` recorded iterations in a row were
        no fixed point (Floyd's row k moves every iteration), and recording costs about a
        tenth of the host's work. Pauses double up to ``REPLAY_PAUSE[1]``, so a program
        whose iterations start repeating late still replays soon after. Safe: an
        iteration not recorded is only run for real, and the comparison starts afresh."""
        self._misses = 0
        self._paused = self._pause_len
        self._pause_len = min(2 * self._pause_len, REPLAY_PAUSE[1])
        self._prev_keys = self._prev_sig = None
        self._tape = None
        self.directory.tape = None

    def _close_segment(self) -> None:
        """End of a recorded serial iteration: is it a fixed point? (Its state signature
        is compared with the previous iteration's only when their tiles matched.)"""
        tape = self._tape
        if tape is None:
            if self._paused:
                self._paused -= 1
                if not self._paused:   # record again, from this iteration's end
                    self._tape = Tape()
                    self.directory.tape = self._tape
            return
        keys = tuple(tape.phases)
        if keys == self._prev_keys:
            sig = signature(self)
            if not tape.mutated and sig == self._prev_sig:
                # this iteration started and ended in the same state: replay from now on
                self._fixed = tape
            self._prev_sig = sig
        else:
            self._prev_sig = None
        self._prev_keys = keys
        if self._fixed is None and tape.start is not None:
            # an iteration like an earlier one up to a shift of its boxes: replay the next
            self._shifted = self.shift_memo.close(self, tape)
        if self._fixed is None and self._shifted is None:
            self._misses += 1
            if self._misses >= REPLAY_MISSES:
                self._pause()
                return
        else:
            self._misses = 0
            self._pause_len = REPLAY_PAUSE[0]
        self._tape = Tape()
        replaying = self._fixed is not None or self._shifted is not None
        self.directory.tape = None if replaying else self._tape

    def _may_replay(self, serial: object) -> bool:
        """No resident copy is due for cleanup at the end of ``serial`` (the recorded
        iteration freed nothing; with repeated serial values this one might)."""
        return all(c.cleanup_iter is None or c.cleanup_iter != serial
                   for cs in self.directory.copies.values() for c in cs)

    def _abandon(self) -> None:
        """Leave replay: run the held-back phases for real (recorded again, starting from
        the fixed point's state, which is the state now)."""
        assert self._fixed is not None or self._shifted is not None
        if self._shifted is not None:
            # the state moved on with each replay: compared afresh from here
            self._prev_keys = self._prev_sig = None
        deferred, self._deferred = self._deferred, []
        self._fixed = self._shifted = None
        self._tape = Tape()
        self.directory.tape = self._tape
        # _prev_keys and _prev_sig still describe the fixed point (set when it was found;
        # replay changes no state), which is where the held-back phases start from
        for tiles, serial, before, after, key, spec, args in deferred:
            if spec is not None:
                tiles = self._arrange(tiles)
            self._run_phase(tiles, serial, before, after, key, spec, args)

    # ---- steps -----------------------------------------------------------------------

    def _rounds(self, tiles: Sequence[Tile]) -> list[list[Tile]]:
        """Group tiles into rounds: at most one tile per device, and no two tiles of a
        round whose write boxes overlap (over-approximated writes then happen in
        order, so the later tile starts from the earlier one's values)."""
        n = len(self.devices)
        rounds: list[list[Tile]] = []
        last: dict[int, int] = {}
        for t in tiles:
            if not 0 <= t.device < n:
                raise UsageError(f"tile {t.name or t} on device {t.device}, but only {n} devices")
            r = last.get(t.device, -1) + 1
            while r < len(rounds) and not self._fits(rounds[r], t):
                r += 1
            if r == len(rounds):
                rounds.append([])
            rounds[r].append(t)
            last[t.device] = r
        return rounds

    @staticmethod
    def _fits(rnd: list[Tile], t: Tile) -> bool:
        for o in rnd:
            if o.device == t.device:
                return False
            for a, ws in t.writes.items():
                for w in ws:
                    for ow in o.writes.get(a, ()):
                        if w.overlaps(ow):
                            return False
        return True

    def _wrote(self, t: Tile, tb: TileBuffers) -> None:
        for a, ws in t.writes.items():
            for w in ws:
                if w.is_empty:
                    continue
                covered = 0
                whole = a in t.fresh
                for p, c in tb.pieces.get(a, ()):
                    inter = w.intersect(p)
                    if inter is not None:
                        self.directory.wrote(c, inter, whole)
                        covered += inter.volume
                if covered != w.volume:
                    raise UsageError(f"tile {t.name}: write box {a}{w} is not inside the "
                                     f"tile's boxes {[p for p, _ in tb.pieces.get(a, ())]}")

    def _edges(self, t: Tile, flows: Mapping[str, Sequence[Box]]
               ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]] | None:
        """The launches of the tile's rows (ranges of its tiled iterator) that write its
        flow-out, and those of the rest of its rows; None to launch the tile whole. Two
        ranges of flow-out rows (a middle tile's two ends) are one launch of four bounds
        where the tile's kernel takes two ranges (``kernel.ranges``,
        :func:`bbmm.hostlib.launch`).

        Without this, a device's flow-out leaves only when its whole tile is done, and a
        device that needs it waits for the copy out, the copy in and the events between
        them at every nest (a stencil's halo on two GPUs: about 40 us per nest on the
        H200s against 180 us of kernel). With it the rows writing the flow-out run
        first, the flow-out is stored behind them, and the rest of the tile computes
        while it travels. Safe because the tile's rows are independent
        (:attr:`Tile.writers` is given only for a tiled loop that carries no dependence)
        and every element of the flow-out is written by the first rows
        (:attr:`Tile.writers`), so the store reads final values. Worth it only when
        another device holds a copy of the flow-out (the halo of a neighbour, not rows
        that the same device reads next) and the first rows are a small part of the tile.
        """
        if t.span is None or not t.writers:
            return None
        if sum(b.volume for ws in t.writes.values() for b in ws) < self.edges:
            return None  # a small tile: the hop it would hide is shorter than a launch
        lo, hi = t.span
        dev = self.devices[t.device]
        first = []
        elsewhere = False
        for a, boxes in flows.items():
            w = t.writers.get(a)
            for f in boxes:
                if f.is_empty:
                    continue
                if w is None:
                    return None  # flow-out whose writers the tile cannot place
                d, cmin, cmax = w
                r0, r1 = max(lo, f.lo[d] - cmax), min(hi, f.hi[d] - cmin)
                if r0 <= r1:
                    first.append((r0, r1))
                if not elsewhere:
                    elsewhere = self.shared_flowout or any(
                        c.device is not dev and c.box.overlaps(f)
                        for c in self.directory.copies[a])
        if not first or not elsewhere:
            return None
        # the rows' union, touching ranges fused, and the rest of the tile's range
        first.sort()
        rows = [list(first[0])]
        for r0, r1 in first[1:]:
            if r0 <= rows[-1][1] + 1:
                rows[-1][1] = max(rows[-1][1], r1)
            else:
                rows.append([r0, r1])
        if 2 * sum(r1 - r0 + 1 for r0, r1 in rows) > hi - lo + 1:
            return None
        rest = []
        at = lo
        for r0, r1 in rows:
            if at < r0:
                rest.append((at, r0 - 1))
            at = r1 + 1
        if at <= hi:
            rest.append((at, hi))
        two = getattr(t.kernel, "ranges", 1) > 1
        # both ends of a middle tile in one launch: a launch less on the path; the rows
        # either side of inner ones (Floyd's row k + 1) in one launch after them
        first = ([(rows[0][0], rows[0][1], rows[1][0], rows[1][1])]
                 if len(rows) == 2 and two else [(r0, r1) for r0, r1 in rows])
        if len(rest) == 2 and two:
            rest = [(*rest[0], *rest[1])]
        return first, rest

    def _flowout_boxes(self, t: Tile) -> Mapping[str, Sequence[Box]]:
        """Exact coherence: the flow-out boxes; block coherence: every written box whole."""
        return t.writes if self.coherence == "block" else t.flowout


_I64_0 = np.int64(0)
_SELS: dict[tuple[int, ...], list[Any]] = {}
"""The kernel arguments of each list of access slots seen (a tile's accesses repeat)."""
_PAD: dict[int, list[Any]] = {}
"""Per number of dimensions, an unused kernel slot's arguments after its buffer: base 0,
strides 0, an empty box (lo 1, hi 0)."""


MERGE_BYTES = 256 << 10
"""Flow-out parts of one copy are stored as their hull, one copy to the host, where the
hull holds at most this many bytes more than they do, and no more than they do: a copy
costs the host 11-28 us to enqueue (``docs/performance.md``), 256 KiB take 5 us at the
55 GB/s of pinned memory. LU's tile holding row ``k + 1`` stores the row's two flow-out
boxes (``[k+1][ub+1..n-1]`` and ``[k+1][k+1]``) as one."""


def _merged(parts: Iterable[tuple[Copy, Box]], writers: tuple[int, int, int] | None = None,
            first: Sequence[tuple[int, int]] | None = None
            ) -> list[tuple[Copy, Box, list[Box] | None]]:
    """``parts`` (``(copy, region)``) as stores ``(copy, region, the parts it stands for or
    None)``: the regions of one copy as their hull where it adds at most
    :data:`MERGE_BYTES`, and at most their own bytes, and the copy holds the newest value
    of all of it (inside its box, stale nowhere in it). Of a tile whose ``first`` rows
    alone have run (:meth:`Runtime._edges`: launches of one range, ``(r0, r1)``, or two,
    ``(r0, r1, r2, r3)``), only a hull whose elements those rows write,
    by the array's ``writers`` (``(d, cmin, cmax)``), qualifies: the rest of its rows have
    not written theirs yet."""
    parts = list(parts)
    if len(parts) < 2:
        return [(c, r, None) for c, r in parts]
    by: dict[int, tuple[Copy, list[Box]]] = {}
    for c, r in parts:
        by.setdefault(id(c), (c, []))[1].append(r)
    if len(by) == len(parts):
        return [(c, r, None) for c, r in parts]
    out: list[tuple[Copy, Box, list[Box] | None]] = []
    for c, rs in by.values():
        if len(rs) > 1:
            h = hull_all(rs)
            own = sum(r.volume for r in rs)
            extra = (h.volume - own) * c.itemsize
            if extra <= min(MERGE_BYTES, own * c.itemsize) and h.issubset(c.box) and \
                    not R.overlaps(c.stale, h) and \
                    (first is None or _written_first(h, writers, first)):
                out.append((c, h, rs))
                continue
        out.extend((c, r, None) for r in rs)
    return out


def _written_first(h: Box, writers: tuple[int, int, int] | None,
                   first: Sequence[tuple[int, int]]) -> bool:
    """Every row that may write an element of ``h`` (``writers``: element ``x`` along
    dimension ``d`` by rows ``x - cmax .. x - cmin``) lies in one range of ``first``."""
    if writers is None:
        return False
    d, cmin, cmax = writers
    lo, hi = h.lo[d] - cmax, h.hi[d] - cmin
    return any(r[j] <= lo and hi <= r[j + 1] for r in first for j in range(0, len(r), 2))


def _clipped(tb: TileBuffers, a: str, boxes: Sequence[Box]) -> Iterator[tuple[Copy, Box]]:
    """Each of ``boxes`` of array ``a`` cut by the tile's pieces: ``(copy, part)``."""
    for f in boxes:
        for p, c in tb.pieces.get(a, ()):
            inter = f.intersect(p)
            if inter is not None:
                yield c, inter


EDGE_POINTS = 0
"""Default of ``$BBMM_EDGE``: off. Running a tile's flow-out rows first hides the halo's
hop only where the host has time for the extra launch and copy; on two H200s in one
process it has not: heat2d's step at 12288^2 takes 0.43-0.53 ms with the split against
0.41 without (``BBMM_EDGE=1`` and ``0`` in turn: ``python scripts/bench_floor.py --floyd
0 --devices 2 --procs 1 --repeat 2``, ``results/h200x2-2026-11-27/edge``)."""


EDGE_POINTS_RANKS = 1
"""Default of ``$BBMM_EDGE`` in a process of a run over at most :data:`EDGE_PROCESSES`
processes or MPI ranks: every tile that can run the rows writing its flow-out first does,
since the process that reads it waits for it at the next exchange while this one's device
computes the rest. On two H100s heat2d 12288^2 over two processes takes 0.441 ms per step
with it against 0.614 without (one GPU: 0.866; ``python3 -m bbmm run polybench/heat2d.c
--param n=12288 --param tsteps=T --devices 2 --procs 2``, T = 20 and 220, with
``BBMM_EDGE=0`` for without; ``results/h100x2-2026-11-26``); on two H200s 0.480 against
0.599, the medians of three alternating rounds (``python3 scripts/bench_ab.py --base .
--base-tune edge=0 -- run polybench/heat2d.c --param n=12288 --param tsteps=220
--devices 2 --procs 2``, ``results/h200x4-2026-11-28/edge``)."""


EDGE_PROCESSES = 2
"""The most processes of a run in which a tile runs its flow-out rows first by default.
Over more, a middle process's tile writes rows for two neighbours, the hosts' enqueues
bound a step, and splitting costs more than the hop it hides, with one launch for a
middle tile's two ends (:meth:`Runtime._edges`) as with one for each: on four H200s,
1000-step runs, medians of three alternating rounds of ``python3 scripts/bench_ab.py
--base . --base-tune edge=0 --new-tune edge=1 -- run polybench/P --devices 4``
(``results/h200x4-2026-11-28/gaps``), heat2d 12288^2 0.535 ms per step split against
0.500 whole, heat3d 512^3 0.961 against 0.797, fdtd2d 10240^2 0.727 against 0.567. With
a launch for each end, as first measured (medians of three alternating rounds of
``python3 scripts/bench_ab.py --base . --base-tune edge=0 -- run polybench/P --devices
4``, ``results/h200x4-2026-11-28/edge``), every tile split against none: heat2d 12288^2
0.811 against 0.611 ms per step, heat3d 512^3 1.133 against 0.987, fdtd2d 10240^2 0.922
against 0.871; only the end processes' tiles split against none: heat2d 0.592 against
0.525, heat3d 1.049 against 0.900."""


def lean_slots(tb: TileBuffers, array: str, slots: int, accesses: int) -> int:
    """How many slots of ``array`` a kernel built for ``tb``'s accesses (``-DBBMM_LEAN``,
    :func:`bbmm.hostlib.launch`) takes, buffer, base and strides only: each access's
    own (the pieces, every one an access's whole box); -1 where an access is split over
    pieces, or ``tb`` does not give the slot of each of the kernel's ``accesses``: that
    kernel takes every slot with its bounds and the accesses' slots as
    :func:`kernel_args` gives them. At least 1: a kernel's first arguments are never
    left out."""
    return lean_count(array, tb.access.get(array, ()), slots, accesses)


def lean_count(array: str, acc: Sequence[int], slots: int, accesses: int) -> int:
    """:func:`lean_slots` of an array whose accesses take the slots ``acc`` (what the
    kernel's build is specialized for, :func:`bbmm.hostlib._layout`)."""
    if -1 in acc or len(acc) != accesses:
        return -1
    n = max(acc, default=-1) + 1
    if n > slots:
        raise ValueError(f"{array}: {n} boxes for {slots} kernel slots")
    return max(1, n)


def lean_args(tb: TileBuffers, array: str, ns: int, ndim: int) -> list[Any]:
    """The arguments of ``array`` in a lean kernel taking ``ns`` slots of it
    (:func:`lean_slots`): buffer, base and strides of each piece, a piece of no copy
    (an access whose box is empty in this tile) as the padding :func:`kernel_args`
    gives unused slots."""
    pieces = tb.pieces.get(array, [])
    out: list[Any] = []
    for i in range(ns):
        if i < len(pieces):
            out += pieces[i][1].kernel_args()
        else:
            out.append(pieces[0][1].alloc.buf if pieces else None)
            out += _pad(ndim)[:ndim]
    return out


def _pad(ndim: int) -> list[Any]:
    """An unused slot's arguments after its buffer: base 0, strides 0, an empty box."""
    pad = _PAD.get(ndim)
    if pad is None:
        pad = _PAD[ndim] = ([_I64_0] + [int32(0)] * (ndim - 1) + [int32(1)] * ndim
                            + [int32(0)] * ndim)
    return pad


def kernel_args(tb: TileBuffers, array: str, slots: int, ndim: int) -> list[Any]:
    """Kernel arguments for one array's disjoint boxes, in the order generated kernels take.

    Per slot ``s < slots``: the arena buffer, ``base`` (int64: element offset of index
    (0,...,0) of the array in that arena, possibly negative), the copy's strides in
    elements for dimensions 0..ndim-2 (int32), then the piece's ``lo`` and ``hi`` per
    dimension (int32; used by split accesses to find the piece holding an index).
    Element ``x`` of slot ``s`` is ``buf_s[base_s + sum(x[d] * stride_s[d])]`` with
    ``stride_s[ndim-1] = 1``. Unused slots repeat slot 0's buffer with empty bounds.
    Then per access function: its slot, or -1 when split (Figure 9's ``split`` flag).
    """
    pieces = tb.pieces.get(array, [])
    n = len(pieces)
    if n > slots:
        raise ValueError(f"{array}: {n} boxes for {slots} kernel slots")
    out: list[Any] = []
    for p, c in pieces:
        out += c.kernel_args()
        out += c.bound_args(p)
    if n < slots:
        buf = pieces[0][1].alloc.buf if pieces else None
        pad = _pad(ndim)
        for _ in range(slots - n):
            out.append(buf)
            out += pad
    # interned small ints: a launch that sets only changed arguments finds them by identity
    acc = tb.access.get(array)
    if acc:
        key = tuple(acc)
        sel = _SELS.get(key)
        if sel is None:
            if len(_SELS) >= 4096:
                _SELS.clear()
            sel = _SELS[key] = [int32(i) for i in acc]
        out += sel
    return out
