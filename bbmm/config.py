"""The run's configuration: one frozen :class:`RuntimeConfig`, built once where a run is
set up (:meth:`RuntimeConfig.from_env`: the ``$BBMM_*`` variables through
:mod:`bbmm.settings`' checked parsers, a run's ``--tune`` values over them) and passed
down: to the :class:`~bbmm.runtime.Runtime`, the devices made for the run, the
application's tile choice, and the kernel launches of a generated driver
(:class:`KernelOptions`, which the driver takes from the runtime it is given:
:func:`bbmm.hostlib.kernel_options`). Changing the environment after it is built
changes nothing of a run.

Each field's default is what the measurements chose (``docs/cli.md`` and
``docs/performance.md`` give the measurement behind each)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import settings
from .acquire import fuse_slack
from .diagnostic import SettingError, UsageError, parse_bytes

__all__ = ["RuntimeConfig", "KernelOptions", "local_sizes"]


def _block(spec: str | None, label: str = "BBMM_BLOCK") -> tuple[int, int]:
    """``$BBMM_BLOCK``: ``RxQ``, the rows and columns of a register block (default 4x1)."""
    text = spec or "4x1"
    try:
        r, q = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise SettingError(f"{label}: {text!r} is not RxQ (4x1)") from None
    if not (1 <= r <= 32 and 1 <= q <= 32):
        raise SettingError(f"{label}: {text!r}: R and Q must lie in 1..32")
    return q, r


def _stage(spec: str | None, label: str = "BBMM_STAGE") -> tuple[int, int] | None:
    """``$BBMM_STAGE``: ``0`` (or ``off``) turns staged kernels off, ``GxC`` fixes their shape (G rows
    of BBMM_SL work-items, C trips per chunk) on every device, unset or ``auto`` stages
    on GPUs only, in a shape picked per launch."""
    if spec is None or spec.strip().lower() in ("", "auto"):
        return (0, 0)
    if spec.strip().lower() in ("0", "off", "no"):
        return None
    try:
        g, c = (int(x) for x in spec.lower().split("x"))
    except ValueError:
        raise SettingError(f"{label}: {spec!r} is not 0, auto or GxC (16x128)") from None
    if not (1 <= g <= 64 and 1 <= c <= 1024):
        raise SettingError(f"{label}: {spec!r}: G must lie in 1..64 and C in 1..1024")
    return g, c


def local_sizes(spec: str | None, label: str = "BBMM_LOCAL") -> dict[int, tuple[int, ...]]:
    """Work-group shape per NDRange rank, with ``spec`` (``$BBMM_LOCAL``, e.g.
    ``"128x2,64x2x2"``: each item overrides the rank of its number of factors) applied
    to the defaults; OpenCL dimension 0 is the innermost band loop (consecutive
    work-items touch consecutive elements: coalesced).

    The shape hardly matters on the H200 once kernels are built: warm sweeps of heat2d,
    fdtd2d and heat3d put every shape tried (32x8 to 256x1, 32x4x2 to 256x1x1) within
    8% of each other (results/h200x2-2026-11-22/local_sweep_warm.txt). The defaults are the
    hand-written baselines' one-row groups. (Earlier sweeps that ran each program's
    first, cold-compiling run with 32x8 showed 5-14x differences that were the build.)
    """
    sizes = {1: (256,), 2: (256, 1), 3: (128, 2, 1)}
    for item in _local_items(spec):
        try:
            shape = tuple(int(f) for f in item.lower().split("x"))
        except ValueError:
            raise SettingError(f"{label}: {item!r} is not a shape such as 128x2") from None
        if not 1 <= len(shape) <= 3 or min(shape) < 1:
            raise SettingError(f"{label}: {item!r} needs 1 to 3 positive factors")
        sizes[len(shape)] = shape
    return sizes


def _local_items(spec: str | None) -> list[str]:
    """The shapes of a ``$BBMM_LOCAL`` spec (``"128x2, 64"`` -> ``["128x2", "64"]``)."""
    return [item for item in (spec or "").replace(" ", "").split(",") if item]


@dataclass(frozen=True)
class KernelOptions:
    """How kernels are built and launched (:func:`bbmm.hostlib.launch`), a part of the
    run's :class:`RuntimeConfig`."""

    prebuild: bool = True
    """Build kernels in the background from the moment the devices are made
    (:func:`bbmm.hostlib.prebuild`; ``$BBMM_PREBUILD``)."""
    specialize: bool = True
    """Build each kernel for the slot of every access and the index width of the tile (one
    build per distinct combination, cached): every unsplit access becomes one direct load,
    and the kernel takes only the arguments of the slots its accesses use
    (:func:`bbmm.hostlib._layout`; ``$BBMM_SPECIALIZE``)."""
    align: int = 32
    """The first work-item of OpenCL dimension 0 gets an index that is a multiple of this
    (``$BBMM_ALIGN``; 1: the loop's lower bound): a warp of 32 floats then reads one
    128-byte segment of a row that starts on one (:func:`bbmm.hostlib.launch`). On one
    H200 heat2d's step at 12288^2 takes 0.675 ms with it against 0.705 from the lower
    bound, 1.16x and 1.21x the copy floor (``python scripts/bench_floor.py --floyd 0
    --devices 1``, ``BBMM_ALIGN=1`` for the lower bound)."""
    coarsen: int = 1
    """Points per work-item along OpenCL dimension 0 for kernels that take ``BBMM_CO``
    (``$BBMM_COARSEN``)."""
    coarsen1: int = 8
    """Consecutive points per work-item along OpenCL dimension 1 (``BBMM_CO1``,
    ``$BBMM_COARSEN1``). The default 1 x 8 was the fastest shape on one H200 for floyd,
    heat2d, heat3d and lu, and within 2% of the best for fdtd2d and matmul
    (``python scripts/bench_floor.py --devices 1 --coarsen 2x1,2x4,1x8``)."""
    block: tuple[int, int] = (1, 4)
    """Points per work-item of register-blocked kernels (:attr:`bbmm.codegen.opencl.KernelSource.
    blocked`) as (along OpenCL dimension 0, along dimension 1), from ``$BBMM_BLOCK=RxQ``: R
    consecutive rows by Q columns. bbmm's matmul kernel on one H200 at n = 8192 (profiled,
    two rounds alike): 1 x 1 217 ms, **4 x 1 172**, 8 x 1 174, 16 x 1 235, 8 x 2 197
    (``BBMM_BLOCK=RxQ python -m bbmm run polybench/matmul.c --param ni=8192 --param
    nj=8192 --param nk=8192 --devices 1 --profile FILE``, then ``bbmm timeline FILE``)."""
    restrict: bool = True
    """Read-only arrays' pointers are ``restrict`` (``$BBMM_RESTRICT=0``: built without)."""
    unroll: bool = True
    """Innermost loops inside a work-item are unrolled 8 times (``$BBMM_UNROLL=0``: not)."""
    stage: tuple[int, int] | None = (0, 0)
    """Shape of staged kernels (:attr:`bbmm.codegen.opencl.KernelSource.staged`): None = off,
    (0, 0) = on GPUs, chosen per launch by :func:`bbmm.hostlib.stage_shape`
    (``$BBMM_STAGE``)."""
    local: Mapping[int, tuple[int, ...]] = field(
        default_factory=lambda: local_sizes(None))
    """Work-group shape per NDRange rank (:func:`local_sizes`, ``$BBMM_LOCAL``)."""
    local_given: frozenset[int] = frozenset()
    """NDRange ranks whose work-group shape ``$BBMM_LOCAL`` sets: taken as given."""

    @classmethod
    def read(cls, r: settings.Reader) -> KernelOptions:
        """The options ``r`` (the environment, ``--tune`` over it) sets; a bad value raises
        :class:`~bbmm.diagnostic.SettingError`."""
        local = r.text("BBMM_LOCAL")
        return cls(prebuild=r.switch("BBMM_PREBUILD", True),
                   specialize=r.switch("BBMM_SPECIALIZE", True),
                   align=r.integer("BBMM_ALIGN", 32, 1, 1024),
                   coarsen=r.integer("BBMM_COARSEN", 1, 1, 64),
                   coarsen1=r.integer("BBMM_COARSEN1", 8, 1, 64),
                   block=_block(r.text("BBMM_BLOCK"), r.label("BBMM_BLOCK")),
                   restrict=r.switch("BBMM_RESTRICT", True),
                   unroll=r.switch("BBMM_UNROLL", True),
                   stage=_stage(r.text("BBMM_STAGE"), r.label("BBMM_STAGE")),
                   local=local_sizes(local, r.label("BBMM_LOCAL")),
                   local_given=frozenset(item.count("x") + 1 for item in _local_items(local)))


