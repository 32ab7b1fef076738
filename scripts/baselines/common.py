"""Shared machinery of the hand-written multi-device OpenCL baselines.

The paper (Ramashekar & Bondhugula, TACO 2013, Section 11.2.7) compares BBMM with
manually written OpenCL codes that distribute the computation equally among the
GPUs, allocate the theoretical minimum on each, move the theoretical minimum for
coherence and never reallocate or re-read anything. The modules beside this one
(``floyd``, ``heat2d``, ``blackscholes``) are such codes; this module holds what they
share:

* :class:`Team`: the logical devices (*lanes*), one in-order queue each. With GPUs,
  all lanes live in **one context** spanning the GPUs of one platform, so an event of
  one queue can order a command of another (``wait_for``) and the host never waits
  inside the serial loop. On a CPU-only machine the fallback is N logical devices on
  the CPU, each with **its own context** (as bbmm's logical devices), so cross-device
  ordering needs host waits (counted in :attr:`Team.host_waits`).
* :class:`Slot`: a page-locked (pinned) host staging buffer through which one row
  travels from one lane to others (device -> pinned host -> devices: inter-GPU copies
  in one context crawl at 0.6 GB/s, pinned host memory runs at 55 GB/s each way).
  :meth:`Team.exchange` moves a batch of rows through their slots.
* :func:`row_blocks`: equal row blocks.
* :func:`add_common_args` / :func:`team_from_args` / :func:`print_result`: the CLI.

Kernels are built once per context (:meth:`Team.kernel`), outside the timed region.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import pyopencl as cl

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
if _ROOT not in sys.path:  # `python scripts/baselines/floyd.py` from anywhere
    sys.path.insert(0, _ROOT)

from bbmm.devices.opencl import discover, pinned_empty  # noqa: E402

F32 = np.dtype(np.float32)

# {{{ lanes and teams


@dataclass
class Lane:
    """One logical device: a context, an in-order queue on one ``cl.Device``."""

    index: int
    context: Any
    queue: Any
    device: Any

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & cl.device_type.GPU)

    @property
    def name(self) -> str:
        return f"lane{self.index} ({self.device.name.strip()})"


@dataclass
class Slot:
    """A pinned host staging buffer for one row-sized message.

    ``pending`` holds the events of the commands that still read the slot's current
    contents (the uploads to the destination lanes); whoever refills the slot first
    waits for them (write-after-read on the host buffer).
    """

    host: np.ndarray
    pending: list = field(default_factory=list)


Message = tuple[Lane, Any, int, Slot, Sequence[tuple[Lane, Any, int]]]
"""``(src_lane, src_buf, src_byte_offset, slot, [(dst_lane, dst_buf, dst_byte_offset)])``."""


class Team:
    """The logical devices a baseline runs on.

    :arg lanes: the :class:`Lane`\\ s.
    :arg shared: whether all lanes share one context (events then order commands across
        queues: no host waits inside the loop).
    """

    def __init__(self, lanes: Sequence[Lane], shared: bool, owned: bool = True):
        if not lanes:
            raise ValueError("a team needs at least one lane")
        self.lanes = list(lanes)
        self.shared = shared
        self.owned = owned
        self.host_waits = 0
        self._programs: dict[tuple[int, str, str], Any] = {}

    def __len__(self) -> int:
        return len(self.lanes)

    def __repr__(self) -> str:
        ctx = "one context" if self.shared else "a context each"
        return f"<Team of {len(self.lanes)} lane(s), {ctx}: {self.describe()}>"

    def describe(self) -> str:
        names: dict[str, int] = {}
        for ln in self.lanes:
            names[ln.device.name.strip()] = names.get(ln.device.name.strip(), 0) + 1
        return ", ".join(f"{c} x {n}" for n, c in names.items())

    @property
    def is_gpu(self) -> bool:
        return all(ln.is_gpu for ln in self.lanes)

    # {{{ construction

    @classmethod
    def create(cls, n: int | None = None, *, kind: str = "auto",
               platform: str | int | None = None, contexts: str = "auto") -> "Team":
        """``n`` lanes on the devices :func:`bbmm.devices.opencl.discover` picks.

        :arg n: lanes; None: one per GPU, or 1 on a CPU. More lanes than physical
            devices are spread round-robin (several queues on one device).
        :arg contexts: ``auto`` (one shared context on GPUs, a context per lane on a
            CPU), ``shared`` or ``separate``.
        """
        if contexts not in ("auto", "shared", "separate"):
            raise ValueError(f"contexts must be auto, shared or separate, not {contexts!r}")
        disc = discover(platform, kind)
        phys = [p.cl_device for p in disc.chosen]
        if not phys:
            raise RuntimeError("no OpenCL device found" + (f"; {disc.hint}" if disc.hint else ""))
        gpu = bool(phys[0].type & cl.device_type.GPU)
        if n is None:
            n = len(phys) if gpu else 1
        if n < 1:
            raise ValueError(f"need at least one device, got {n}")
        placed = [phys[i % len(phys)] for i in range(n)]
        shared = contexts == "shared" or (contexts == "auto" and gpu)
        lanes = []
        if shared:
            used = []
            for d in placed:
                if all(d.int_ptr != u.int_ptr for u in used):
                    used.append(d)
            ctx = cl.Context(used)
            for i, d in enumerate(placed):
                lanes.append(Lane(i, ctx, cl.CommandQueue(ctx, d), d))
        else:
            for i, d in enumerate(placed):
                ctx = cl.Context([d])
                lanes.append(Lane(i, ctx, cl.CommandQueue(ctx, d), d))
        return cls(lanes, shared)

    @classmethod
    def from_devices(cls, devices: Sequence[Any]) -> "Team":
        """Lanes over existing contexts/queues: bbmm ``OpenCLDevice``\\ s (from
        :func:`bbmm.devices.opencl.make_devices`), or anything with ``context``,
        ``queue`` and ``cl_device`` (or ``device``). Shared when all contexts are one."""
        lanes = []
        for i, d in enumerate(devices):
            dev = getattr(d, "cl_device", None) or getattr(d, "device", None) \
                or d.queue.device
            lanes.append(Lane(i, d.context, d.queue, dev))
        first = lanes[0].context.int_ptr
        shared = all(ln.context.int_ptr == first for ln in lanes)
        return cls(lanes, shared, owned=False)

    @classmethod
    def of(cls, devices_or_n: Any) -> "Team":
        """A team from an int (:meth:`create`), a Team (itself), or devices
        (:meth:`from_devices`)."""
        if isinstance(devices_or_n, Team):
            return devices_or_n
        if devices_or_n is None or isinstance(devices_or_n, (int, np.integer)):
            return cls.create(None if devices_or_n is None else int(devices_or_n))
        return cls.from_devices(list(devices_or_n))

    # }}}

    # {{{ programs, memory

    def kernel(self, lane: Lane, source: str, name: str, options: str = "") -> Any:
        """A fresh ``cl.Kernel`` (one per caller, so each lane sets its own arguments)
        of ``source`` built once per context."""
        key = (lane.context.int_ptr, source, options)
        prg = self._programs.get(key)
        if prg is None:
            with warnings.catch_warnings():  # NVIDIA's build log is never empty
                warnings.simplefilter("ignore", cl.CompilerWarning)
                prg = cl.Program(lane.context, source).build(options=options)
            self._programs[key] = prg
        return cl.Kernel(prg, name)

    def buffer(self, lane: Lane, nbytes: int) -> Any:
        """A device buffer of ``nbytes`` on ``lane`` (first touched, so allocated now)."""
        buf = cl.Buffer(lane.context, cl.mem_flags.READ_WRITE, max(1, int(nbytes)))
        cl.enqueue_fill_buffer(lane.queue, buf, np.uint8(0), 0, min(max(1, int(nbytes)), 4096))
        return buf

    def pinned(self, shape: int | Sequence[int], dtype: Any = np.float32,
               lane: Lane | None = None) -> np.ndarray:
        """A page-locked host array (in the shared context, or ``lane``'s)."""
        ln = lane or self.lanes[0]
        return pinned_empty(ln.context, shape, dtype, queue=ln.queue)

    def slot(self, nelems: int, lane: Lane, dtype: Any = np.float32) -> Slot:
        """A staging slot for messages of ``nelems`` sent by ``lane``."""
        return Slot(self.pinned(nelems, dtype, lane))

    # }}}

    # {{{ synchronisation

    def flush(self, lanes: Iterable[Lane] | None = None) -> None:
        for ln in (self.lanes if lanes is None else lanes):
            ln.queue.flush()

    def finish(self) -> None:
        for ln in self.lanes:
            ln.queue.finish()

    def wait(self, events: Sequence[Any]) -> None:
        """Host wait for ``events`` (any contexts); counted in :attr:`host_waits`."""
        evs = [e for e in events if e is not None]
        if not evs:
            return
        self.host_waits += 1
        if self.shared:
            cl.wait_for_events(evs)
        else:
            for e in evs:  # clWaitForEvents wants one context per call
                e.wait()

    def exchange(self, messages: Sequence[Message]) -> tuple[int, int]:
        """Move rows device -> pinned host -> devices; returns the bytes moved
        ``(device to host, host to device)``.

        Each message is ``(src_lane, src_buf, src_byte_offset, slot, [(dst_lane, dst_buf,
        dst_byte_offset), ...])``; its size is the slot's. The read is enqueued on the
        source lane's queue (after whatever it already holds, i.e. the kernel that
        produced the row), each write on its destination's queue (before whatever comes
        next there, i.e. the kernel that reads the row).

        One context: the read waits (``wait_for``) for the slot's previous consumers and
        every write for the read; queues are flushed so cross-queue events can fire; the
        host never waits. Separate contexts: events cannot cross contexts, so the host
        waits for all the reads of the batch (one wait) before enqueueing the writes,
        and for a slot's previous consumers before refilling it (usually done already).
        """
        d2h = h2d = 0
        reads = []
        for src, buf, off, slot, _dsts in messages:
            if self.shared:
                wait = slot.pending or None
            else:
                if slot.pending and any(
                        e.command_execution_status != cl.command_execution_status.COMPLETE
                        for e in slot.pending):
                    self.wait(slot.pending)
                wait = None
            reads.append(cl.enqueue_copy(src.queue, slot.host, buf, src_offset=off,
                                         wait_for=wait, is_blocking=False))
            d2h += slot.host.nbytes
        if self.shared:
            self.flush({id(m[0]): m[0] for m in messages}.values())
        else:
            self.wait(reads)
        touched = {}
        for (src, buf, off, slot, dsts), rd in zip(messages, reads):
            writes = []
            for dst, dbuf, doff in dsts:
                writes.append(cl.enqueue_copy(dst.queue, dbuf, slot.host, dst_offset=doff,
                                              wait_for=[rd] if self.shared else None,
                                              is_blocking=False))
                touched[id(dst)] = dst
                h2d += slot.host.nbytes
            slot.pending = writes
        if self.shared:
            self.flush(touched.values())
        return d2h, h2d

    # }}}

    def close(self) -> None:
        """Drop programs (contexts go with the last reference)."""
        self._programs.clear()

# }}}


# {{{ helpers


def row_blocks(lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` near-equal consecutive blocks ``[a, b)`` of ``[lo, hi)``, none empty
    (fewer blocks when there are fewer rows than parts)."""
    total = hi - lo
    parts = max(1, min(parts, total))
    cuts = [lo + (total * p) // parts for p in range(parts + 1)]
    return [(cuts[p], cuts[p + 1]) for p in range(parts)]


def round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def nd_range(lane: Lane, sizes: Sequence[int], local: Sequence[int] | None
             ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Global and local sizes: rounded up to ``local`` where given (kernels bound-check)."""
    if local is None:
        return tuple(int(s) for s in sizes), None
    loc = tuple(int(x) for x in local)
    return tuple(round_up(int(s), x) for s, x in zip(sizes, loc)), loc


def default_local(team: Team, dims: int) -> tuple[int, ...] | None:
    """Work-group shape: 256 work-items along dimension 0 on GPUs; the driver's choice
    on CPUs (PoCL vectorises its own work-group loops)."""
    if not team.is_gpu:
        return None
    return (256,) + (1,) * (dims - 1)


def parse_local(text: str | None, team: Team, dims: int) -> tuple[int, ...] | None:
    """``--local 256x1`` -> (256, 1); ``auto`` -> :func:`default_local`; ``none`` -> None."""
    if text is None or text == "auto":
        return default_local(team, dims)
    if text == "none":
        return None
    parts = tuple(int(p) for p in text.lower().split("x"))
    if len(parts) != dims:
        raise SystemExit(f"--local {text}: need {dims} sizes")
    return parts


class Timer:
    def __init__(self) -> None:
        self.t = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        dt, self.t = now - self.t, now
        return dt


def result(team: Team, *, iterations: int, upload_s: float, loop_s: float,
           download_s: float, alloc_bytes: list[int], h2d_bytes: int, d2h_bytes: int,
           coherence_bytes: int, host_waits: int, **extra: Any) -> dict[str, Any]:
    """The dict every ``run`` returns.

    ``time_s`` is everything a bbmm run's ``wall_s`` covers: allocation, read-in, the
    loop and write-back (programs are built before). ``per_iter_s = time_s /
    iterations`` is comparable with bbmm's ``wall_s / iterations``;
    ``loop_per_iter_s`` leaves the read-in and write-back out.
    """
    time_s = upload_s + loop_s + download_s
    it = max(1, iterations)
    return {"time_s": time_s, "per_iter_s": time_s / it, "loop_s": loop_s,
            "loop_per_iter_s": loop_s / it, "upload_s": upload_s, "download_s": download_s,
            "iterations": iterations, "devices": len(team), "shared_context": team.shared,
            "device_names": [ln.device.name.strip() for ln in team.lanes],
            "alloc_bytes": alloc_bytes, "h2d_bytes": h2d_bytes, "d2h_bytes": d2h_bytes,
            "coherence_bytes": coherence_bytes, "host_waits_in_loop": host_waits, **extra}

# }}}


# {{{ command line


def add_common_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("devices")
    g.add_argument("--devices", type=int, default=None, metavar="N",
                   help="logical devices (default: every GPU, or 1 CPU device)")
    g.add_argument("--platform", default=None, help="OpenCL platform index or name part")
    g.add_argument("--device-kind", choices=("auto", "gpu", "cpu"), default="auto")
    g.add_argument("--contexts", choices=("auto", "shared", "separate"), default="auto",
                   help="one context for all lanes (events order across queues) or one per "
                        "lane (host waits); auto: shared on GPUs, separate on a CPU")
    g.add_argument("--local", default="auto", metavar="AxB",
                   help="work-group shape (auto: 256 along j on GPUs, driver's on CPUs; none)")
    r = p.add_argument_group("run")
    r.add_argument("--iterations", type=int, default=None,
                   help="serial iterations to run (default: the program's)")
    r.add_argument("--repeat", type=int, default=1, help="timed runs (after one warm-up "
                   "run when > 1); the median is printed")
    r.add_argument("--check", action="store_true",
                   help="compare with the numpy reference (small sizes only)")
    r.add_argument("--json", default=None, metavar="PATH", help="write the result as JSON")


def team_from_args(args: argparse.Namespace) -> Team:
    platform = args.platform
    if platform is not None and platform.isdigit():
        platform = int(platform)
    return Team.create(args.devices, kind=args.device_kind, platform=platform,
                       contexts=args.contexts)


def median_run(fn, repeat: int) -> dict[str, Any]:
    """Run ``fn() -> result dict`` (one warm-up first when repeat > 1); the run with the
    median ``time_s``, with every run's times under ``runs_s``."""
    if repeat > 1:
        fn()
    runs = [fn() for _ in range(max(1, repeat))]
    runs_sorted = sorted(runs, key=lambda r: r["time_s"])
    best = dict(runs_sorted[(len(runs_sorted) - 1) // 2])
    best["runs_s"] = [r["time_s"] for r in runs]
    return best


def print_result(name: str, res: dict[str, Any], json_path: str | None = None) -> None:
    kind = "one context" if res["shared_context"] else "a context each"
    devs = ", ".join(sorted(set(res["device_names"])))
    print(f"{name}: {res['devices']} device(s) ({kind}; {devs}), "
          f"{res['iterations']} iteration(s)")
    print(f"  time {res['time_s']:.6f} s = read-in {res['upload_s']:.6f} + loop {res['loop_s']:.6f}"
          f" + write-back {res['download_s']:.6f}")
    print(f"  per serial iteration: {res['per_iter_s'] * 1e3:.4f} ms "
          f"(loop only {res['loop_per_iter_s'] * 1e3:.4f} ms)")
    alloc = ", ".join(f"{b / 2**20:.3f}" for b in res["alloc_bytes"])
    print(f"  allocated per device (MiB): {alloc}; h2d {res['h2d_bytes']} B, d2h "
          f"{res['d2h_bytes']} B, coherence {res['coherence_bytes']} B; "
          f"host waits in loop {res['host_waits_in_loop']}")
    if "check" in res:
        print(f"  check: {res['check']}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(res, f, indent=1)


def compare_arrays(name: str, got: np.ndarray, expect: np.ndarray, rtol: float = 0.0) -> str | None:
    """None when equal (exactly, or within ``|d| <= rtol * max(1, |e|)``), else a line."""
    g, e = np.asarray(got, np.float64), np.asarray(expect, np.float64)
    if g.shape != e.shape:
        return f"{name}: shape {g.shape} != {e.shape}"
    with np.errstate(invalid="ignore"):
        err = np.abs(g - e) / np.maximum(1.0, np.abs(e))
    err = np.where((g == e) | (np.isnan(g) & np.isnan(e)), 0.0, np.nan_to_num(err, nan=np.inf))
    bad = err > rtol
    if not bad.any():
        return None
    idx = np.unravel_index(int(np.flatnonzero(bad)[0]), e.shape)
    return (f"{name}: {int(bad.sum())} of {e.size} differ; first at {tuple(int(i) for i in idx)}:"
            f" got {got[idx]}, expected {expect[idx]}; max error {float(err.max()):.3g}")

# }}}

# vim: foldmethod=marker
