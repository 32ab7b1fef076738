"""Replay of serial iterations that repeat: Algorithm 4's host work done once per stencil.

Every decision the runtime takes in a serial iteration (Algorithm 2's disjoint boxes,
present/alloc/readin, which copies flow out and in) is a function of the tiles' boxes
and of the *state* of the directory and the buffer managers: the resident copies,
their stale parts, the dirty records, the LRU order. A stencil's time step leaves
that state as it found it, and its tiles have the same boxes every step (only the
scalar ``t`` changes), so every step makes the same copies and launches.

:class:`Tape` records a serial iteration's device operations as they are issued: host
transfers and device-to-device copies (with the copies and regions they move) and
kernel launches (with the :class:`~bbmm.runtime.TileBuffers` they got). An iteration
is a *fixed point* when

- it allocated and freed nothing (so the pool, the set of copies and every copy's
  buffer are as they were: a recorded copy is still alive at the same address), and
- the :func:`signature` of the state at its end equals the one at its start.

Then the next iteration whose tiles have the same :func:`tile_key` in the same order
would take the same decisions and end in the same state: the runtime replays the tape
instead (:meth:`bbmm.runtime.Runtime.end_serial`). Transfers are re-issued through the
directory's transfer routines, so their event ordering (``HostOrder``) and byte counts
are computed afresh; kernels are launched through the *new* tiles' callbacks, so the
scalars of this iteration (``t``) reach the kernel. Nothing else is redone, which is
safe because the state the skipped bookkeeping would have produced is the state it
already has.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Hashable, Protocol, Sequence

from .box import Box
from .buffers import BufferManager
from .coherence import Directory
from .devices.geometry import pairable
from .hostorder import OrderProgram
from .stats import Stats
from .tiles import Tile, TileBuffers, last_use


class Runtime(Protocol):
    """What recording and replay use of a :class:`bbmm.runtime.Runtime` (named here
    without importing it: the runtime imports this module)."""

    directory: Directory
    managers: Sequence[BufferManager]
    stats: Stats
    config: Any

    def _launch(self, t: Tile, tb: TileBuffers, rows: tuple[int, int] | None,
                args: Sequence[Any] | None = None) -> Any: ...


def tile_key(t: Tile) -> Hashable:
    """Everything about a tile that the runtime's decisions depend on (not its kernel:
    a replayed launch goes through the new tile's own callback)."""
    return (t.device, _dkey(t.boxes), _dkey(t.writes), _dkey(t.flowout), _dkey(t.writeout),
            _dkey(t.cleanup), t.fresh, t.span, tuple(t.writers.items()))


def _dkey(d: Any) -> tuple:
    return tuple((a, tuple(v)) for a, v in d.items())


def phase_key(tiles: Any) -> tuple:
    return tuple(tile_key(t) for t in tiles)


def signature(rt: Runtime) -> Hashable:
    """The state the runtime's decisions read, as a comparable value.

    Copies are named by identity: a fixed point allocates and frees nothing, so the
    same objects are compared. Per array: each copy in directory order with its box,
    stale parts, usage count and touched flag, then the dirty records; per device the
    LRU order of the unused list; the deferred write-outs. (Pending host-copy events are
    not part of it: a replayed transfer asks ``HostOrder`` for its waits again.)
    """
    d = rt.directory
    arrays = tuple(
        (a, tuple((id(c), c.box, tuple(c.stale), c.uses, c.touched) for c in cs),
         tuple((b, id(h)) for b, h in d.dirty[a]))
        for a, cs in d.copies.items())
    lru = tuple(tuple(id(c) for c in m.unused) for m in rt.managers)
    deferred = tuple((id(c), tuple((h, n) for h, n in gs)) for c, gs in d._groups.items())
    return arrays, lru, deferred