def _fuse(spec: str | None, label: str) -> float:
    """``$BBMM_FUSE`` (:func:`bbmm.acquire.fuse_slack`), a fraction in [0, 1)."""
    try:
        value = fuse_slack(spec)
    except UsageError:
        raise SettingError(f"{label}: {spec!r} is not a fraction such as 0.02 or 1/64") from None
    if not 0 <= value < 1:
        raise SettingError(f"{label}: {spec!r} is not in [0, 1)")
    return value


@dataclass(frozen=True)
class RuntimeConfig:
    """The settings of one run, read once (:meth:`from_env`) and passed down; frozen, so
    that nothing changes them while the run goes on."""

    debug: bool = False
    """Check the coherence invariant after every phase (``$BBMM_DEBUG``): for testing,
    slow."""
    sync: bool = False
    """Wait for every kernel right after its launch, for exact kernel times
    (``$BBMM_SYNC``); replay and edge-first rows are then off."""
    replay: bool = True
    """Replay serial iterations that repeat (``$BBMM_REPLAY``, ``--no-replay``): heat2d
    12288^2 on two GPUs 0.960 -> 0.651 ms per step; and those that repeat up to a shift
    of their boxes: Floyd n=1024 on four dry devices 0.354 -> 0.251 ms of host work per
    ``k`` (``python scripts/bench_host.py --programs floyd --devices 4 --param
    floyd:n=1024``, before and after)."""
    ahead: bool = True
    """Replay a serial iteration from the ones before it without building its tiles,
    where the generated driver's comparisons of the serial iterators say every box moves
    on as before (``$BBMM_AHEAD``; :meth:`bbmm.runtime.Runtime.ahead`)."""
    fuse: float = 1 / 64
    """Fuse a tile's boxes of an array into their hull when that adds at most this
    fraction of its points (``$BBMM_FUSE``, ``--fuse``): heat2d on one GPU 1.117 ->
    0.708 ms per step."""
    edge: int | None = None
    """Tiles that write at least this many points run the rows writing flow-out first
    (``$BBMM_EDGE``; 0: never); None: the default of the runtime's kind, off in one
    process, on over two processes, off over more (:data:`bbmm.runtime.EDGE_POINTS`,
    :data:`~bbmm.runtime.EDGE_POINTS_RANKS`, :data:`~bbmm.runtime.EDGE_PROCESSES`)."""
    gate: bool = False
    """Over processes, queue a replayed nest's halo copy in and launch before its
    exchange, behind a gate the exchange opens once the halos are in the host's array
    (``$BBMM_GATE``; :func:`bbmm.replay._ahead`). Off by default: on two H200s over two
    processes it ran heat2d 12288^2 at 0.956 and 1.181 of the time without it in two
    calls, fdtd2d 10240^2 1.021 and 1.033, heat3d 512^3 0.980, Floyd n=16384 1.046 and
    1.039, LU n=16384 1.203 and 0.829 (loop medians of three alternating rounds:
    ``python3 scripts/bench_ab.py --base . --base-tune gate=off --new-tune gate=on --
    run polybench/P.c ... --devices 2 --procs 2``); over four processes on four H200s,
    where a nest's launch lies between the exchange and the kernel, heat2d 12288^2 at
    1.009 and fdtd2d 10240^2 at 1.143 (the same with ``--devices 4``,
    ``results/h200x4-2026-11-28/gate``), Floyd n=16384 at 1.12 and LU n=16384 at 1.04
    (``results/h200x4-2026-11-28/gate4``)."""
    place: bool = True
    """Run the tiles of small phases where their data is (``$BBMM_PLACE``): LU n=8192 on
    two devices moves 63 MiB less between them."""
    defer: bool = True
    """Defer and merge small write-outs (``$BBMM_DEFER``): LU n=16384 12.35 -> 4.50 s."""
    side: bool = True
    """Read-ins of new boxes on a second queue of each device made for the run
    (``$BBMM_SIDE``): mvt at 5x the device memory 0.891 -> 0.734 s."""
    beside: bool = True
    """Over processes, the flow-out of a tile split at its flow-out rows (:attr:`edge`)
    is copied out on the device's second queue (:attr:`side`), beside the launch of the
    tile's other rows, instead of between the two launches (``$BBMM_BESIDE``). On two
    H200s over two processes, loop medians of three alternating rounds (``python3
    scripts/bench_ab.py --base . --base-tune beside=0 --new-tune beside=1 -- run
    polybench/P.c ... --devices 2 --procs 2``, ``results/h200x2-2026-11-28/beside``):
    heat2d 12288^2 0.491 against 0.536 ms per step, heat3d 512^3 0.855 against 0.919.
    Not in one process driving several devices, where a device's copy in waits for
    another device's copy out: with every tile split (``--tune edge=1``) heat3d ran 0.824
    against 0.655 ms per step beside, and the split alone already loses there
    (:data:`bbmm.runtime.EDGE_POINTS`)."""
    whole: int = 1 << 20
    """Arrays the program never writes, of at most this many bytes, are held whole
    (``$BBMM_WHOLE``; 0: never)."""
    direct: int | None = 256 << 10
    """Messages between processes of one machine (``--procs``) of at least this many
    bytes are copied by the receiver straight out of the sender's host arrays in shared
    memory, one copy instead of two, while the sender goes on (``$BBMM_DIRECT``, a size;
    ``off``: never, which also keeps the host arrays out of shared memory): heat2d
    12288^2 over four H100s 0.804 against 0.888 ms per step by loop time, its whole run
    1.033 against 2.442 (``python3 scripts/bench_ab.py --base . --base-tune direct=off
    --new-tune direct=256KiB -- run polybench/heat2d.c --param n=12288 --param
    tsteps=320 --devices 4``). Smaller messages stay in the mailbox, where the sender
    never waits for its receiver: every message direct (``--new-tune direct=1``) ran
    heat2d 12288^2 over four H200s at 0.699 against 0.536 ms per step and Floyd n=8192 at
    0.541 against 0.332 ms per ``k`` (medians of four alternating rounds)."""
    lend: bool = True
    """Over processes, a message left in its sender's arrays (``direct``) is loaded by
    the receiver's devices straight from there, and the devices that loaded it copy it
    into the receiver's arrays behind their launches (``$BBMM_LEND``; off: the
    receiver's processor copies it at once): heat3d 512^3 over four H100s 1.187 against
    1.580 ms per step by the medians of five loops, the ranges apart (``python3
    scripts/bench_ab.py --base . --base-tune lend=off --new-tune lend=on -- run
    polybench/heat3d.c --param n=512 --param tsteps=220 --devices 4``)."""
    pipeline: int = 16
    """At most this many tiles per device for a program whose nests all run once and
    share no array (``$BBMM_PIPELINE``): blackscholes 64M on one GPU 25.7 -> 17.9 ms."""
    kernels: KernelOptions = field(default_factory=KernelOptions)
    """How kernels are built and launched."""

    @classmethod
    def from_env(cls, tune: Sequence[str] | Mapping[str, Any] | None = None) -> RuntimeConfig:
        """The configuration the ``$BBMM_*`` variables set, with ``tune`` (``--tune
        NAME=VALUE`` items or ``{NAME: VALUE}``, :func:`bbmm.settings.parse_tune`) over
        them; a bad value is a :class:`~bbmm.diagnostic.SettingError` naming the setting
        as given, an unknown name a :class:`~bbmm.diagnostic.UsageError`."""
        r = settings.Reader(settings.parse_tune(tune))
        return cls(debug=r.switch("BBMM_DEBUG", False),
                   sync=r.switch("BBMM_SYNC", False),
                   replay=r.switch("BBMM_REPLAY", True),
                   ahead=r.switch("BBMM_AHEAD", True),
                   fuse=_fuse(r.text("BBMM_FUSE"), r.label("BBMM_FUSE")),
                   edge=edge_points(r.text("BBMM_EDGE"), r.label("BBMM_EDGE")),
                   gate=r.switch("BBMM_GATE", False),
                   place=r.switch("BBMM_PLACE", True),
                   defer=r.switch("BBMM_DEFER", True),
                   side=r.switch("BBMM_SIDE", True),
                   beside=r.switch("BBMM_BESIDE", True),
                   whole=r.size("BBMM_WHOLE", 1 << 20),
                   direct=direct_bytes(r.text("BBMM_DIRECT"), r.label("BBMM_DIRECT")),
                   lend=r.switch("BBMM_LEND", True),
                   pipeline=r.integer("BBMM_PIPELINE", 16, 1),
                   kernels=KernelOptions.read(r))


