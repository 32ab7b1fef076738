"""Logical devices: how ``n`` logical devices spread over the physical ones
(:func:`plan_logical`, the GPUs of a machine split among its MPI ranks by
:func:`node_share`) and making them in one shared context (:func:`make_devices`)."""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import pyopencl as cl

from ..diagnostic import DeviceError, UsageError, format_bytes, parse_bytes
from .base import Device
from .clerrors import device_error as _device_error
from .commandlog import PROFILE_LIMIT
from .discovery import Discovery, PhysicalDevice, discover
from .cldevice import CAP_FRACTION, DEFAULT_ARENA, OpenCLDevice

__all__ = ["plan_logical", "make_devices", "node_share", "MAX_SHARERS"]


def _iter_logical(n: int, phys: Sequence[PhysicalDevice]) -> Iterator[tuple[int, PhysicalDevice]]:
    for i in range(n):
        yield i, phys[i % len(phys)]


def node_share(phys: Sequence[PhysicalDevice], node: tuple[int, int] | None
               ) -> tuple[PhysicalDevice, ...]:
    """The GPUs of ``phys`` that rank ``node[0]`` of the ``node[1]`` ranks on one machine
    drives: a block each when there are enough, else one GPU each, round-robin. CPU
    devices are not split (every rank uses the machine's one CPU device)."""
    phys = tuple(phys)
    if node is None or node[1] <= 1 or not phys or phys[0].type != "GPU":
        return phys
    r, s = node
    if len(phys) >= s:
        return phys[r * len(phys) // s:(r + 1) * len(phys) // s]
    return (phys[r % len(phys)],)


MAX_SHARERS = 64
"""Most logical devices on one physical device (each has its own queue, pool and share of
the memory; ``--devices 10000`` is a mistake, not a plan)."""


def plan_logical(n: int | None, disc: Discovery, node: tuple[int, int] | None = None,
                 cap: int | None = None) -> list[tuple[int, PhysicalDevice, int]]:
    """``(logical index, physical device, sharers)`` for :func:`make_devices`; ``node``
    as for :func:`node_share`. A :class:`UsageError` with the figures for more than
    :data:`MAX_SHARERS` logical devices on one physical device, or a cap per logical
    device (``cap``) whose sum over the logical devices sharing a physical one exceeds
    its memory."""
    phys = node_share(disc.chosen, node)
    if not phys:
        msg = "no OpenCL device found"
        if disc.devices:
            msg += " of the requested kind/platform (available: " + ", ".join(
                f"{d.name} [{d.type}, {d.platform}]" for d in disc.devices) + ")"
        if disc.problems:
            msg += "; " + "; ".join(disc.problems)
        if disc.hint:
            msg += "; " + disc.hint
        raise DeviceError(msg)
    if n is None:
        n = len(phys) if phys[0].type == "GPU" else 1
    if n < 1:
        raise UsageError(f"number of devices must be at least 1, got {n}")
    share = {}
    for _, p in _iter_logical(n, phys):
        share[id(p)] = share.get(id(p), 0) + 1
    most = max(share.values())
    if most > MAX_SHARERS:
        raise UsageError(f"--devices {n}: {most} logical devices on one physical device "
                         f"({len(phys)} physical: {', '.join(p.name.strip() for p in phys)}); "
                         f"at most {MAX_SHARERS} each")
    if cap is not None:
        for p in phys:
            k = share.get(id(p), 0)
            if k and cap * k > p.global_mem:
                raise UsageError(
                    f"--device-mem {format_bytes(cap)}"
                    + (f" x {k} logical devices = {format_bytes(cap * k)}" if k > 1 else "")
                    + f" is more than the {format_bytes(p.global_mem)} of memory of "
                      f"{p.name.strip()}")
    return [(i, p, share[id(p)]) for i, p in _iter_logical(n, phys)]


def make_devices(n: int | None = None, cap: int | str | None = None,
                 platform: str | int | None = None, kind: str = "auto",
                 arena_size: int = DEFAULT_ARENA, contexts: str = "shared",
                 node: tuple[int, int] | None = None, profile: bool = False,
                 side: bool = True) -> list[Device]:
    """``n`` logical OpenCL devices, each with its own queue and pool.

    :arg n: number of logical devices; None: every GPU, or 1 CPU device. With fewer
        physical devices than ``n`` the logical ones are spread round-robin.
    :arg cap: bytes per logical device (int or ``"256MiB"``). Default:
        :data:`CAP_FRACTION` of the physical device's memory, divided among the
        logical devices sharing it.
    :arg platform, kind: as for :func:`discover`.
    :arg contexts: ``shared`` (default): one context over the physical devices, so
        commands of different devices are ordered by events and the host never waits
        for one device on behalf of another; ``separate``: a context per logical device
        (cross-device order then costs a host wait).
    :arg node: ``(rank on this machine, ranks on this machine)`` under MPI: the ranks
        of one machine split its GPUs (:func:`node_share`), so ``mpiexec -n 2`` on a
        two-GPU machine gives each rank its own GPU.
    :arg profile: record every command of every device with its OpenCL profiling event
        (queues with ``PROFILING_ENABLE``), :data:`PROFILE_LIMIT` commands in all;
        :func:`bbmm.profile.collect` reads them after the run.
    :arg side: read-ins of new boxes on a second queue of each device
        (:attr:`bbmm.config.RuntimeConfig.side`).
    """
    if contexts not in ("shared", "separate"):
        raise UsageError(f"contexts must be shared or separate, not {contexts!r}")
    cap_bytes = None if cap is None else parse_bytes(cap)
    if cap_bytes is not None and cap_bytes <= 0:
        raise UsageError(f"device memory cap must be positive, got {cap!r}")
    plan = plan_logical(n, discover(platform, kind), node, cap_bytes)
    ctx = None
    programs: dict | None = None
    if contexts == "shared":
        phys: list[Any] = []
        for _, p, _ in plan:
            if all(p.cl_device.int_ptr != q.int_ptr for q in phys):
                phys.append(p.cl_device)
        try:
            ctx = cl.Context(phys)
        except cl.Error as e:
            raise _device_error(e, ", ".join(d.name.strip() for d in phys),
                                "creating a context") from None
        programs = {}
    devs: list[Device] = []
    limit = max(1, PROFILE_LIMIT // len(plan))
    for i, p, sharers in plan:
        c = cap_bytes if cap_bytes is not None else int(CAP_FRACTION * p.global_mem) // sharers
        devs.append(OpenCLDevice.create(p.cl_device, index=i, cap=c, arena_size=arena_size,
                                        context=ctx, programs=programs, profile=profile,
                                        profile_limit=limit, side=side))
    return devs