@dataclass
class Tape:
    """The device operations of one serial iteration, in issue order.

    ``ops`` holds ``(timer, kind, args)``: kind ``h2d``/``d2h`` with ``(copy, region,
    what, side)`` (``side``: a read-in the device may queue beside its kernels), ``d2d``
    with ``(dst, src, region, what)``, ``launch`` with ``(phase, tile
    index, TileBuffers, rows)`` (rows: None for the whole tile), ``begin``/``end`` with
    ``(phase,)`` where a phase with callbacks starts and ends. ``timer`` is the runtime
    timer the operation ran under.
    """

    phases: list[tuple] = field(default_factory=list)
    """The :func:`phase_key` of each phase, in order."""
    tiles_of: list[list[Tile]] = field(default_factory=list)
    """The tiles of each phase as they ran (a phase named by its caller's ``spec`` is
    replayed with these, and the new iteration's kernel arguments)."""
    ops: list[tuple[str, str, tuple]] = field(default_factory=list)
    timer: str = "memory_mgmt"
    """Where operations issued now are accounted (set by the runtime around each step)."""
    mutated: bool = False
    """A copy was allocated or freed: not a fixed point."""
    compiled: list | None = None
    """The operations as :func:`replay` issues them (:func:`compile_tape`), once replayed."""
    counts: dict = field(default_factory=dict)
    """Bytes per (kind, device, purpose) that one replay moves."""
    copy_counts: dict = field(default_factory=dict)
    """Transfers per device that one replay makes."""
    start: Any = None
    """The state the iteration started from (:func:`bbmm.shifted.state_snapshot`)."""
    plain: bool = True
    """No phase was named by a ``spec`` (:mod:`bbmm.shifted`)."""
    metas: list = field(default_factory=list)
    """Per phase: its caller's key, and whether it had ``before`` and ``after``."""
    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    """Copies allocated and freed during the iteration, in order."""
    deferred: list = field(default_factory=list)
    """Write-outs deferred during the iteration: ``(holder, region, group)``, the group
    the region joined (-1: a new one)."""
    tiles: int = 0
    split_accesses: int = 0
    edge_first: int = 0
    """Tiles run in parts (:attr:`bbmm.stats.Stats.edge_first`)."""
    boxes_present: dict[int, int] = field(default_factory=dict)
    """Counters the skipped bookkeeping would have added (per device for the last)."""
    order: OrderProgram | None = None
    """The calls to :class:`~bbmm.hostorder.HostOrder` one replay makes, played by the
    next replays (recorded once a replay leaves the records in the shape it found)."""
    order_tries: int = 0
    """Replays recorded that left no program (:data:`ORDER_TRIES` at most)."""

    def add(self, kind: str, args: tuple) -> None:
        self.ops.append((self.timer, kind, args))


ORDER_TRIES = 8
"""Replays of one tape recorded for an :class:`~bbmm.hostorder.OrderProgram` before it
is given up: the records a stencil's step leaves repeat from its second replay or third
(its first starts from the copies of the iteration recorded)."""


def compile_tape(rt: Runtime, tape: Tape) -> list[tuple[str, list[tuple[Any, tuple]]]]:
    """``tape``'s operations as :func:`replay` issues them: runs of operations under one
    timer, each a bound routine with its arguments (host arrays looked up once), and the
    bytes every transfer moves added up in ``tape.counts`` (counted once per replay)."""
    d = rt.directory
    counts: dict[tuple[str, int, str], int] = {}
    copies: dict[int, int] = {}
    segments: list[tuple[str, list[tuple[int, Any, tuple]]]] = []
    single = {"h2d": d.replay_h2d, "d2h": d.replay_d2h}
    d2d = d.replay_d2d  # one bound method: _partner knows its transfers by identity
    for timer, kind, args in tape.ops:
        if not segments or segments[-1][0] != timer:
            segments.append((timer, []))
        ops = segments[-1][1]
        if kind in ("h2d", "d2h", "d2d"):
            c = args[0]
            region, what = (args[2], args[3]) if kind == "d2d" else (args[1], args[2])
            host = d.host.array(c.array)
            key = (kind, c.device.index, what)
            counts[key] = counts.get(key, 0) + region.volume * host.itemsize
            # a store's side (Directory.replay_d2h): beside the next launch or not
            tail = (args[3],) if kind == "d2h" else ()
            if kind == "d2d":
                ops.append((0, d2d, args))
            elif (at := _partner(ops, single[kind], d2d, c, region, what, tail)) is not None:
                # two regions of one copy (a stencil's halos, its flow-out rows): one
                # rect copy (Directory.replay_pair), where the earlier one stands
                i, both = at
                ops[i] = (0, d.replay_pair, (c, both, host, what, kind == "d2h", *tail))
                continue
            else:
                ops.append((0, single[kind], (c, region, host, what, *tail)))
            copies[c.device.index] = copies.get(c.device.index, 0) + 1
        else:
            ops.append(({"launch": 1, "begin": 2, "end": 3}[kind], None, args))
    tape.counts = counts
    tape.copy_counts = copies
    return _gated(segments, d, tape) if rt.config.gate else segments