def direct_bytes(spec: str | None, label: str = "BBMM_DIRECT") -> int | None:
    """``$BBMM_DIRECT``: a size (``256KiB``, ``0``: every message) or ``off``; unset: the
    default of :attr:`RuntimeConfig.direct`."""
    if spec is None or not spec.strip():
        return RuntimeConfig.direct
    text = spec.strip()
    if text.lower() in settings.OFF[1:]:  # "0" is a size here: every message
        return None
    try:
        return parse_bytes(text)
    except (UsageError, ValueError):
        raise SettingError(f"{label}: {spec!r} is not a size such as 262144 or 256KiB, "
                           f"or off") from None


def edge_points(spec: str | None, label: str = "BBMM_EDGE") -> int | None:
    """``$BBMM_EDGE``: ``0`` (or ``off``) never splits a tile, ``N`` splits tiles that
    write at least N points (``1``: every tile with flow-out another device holds);
    unset: None (the runtime's default, :attr:`RuntimeConfig.edge`)."""
    if spec is None or not spec.strip():
        return None
    text = spec.strip().lower()
    if text in ("off", "no"):
        return 0
    try:
        n = int(text)
    except ValueError:
        raise SettingError(f"{label}: {spec!r} is not a number of points (0: off)") from None
    if n < 0:
        raise SettingError(f"{label}: {n} is negative")
    return n

