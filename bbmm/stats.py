"""Counters and timers of a run (paper Section 11.2.1: overhead = memory_mgmt / total).

Bytes are counted per device (resident now and at peak, allocated, moved in each
direction, evictions) and per coherence category (read-in, flow-out, flow-in,
write-out, box-out write-back, refresh). Times are host wall-clock seconds spent
in each runtime step.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

CATEGORIES = ("readin", "flowout", "flowin", "writeout", "writeback", "refresh")
TIMERS = ("memory_mgmt", "compute", "flowout", "flowin", "writeout")


@dataclass
class DeviceStats:
    """Per-device counters; ``peak_bytes`` is the most box memory resident at any time."""

    name: str
    resident_bytes: int = 0
    peak_bytes: int = 0
    allocated_bytes: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    d2d_bytes: int = 0
    evictions: int = 0
    settled_peak_bytes: int = 0
    """Most box memory resident at the end of a phase (excludes the moment a grown box
    and the copies it replaces coexist)."""
    boxes_allocated: int = 0
    boxes_present: int = 0
    max_boxes_per_array: int = 0
    copies: int = 0
    """Host-device and device-device copies enqueued (each an OpenCL call or more)."""
    launches: int = 0
    """Kernel launches enqueued (one per tile, or per range of its rows)."""

    def on_alloc(self, nbytes: int) -> None:
        self.resident_bytes += nbytes
        self.allocated_bytes += nbytes
        self.boxes_allocated += 1
        if self.resident_bytes > self.peak_bytes:
            self.peak_bytes = self.resident_bytes

    def on_free(self, nbytes: int) -> None:
        self.resident_bytes -= nbytes

    def settle(self) -> None:
        if self.resident_bytes > self.settled_peak_bytes:
            self.settled_peak_bytes = self.resident_bytes

    def as_json(self) -> dict:
        return {"name": self.name, "peak_bytes": self.peak_bytes,
                "settled_peak_bytes": self.settled_peak_bytes,
                "allocated_bytes": self.allocated_bytes, "h2d_bytes": self.h2d_bytes,
                "d2h_bytes": self.d2h_bytes, "d2d_bytes": self.d2d_bytes,
                "evictions": self.evictions, "boxes_allocated": self.boxes_allocated,
                "boxes_present": self.boxes_present,
                "max_boxes_per_array": self.max_boxes_per_array,
                "copies": self.copies, "launches": self.launches}


@dataclass
class Stats:
    """All counters of one runtime."""

    devices: list[DeviceStats]
    bytes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TIMERS, 0.0))
    split_accesses: int = 0
    tiles: int = 0
    edge_first: int = 0
    """Tiles whose rows writing the flow-out ran first (:meth:`bbmm.runtime.Runtime._edges`)."""
    gated: int = 0
    """Launches queued before the exchange that brings their halos, behind a gate it
    opens (:func:`bbmm.replay._ahead`)."""
    replayed: int = 0
    """Serial iterations replayed from a recorded one (:mod:`bbmm.replay`, and those of
    :attr:`shifted`)."""
    shifted: int = 0
    """Of those, the ones replayed up to a shift of their coordinates (:mod:`bbmm.shifted`)."""
    ahead: int = 0
    """Of those, the ones replayed from the iterations before without their tiles built
    (:meth:`bbmm.runtime.Runtime.ahead`)."""
    serial_iterations: int = 0
    """Iterations of the outermost serial loop (0: the program has none)."""
    loop_s: float | None = None
    """Seconds from the end of the first serial iteration (the first phase, for a program
    without a serial loop) to the end of the devices' work of the last one
    (:meth:`bbmm.runtime.Runtime.finish` waits for them before the write-out): the run
    without its start and its final write-out, which vary from run to run (processes
    start up to a fifth of a second apart; a gather of 900 MB takes 0.63-0.85 s), so that
    two run lengths' difference over their difference in iterations is the time of an
    iteration."""
    marks: list[float] = field(default_factory=list)
    """Seconds on :attr:`loop_s`'s clock at which the host ended every
    :attr:`MARK_EVERY`-th outermost serial iteration after the first: where in the loop
    the time goes (LU's quarters over four processes, each paced by another owner of row
    ``k``), without a profile's cost."""
    MARK_EVERY = 256

    def moved(self, kind: str, device: int, what: str, nbytes: int, copies: int = 1) -> None:
        """Count ``nbytes`` moved by ``copies`` transfers of ``kind`` (``h2d``, ``d2h`` or
        ``d2d``) on ``device`` for ``what`` (a :data:`CATEGORIES` name)."""
        ds = self.devices[device]
        ds.copies += copies
        if kind == "h2d":
            ds.h2d_bytes += nbytes
        elif kind == "d2h":
            ds.d2h_bytes += nbytes
        else:
            ds.d2d_bytes += nbytes
        self.bytes[what] += nbytes

    @contextmanager
    def timer(self, what: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.times[what] += time.perf_counter() - t0

    @property
    def total_time(self) -> float:
        return sum(self.times.values())

    @property
    def overhead_percent(self) -> float:
        """Memory management time as a percentage of the total (Table IV, column F)."""
        total = self.total_time
        return 100.0 * self.times["memory_mgmt"] / total if total else 0.0

    def as_json(self) -> dict:
        t = dict(self.times)
        t["total"] = self.total_time
        return {"per_device": [d.as_json() for d in self.devices],
                **{f"{k}_bytes": v for k, v in self.bytes.items()},
                "time_s": t, "overhead_percent": self.overhead_percent, "tiles": self.tiles,
                "split_accesses": self.split_accesses, "replayed_iterations": self.replayed,
                "shifted_iterations": self.shifted, "ahead_iterations": self.ahead,
                "edge_first_tiles": self.edge_first, "gated_launches": self.gated,
                "serial_iterations": self.serial_iterations, "loop_s": self.loop_s,
                "loop_marks_s": self.marks, "mark_every": self.MARK_EVERY,
                "enqueues": self.enqueues()}

    def enqueues(self) -> dict:
        """Copies and launches enqueued, in all and per outermost serial iteration: the
        host's calls into the driver, each of which costs it 11-28 us on an NVIDIA GPU
        (``docs/performance.md``)."""
        copies = sum(d.copies for d in self.devices)
        launches = sum(d.launches for d in self.devices)
        n = max(1, self.serial_iterations)
        return {"copies": copies, "launches": launches,
                "per_serial_iteration": (copies + launches) / n}


def loop_parts(marks: Sequence[float], every: int, count: int) -> list[float | None]:
    """Ms per serial iteration over each of ``count`` equal parts of a loop marked every
    ``every`` iterations (:attr:`Stats.marks`, the loop's clock starting at 0); None
    for a part no mark bounds."""
    if not marks:
        return [None] * count
    times = [0.0, *marks]
    n = len(times) - 1
    out: list[float | None] = []
    for i in range(count):
        a, b = i * n // count, (i + 1) * n // count
        out.append(None if b <= a else 1e3 * (times[b] - times[a]) / ((b - a) * every))
    return out


def pace_line(runtimes: Sequence[Mapping[str, Any]], count: int = 4) -> str | None:
    """A report's line on the loop's pace over ``count`` parts of it, from the statistics
    (:meth:`Stats.as_json`) of one process or of each process of a run, the slowest
    process's per part (the others wait for it); None for a loop too short to mark
    ``count`` times."""
    parts = [loop_parts(r.get("loop_marks_s") or [], r.get("mark_every") or 1, count)
             for r in runtimes]
    if not parts or any(v is None for p in parts for v in p):
        return None
    slowest = [max(p[i] for p in parts) for i in range(count)]  # type: ignore[type-var]
    who = "" if len(parts) == 1 else " (the slowest process's)"
    part = "quarter" if count == 4 else f"of {count} parts"
    return (f"  loop: ms per serial iteration in each {part}{who}: "
            + " ".join(f"{v:.3f}" for v in slowest))
