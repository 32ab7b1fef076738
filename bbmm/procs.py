"""``bbmm run --procs P``: one program over P processes of one machine.

Each process drives its own share of the devices (its own OpenCL context, queues and
memory pools) and runs the host driver exactly as an MPI rank does
(:mod:`bbmm.mpirun`, :class:`~bbmm.distributed.DistributedRuntime`): it plans every
tile, runs its own, and receives from their owners the regions its tiles read. What
differs from ``--mpi`` is the transport (:class:`~bbmm.shm.ShmComm`: shared memory,
a few microseconds a message) and the launch: the process the user started is rank 0
and starts the others itself, so ``bbmm run ... --procs 4`` needs no ``mpiexec``.

Why processes: one host thread cannot keep four GPUs busy. An OpenCL enqueue costs the
host 11-28 us and the driver serialises calls from threads of one process, so every
device added to one process adds its launches and bookkeeping to every serial
iteration; P processes enqueue P times as much (``docs/performance.md``).

.. autofunction:: resolve_procs
.. autofunction:: run_procs
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from typing import Any

from . import shm
from .diagnostic import UsageError


def resolve_procs(args: argparse.Namespace) -> int:
    """The number of processes ``--procs`` asks for (``auto``: one per GPU when each
    logical device is a GPU of its own, else one), checked against ``--devices``;
    sets ``args.devices`` to the devices of each process."""
    want = getattr(args, "procs", "1") or "1"
    if want == "auto":
        procs = _auto(args)
    else:
        try:
            procs = int(want)
        except ValueError:
            raise UsageError(f"--procs {want!r}: a number of processes or 'auto'") from None
        if procs < 1:
            raise UsageError(f"--procs must be at least 1, got {procs}")
    if procs == 1:
        return 1
    if getattr(args, "mpi", False):
        raise UsageError("--procs and --mpi exclude each other (under mpiexec each rank is "
                         "already a process)")
    if not shm.supported():
        raise UsageError(f"--procs {procs}: processes share memory only on x86-64 here "
                         "(stores in order); use --procs 1")
    total = args.devices
    if total is None:
        return procs  # every process takes its block of the machine's GPUs
    if total % procs:
        raise UsageError(f"--devices {total} does not split evenly over --procs {procs}")
    args.devices = total // procs
    return procs


AUTO_MIN_GPUS = 4
"""``--procs auto`` (the default) takes one process per GPU from this many GPUs on: on
four H100s processes ran Floyd n=16384 at 0.699 ms per k against 0.794 in one process
and heat2d 12288^2 at 1.11 ms per step against 1.51 (``results/h100x4-2026-11-26``);
on two GPUs one process reaches Floyd's floor (1.04x on two H100s, ``bench_floor.py
--devices 2``) and processes were not measured better."""


def _auto(args: argparse.Namespace) -> int:
    """One process per GPU when the run's logical devices are distinct GPUs, at least
    :data:`AUTO_MIN_GPUS` of them."""
    if getattr(args, "mpi", False) or not shm.supported():
        return 1
    from .devargs import platform_arg
    from .devices.opencl import discover

    disc = discover(platform_arg(args), args.device_kind)
    gpus = [d for d in disc.chosen if d.type == "GPU"]
    if len(gpus) != len(disc.chosen):
        return 1
    n = len(gpus) if args.devices is None else args.devices
    return n if AUTO_MIN_GPUS <= n <= len(gpus) else 1


def _child_alive(ppid: int) -> Any:
    return lambda: os.getppid() == ppid


def run_procs(args: argparse.Namespace, procs: int) -> int:
    """Start ``procs - 1`` processes, run rank 0 here; the exit status is the worst one."""
    from .mpirun import run_cli

    path = shm.create(procs)
    children: list[subprocess.Popen] = []
    logs: list[Any] = []  # each child's stderr: relayed by this process, once
    try:
        for rank in range(1, procs):
            logs.append(tempfile.TemporaryFile("w+"))
            children.append(subprocess.Popen(
                [sys.executable, "-m", "bbmm.procs", path, str(rank), str(procs)],
                stdin=subprocess.DEVNULL, stderr=logs[-1]))

        def alive() -> bool:
            return all(c.poll() in (None, 0) for c in children)

        comm = shm.ShmComm(path, 0, procs, alive=alive)
        comm.exits = False
        try:
            comm.bcast(args)
            comm.barrier()
        except shm.PeerLost:
            codes = [c.wait() for c in children]
            raise UsageError(f"--procs {procs}: a process did not start "
                             f"(exit statuses {codes})") from None
        os.unlink(path)  # every process has it mapped
        said = _Said()
        with contextlib.redirect_stderr(said):
            code = run_cli(args, comm)
        codes = [c.wait() for c in children]
        if not said.error:
            _relay(logs, codes)  # rank 0 said nothing: the first child that failed speaks
        return max([code, *(c if c > 0 else 1 for c in codes if c != 0)])
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
        for f in logs:
            f.close()
        shm.remove(path)


class _Said(io.TextIOBase):
    """Rank 0's stderr, passed through, noting whether it printed an error."""

    def __init__(self) -> None:
        self.error = False
        self.out = sys.stderr

    def write(self, text: str) -> int:
        if "bbmm: error:" in text or "Traceback" in text:
            self.error = True
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def _relay(logs: list[Any], codes: list[int]) -> None:
    """Print what the children wrote to stderr: the first failed child's whole text (an
    error line, or a traceback), else whatever they said (warnings)."""
    texts = []
    for f in logs:
        f.seek(0)
        texts.append(f.read())
    failed = [t for t, c in zip(texts, codes) if c != 0 and t.strip()]
    for t in failed[:1] or [t for t in texts if t.strip()]:
        sys.stderr.write(t if t.endswith("\n") else t + "\n")


def child_main(argv: list[str]) -> int:
    """A process started by :func:`run_procs`: ``python -m bbmm.procs PATH RANK SIZE``."""
    from .console import one_line_warnings
    from .mpirun import run_cli

    path, rank, size = argv[0], int(argv[1]), int(argv[2])
    comm = shm.ShmComm(path, rank, size, alive=_child_alive(os.getppid()))
    try:
        args = comm.bcast(None)
        comm.barrier()
    except shm.PeerLost:
        return 1
    one_line_warnings()
    try:
        return run_cli(args, comm)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