def _gated(segments: list[tuple[str, list]], d: Directory, tape: Tape
           ) -> list[tuple[str, list]]:
    """``segments`` with each phase that starts with one load into a device and then
    launches on that device only (a stencil's nest over processes: its halos in, its
    kernel) marked to be queued ahead of the phase's exchange, where the load is one
    command (:meth:`Directory.gateable <bbmm.coherence.Directory.gateable>`): its
    ``begin`` becomes ``(4, None, (phase, load, its regions, launches, launch timer))``,
    which :func:`replay` runs as :func:`_ahead` does."""
    flat = [(timer, op) for timer, ops in segments for op in ops]
    loads = (d.replay_h2d, d.replay_pair)
    out: list[tuple[str, tuple]] = []
    i = 0
    while i < len(flat):
        timer, op = flat[i]
        j = i + 1
        if op[0] == 2 and j < len(flat) and flat[j][1][0] == 0 and flat[j][1][1] in loads:
            load = flat[j][1]
            dev = load[2][0].device.index
            j += 1
            launches = []
            while j < len(flat) and flat[j][1][0] == 1:
                launches.append(flat[j])
                j += 1
            p = op[2][0]
            regions = d.gateable(load[1], load[2])
            if (regions is not None and launches
                    and all(tape.tiles_of[a[2][0]][a[2][1]].device == dev
                            for _, a in launches)):
                out.append((timer, (4, None, (p, (load[1], load[2]), regions,
                                              [a[2] for _, a in launches], launches[0][0]))))
                i = j
                continue
        out.append((timer, op))
        i += 1
    regrouped: list[tuple[str, list]] = []
    for timer, op in out:
        if not regrouped or regrouped[-1][0] != timer:
            regrouped.append((timer, []))
        regrouped[-1][1].append(op)
    return regrouped


def _partner(ops: list, fn: Any, d2d: Any, c: Any, region: Box, what: str,
             tail: tuple = ()) -> tuple[int, tuple[Box, Box]] | None:
    """Where the transfer of ``region`` of copy ``c`` (routine ``fn``, for ``what``, its
    further arguments ``tail``) joins an earlier one of the same routine, copy, purpose
    and further arguments as one pairable rect copy: its position and the two regions in
    order along dimension 0; else None.

    The transfer moves up to the earlier one only past transfers (``d2d``: the routine of
    device-to-device ones) that touch neither copy ``c`` nor ``region`` of the host array
    (no launch, no phase boundary): none of them then sees or changes what it moves, in
    the device or in the host, before or after. With one process driving several
    devices, a device's two halos arrive between the flow-ins of its neighbours', not one
    after the other."""
    a = c.array
    for i in range(len(ops) - 1, -1, -1):
        code, f, args = ops[i]
        if code != 0:
            return None
        if f is d2d:
            if args[0] is c or args[1] is c:
                return None
            continue
        other = args[0]
        if other is c:
            if f is not fn or args[3] != what or args[4:] != tail:
                return None
            first = args[1]
            both = (first, region) if first.lo[0] <= region.lo[0] else (region, first)
            return (i, both) if pairable(*both) else None
        moved = args[1] if isinstance(args[1], tuple) else (args[1],)  # a pair, or one
        if other.array == a and any(r.overlaps(region) for r in moved):
            return None
    return None


def replay(rt: Runtime, tape: Tape, phases: list[tuple]) -> None:
    """Issue ``tape``'s operations again for ``phases`` (``(tiles, serial, before,
    after, key, spec, args)`` per recorded phase, the tiles matching the recorded keys),
    with this iteration's kernels and scalars (a phase named by a ``spec``: the recorded
    tiles, given this iteration's ``args``); a phase's ``before(True)`` and ``after()``
    run where the recording marked its start and end
    (:meth:`bbmm.runtime.Runtime.run_phase`)."""
    clock = time.perf_counter
    times = rt.stats.times
    compiled = tape.compiled
    if compiled is None:
        compiled = tape.compiled = compile_tape(rt, tape)
    d = rt.directory
    order = d.order
    prog = tape.order
    player = None if prog is None else order.play(prog)
    playing = player is not None
    if playing:
        d.order = player  # (the copies' calls straight to it; HostOrder.play)
    recording = not playing and tape.order_tries < ORDER_TRIES and order.record()
    try:
        for timer, ops in compiled:
            t0 = clock()
            for code, fn, args in ops:
                if code == 0:
                    fn(*args)
                elif code == 1:
                    _launch(rt, tape, phases, args)
                elif code == 2:
                    cb = phases[args[0]][2]
                    if cb is not None:
                        cb(True)
                elif code == 3:
                    cb = phases[args[0]][3]
                    if cb is not None:
                        cb()
                else:
                    _ahead(rt, tape, phases, args, timer)
            times[timer] += clock() - t0
    finally:
        if playing:
            d.order = order
            if not order.played():
                tape.order = None  # a call it did not foresee: recorded again
        elif recording:
            prog = order.recorded()
            if prog is not None and not prog.worth:
                tape.order_tries = ORDER_TRIES  # scans this short cost no more than a play
                prog = None
            tape.order = prog
            if prog is None:
                tape.order_tries += 1
    devs = rt.stats.devices
    for (kind, dev, what), n in tape.counts.items():
        rt.stats.moved(kind, dev, what, n, copies=0)  # counted per device below
    for dev, k in tape.copy_counts.items():
        devs[dev].copies += k
    st = rt.stats
    st.tiles += tape.tiles
    st.split_accesses += tape.split_accesses
    st.edge_first += tape.edge_first
    for dev, n in tape.boxes_present.items():
        st.devices[dev].boxes_present += n
    st.replayed += 1


def _launch(rt: Runtime, tape: Tape, phases: list[tuple], args: tuple) -> None:
    """A recorded launch, of this iteration's tile (a phase named by a ``spec``: the
    recorded one) with this iteration's scalars: by :func:`relaunch` where it can, else
    through the tile's callback."""
    p, i, tb, rows = args
    ph = phases[p]
    t = ph[0][i] if ph[5] is None else tape.tiles_of[p][i]
    if rows is not None or not relaunch(rt, t, tb, ph[6]):
        rt._launch(t, tb, rows, ph[6])


def relaunch(rt: Runtime, t: Tile, tb: TileBuffers, args: Sequence[Any] | None) -> bool:
    """Launch the whole tile ``t`` on ``tb`` (``args``: this iteration's scalars) as its
    callback would: the last launch on ``tb`` again (:attr:`TileBuffers.prepared
    <bbmm.tiles.TileBuffers.prepared>`) with the tile's scalars, where it was of the
    kernel the callback launches (a generated one, which names it) on the tile's grid and
    the device is not profiling; else False, nothing launched. A replayed step's buffers
    are the recorded ones, so only the scalars change: heat2d on four dry devices in one
    process took 850.9k instructions a step through the callbacks, 815.8k so, and a
    process of four 573.9k and 564.9k (``python scripts/count_host.py heat2d --devices 4
    [--procs 4 --rank 1] --lag 8 --vary tsteps=100,200 --param n=512``)."""
    prep = tb.prepared
    if prep is None:
        return False
    k = t.kernel
    at = getattr(k, "at", None)
    dev = prep[0]
    if (at is None or getattr(k, "name", None) != prep[8] or at[1] != prep[1]
            or dev.profiling):
        return False
    scalars = at[0] if args is None else [*args, *at[0][-2:]]
    before = dev.last
    dev.launch(prep[2], prep[3], prep[4], [*scalars, *prep[5]])
    rt.stats.devices[t.device].launches += 1
    last_use(tb.copies(), before, dev.last)
    return True


def _ahead(rt: Runtime, tape: Tape, phases: list[tuple], args: tuple, timer: str) -> None:
    """A phase whose load and launches go before its exchange (:func:`_gated`), with
    ``--tune gate=on`` (:attr:`bbmm.config.RuntimeConfig.gate`).

    Over processes a nest waits for its halos: each process waits for its flow-out rows
    to reach the host, swaps them with its neighbours, then enqueues the halos' copy in
    and the launch, which the device runs only once the host has enqueued both. Here the
    copy in is enqueued first, behind a closed gate (:meth:`Device.gate
    <bbmm.devices.base.Device.gate>`), and the launches behind it; the exchange then
    writes the halos into the host's array and opens the gate, and the device starts at
    once. On one H200, a nest of heat2d 12288^2's quarter took 161.5 us against 194.7
    in the order before (``python3 scripts/bench_nest.py``,
    ``results/h200x1-2026-11-28/gate/``).

    Only where the exchange enqueues nothing (a command behind the closed gate would
    block the host, which alone can open it; :meth:`Directory.may_gate
    <bbmm.coherence.Directory.may_gate>`) and the halos come to this process's own
    array (the exchange's ``gate``: no message its devices would load from the sender's);
    elsewhere the phase runs in the recorded order. The load's record in
    :class:`~bbmm.hostorder.HostOrder` is added once the gate is open: the exchange
    settles the regions it receives, and must not wait for a load that waits for it."""
    p, (fn, fargs), regions, launches, ltimer = args
    cb = phases[p][2]
    d = rt.directory
    times = rt.stats.times

    def launch_all() -> None:
        t0 = time.perf_counter()
        for a in launches:
            _launch(rt, tape, phases, a)
        dt = time.perf_counter() - t0
        times[ltimer] += dt
        times[timer] -= dt

    if (cb is not None and getattr(cb, "gate", False) and d.may_gate(fargs[0], regions)
            and d.behind_gate(fargs[0].device, cb,
                              lambda gate, held: fn(*fargs, gate=gate, held=held),
                              launch_all)):
        rt.stats.gated += len(launches)
        return
    if cb is not None:
        cb(True)
    fn(*fargs)
    for a in launches:
        _launch(rt, tape, phases, a)
