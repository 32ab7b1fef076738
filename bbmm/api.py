"""bbmm from Python: compile a C kernel once, run it in place on your own numpy arrays.

.. code-block:: python

    import numpy as np
    import bbmm

    prog = bbmm.compile("polybench/floyd.c")      # cached like ``bbmm run``
    print(prog)                                    # parameters, arrays, parallel loops
    path = np.full((4096, 4096), 1e6, np.float32)
    stats = prog(n=4096, path=path, devices=2, device_mem="2GiB")   # path updated in place
    stats.per_device, stats.time_s                 # the figures of ``bbmm run --json``
    devs = bbmm.devices(2)                         # logical devices, reusable across calls
    prog(n=4096, path=path, devices=devs)

Every argument is checked before anything runs (:class:`Program.run`); a mismatch is a
:class:`~bbmm.diagnostic.UsageError` (a :class:`~bbmm.diagnostic.BBMMError`) naming the
argument, what the kernel expects and what was given. Nothing is converted: a float64
array for a ``float`` kernel is refused, not copied into float32. The run copies the
caller's arrays into bbmm's (page-locked) host arrays, runs on the devices, and copies
every array the kernel writes back into the caller's arrays.

``bbmm compile`` and ``bbmm run`` are a command line over this module: they compile
through :func:`compile` and run through :meth:`Program.execute`, the layer under
:meth:`Program.run` that takes inputs the command line made (``--init``, random data)
and returns the host arrays for ``--check``; the report is :meth:`Program.stats`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from .devices import logical_devices as make_devices
from .diagnostic import UsageError

if TYPE_CHECKING:
    from .run import RunResult

OPTIONS = ("devices", "device_mem", "tile", "mode", "coherence", "fuse", "reuse", "replay",
           "progress", "profile", "platform", "device_kind", "tune")
"""The keywords of :meth:`Program.__call__` that are options of the run, not arguments
of the kernel (a kernel argument of one of these names is passed with
:meth:`Program.run`'s ``arguments``)."""

_INT_CTYPES = {"int", "unsigned int", "long", "unsigned long", "long long",
               "unsigned long long", "short", "unsigned short", "char", "unsigned char",
               "signed char", "_Bool"}


@dataclass(frozen=True)
class ArraySpec:
    """One array the caller passes: its C name, element type, shape in the parameters."""

    name: str
    """The C name (the keyword to pass it by)."""
    ctype: str
    dtype: np.dtype
    dims: tuple[str, ...]
    """Extents as C expressions of the parameters (``("n", "n")``)."""
    read: bool
    written: bool
    model: str
    """bbmm's name for it (differs from :attr:`name` where the front end renamed it)."""

    def __str__(self) -> str:
        use = "read and written" if self.read and self.written else \
            "written" if self.written else "read"
        return f"{self.ctype} {self.name}[{']['.join(self.dims)}]  ({self.dtype}, {use})"


@dataclass(frozen=True)
class ParamSpec:
    """One scalar parameter: its C name and type, and its default (PolyBench's sizes)."""

    name: str
    ctype: str
    integer: bool
    default: int | None
    model: str

    def __str__(self) -> str:
        d = f" = {self.default} (default)" if self.default is not None else ""
        return f"{self.ctype} {self.name}{d}"


class RunStats(Mapping[str, Any]):
    """What a run reports: the fields of ``bbmm run --json`` as attributes
    (``stats.per_device``, ``stats.time_s``, ``stats.wall_s``...) and as a read-only
    mapping (``stats["tiles"]``, ``dict(stats)``, :meth:`as_dict`), plus :attr:`returned`
    (the value a kernel returning one returned, else None)."""

    def __init__(self, doc: dict[str, Any], returned: Any = None):
        self._doc = doc
        self.returned = returned

    def __getattr__(self, name: str) -> Any:
        doc = self.__dict__.get("_doc")
        if doc is not None and name in doc:
            return doc[name]
        raise AttributeError(f"RunStats has no field {name!r} (fields: "
                             f"{', '.join(doc or ())})")

    def __getitem__(self, key: str) -> Any:
        return self._doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._doc)

    def __len__(self) -> int:
        return len(self._doc)

    def as_dict(self) -> dict[str, Any]:
        """A deep copy of the report, as ``bbmm run --json`` writes it."""
        import copy
        return copy.deepcopy(self._doc)

    def __repr__(self) -> str:
        d = self._doc
        return (f"RunStats({d['kernel']}: {d['devices']} device(s), tile {d['tile']}, "
                f"{d['tiles']} tiles, {d['wall_s']:.3f} s)")


class Program:
    """A compiled C kernel, callable on numpy arrays (:func:`compile` makes one)."""

    def __init__(self, compiled: Any, defines: Mapping[str, str] | None = None,
                 include_dirs: Sequence[str] = ()):
        self.compiled = compiled
        """The compiler's :class:`bbmm.codegen.compile.Program` (model, plan, sources)."""
        self.defines = dict(defines or {})
        self.include_dirs = tuple(include_dirs)
        self._module: Any = None
        scop = compiled.scop
        self.function: str = scop.function
        self.path: str = compiled.path
        c = dict(scop.c_names)
        self._c = c
        written = {a.array for a in scop.accesses() if a.kind == "write"}
        read = {a.array for a in scop.accesses() if a.kind != "write"}
        from .run import DTYPES
        from bbmm.codegen.names import c_text
        self.arrays: dict[str, ArraySpec] = {}
        for a in scop.param_arrays:
            if a.name == scop.returns:
                continue      # the returned value: bbmm's own one-element array
            name = c.get(a.name, a.name)
            self.arrays[name] = ArraySpec(name, a.ctype, np.dtype(DTYPES[a.ctype]),
                                          tuple(c_text(d, c) for d in a.dims),
                                          a.name in read, a.name in written, a.name)
        defaults = dict(scop.param_defaults)
        types = dict(zip(scop.int_params, scop.int_param_types or
                         ("int",) * len(scop.int_params)))
        self.parameters: dict[str, ParamSpec] = {}
        for p in scop.int_params:
            name = c.get(p, p)
            self.parameters[name] = ParamSpec(name, types.get(p, "int"), True,
                                              defaults.get(p), p)
        for p, ctype in scop.float_params:
            name = c.get(p, p)
            self.parameters[name] = ParamSpec(name, ctype, False, None, p)
        self.returns: str | None = (next(a.ctype for a in scop.arrays if a.name == scop.returns)
                                    if scop.returns else None)
        self.parallel: list[tuple[str, ...]] = [
            tuple(c.get(i, i) for i in nc.boxes.tiling.band) for nc in compiled.nests]
        """The parallel band of each loop nest (C iterator names; empty: one work-item)."""
        self.serial: tuple[str, ...] = tuple(
            c.get(it, it) for it in (scop.loop(i).iterator for i in compiled.plan.serial_loops))
        """The serial loops, run on the host."""

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the imported driver (an MPI run hands the program to its
        ranks; each imports the driver again from the cache)."""
        return {**self.__dict__, "_module": None}

    # {{{ description

    def __str__(self) -> str:
        lines = [f"{self.function} ({self.path})"]
        lines.append("  parameters: " + (", ".join(map(str, self.parameters.values()))
                                         or "none"))
        lines.append("  arrays:")
        lines += [f"    {a}" for a in self.arrays.values()]
        if self.returns:
            lines.append(f"  returns: {self.returns} (RunStats.returned)")
        for i, band in enumerate(self.parallel):
            lines.append(f"  nest {i}: parallel loops "
                         f"{', '.join(band) if band else 'none (one work-item)'}")
        lines.append(f"  serial loops (host): {', '.join(self.serial) or 'none'}")
        args = [p for p, s in self.parameters.items() if s.default is None] + list(self.arrays)
        lines.append(f"  call: prog({', '.join(f'{a}=...' for a in args)}, devices=N)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<bbmm.Program {self.function} of {self.path}>"

    # }}}

    @property
    def module(self) -> Any:
        """The generated host driver (imported on first use, cached by content)."""
        if self._module is None:
            from bbmm.codegen.compile import load_driver
            self._module = load_driver(self.compiled)
        return self._module

    def __call__(self, **kwargs: Any) -> RunStats:
        """``prog(n=..., path=A, devices=2, device_mem="2GiB", tile=None)``: the kernel's
        parameters and arrays by their C names, and the run's options (:data:`OPTIONS`,
        see :meth:`run`)."""
        clash = sorted(set(OPTIONS) & (set(self.parameters) | set(self.arrays)))
        if clash:
            raise UsageError(f"{self.function} has an argument named {', '.join(clash)}, "
                             f"which is also an option of the run: pass the kernel's "
                             f"arguments as prog.run({{...}}, options...)")
        options = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
        return self.run(kwargs, **options)

    def run(self, arguments: Mapping[str, Any], *, devices: int | Sequence[Any] | None = None,
            device_mem: int | str | None = None, tile: int | None = None,
            mode: str = "disjoint", coherence: str = "exact", fuse: float | None = None,
            reuse: bool = True, replay: bool | None = None, progress: bool = False,
            profile: str | os.PathLike | None = None, platform: str | int | None = None,
            device_kind: str = "auto", tune: Mapping[str, Any] | None = None) -> RunStats:
        """Run the kernel in place on ``arguments`` (C name -> value).

        :arg devices: a number of logical devices to make for this run (None: every GPU,
            or one CPU device), or devices made before (:func:`devices`), reused.
        :arg device_mem: memory cap per logical device (``"2GiB"``, bytes) for devices
            made here; devices made before keep their own caps.
        :arg tile: tile size of the outermost parallel loop (None: as ``bbmm run``).
        :arg mode, coherence, fuse, reuse, replay: as ``bbmm run``'s ``--mode``,
            ``--coherence``, ``--fuse``, ``--no-reuse``, ``--no-replay``.
        :arg progress: show the progress bar on stderr.
        :arg profile: write the devices' timeline there (devices made here are then made
            with profiling; devices passed in must have been made with ``profile=True``).
        :arg platform, device_kind: which OpenCL devices to make (``bbmm run``'s
            ``--platform``, ``--device-kind``).
        :arg tune: tuning settings for this run, ``{"coarsen": 2, "stage": "off"}``, as
            ``bbmm run --tune NAME=VALUE`` (:data:`bbmm.settings.TUNABLE`); they hold for
            this run only, over the ``$BBMM_*`` variables, which are read once, here
            (:class:`bbmm.config.RuntimeConfig`); devices passed in keep their own
            ``side``.
        :returns: :class:`RunStats`.
        :raises UsageError: before anything runs, for a missing, unknown or mismatched
            argument.
        """
        from .config import RuntimeConfig
        from .run import MODES, COHERENCE

        params, scalars, given = self._check(arguments)
        RuntimeConfig.from_env(tune=dict(tune) if tune is not None else None)  # refused now
        if mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if coherence not in COHERENCE:
            raise UsageError(f"coherence must be one of {', '.join(COHERENCE)}, "
                             f"got {coherence!r}")
        if tile is not None and (isinstance(tile, bool) or not isinstance(tile, (int, np.integer))
                                 or tile < 1):
            raise UsageError(f"tile must be a positive int or None, got {tile!r}")
        if fuse is not None and not (isinstance(fuse, (int, float)) and 0 <= fuse < 1):
            raise UsageError(f"fuse must be a fraction in [0, 1), got {fuse!r}")
        specs = self.arrays.values()
        res = self.execute(params, scalars, {s.model: given[s.name] for s in specs},
                           outputs={s.model: given[s.name] for s in specs if s.written},
                           devices=devices, device_mem=device_mem, platform=platform,
                           device_kind=device_kind, tile=None if tile is None else int(tile),
                           mode=mode, coherence=coherence, fuse=fuse, reuse=reuse,
                           replay=replay, progress=progress,
                           profile=None if profile is None else os.fspath(profile), tune=tune)
        return self.stats(res)

    def execute(self, params: Mapping[str, int], scalars: Mapping[str, float],
                inputs: Mapping[str, np.ndarray], *,
                outputs: Mapping[str, np.ndarray] | None = None,
                devices: int | Sequence[Any] | None = None, device_mem: int | str | None = None,
                platform: str | int | None = None, device_kind: str = "auto",
                tile: int | None = None, mode: str = "disjoint", coherence: str = "exact",
                fuse: float | None = None, reuse: bool = True, replay: bool | None = None,
                progress: bool | None = False, profile: str | None = None,
                tune: Mapping[str, Any] | Sequence[str] | None = None,
                config: Any = None) -> RunResult:
        """The run under :meth:`run` and ``bbmm run``: the arguments already taken apart
        and checked, by bbmm's model names (``params``, ``scalars``: as
        :func:`bbmm.run.parse_params` gives them; ``inputs``: the initial value of each
        array, copied into bbmm's page-locked host arrays; ``outputs``: the arrays that
        get the final values copied back before the devices made here are closed).

        The options are :meth:`run`'s, unchecked (``tile`` below 1 is a
        :class:`UsageError` of the run); ``tune`` (``{"coarsen": 2}`` or
        ``["coarsen=2"]``) holds for this run only; ``config``: the run's
        :class:`bbmm.config.RuntimeConfig` already built (``bbmm run``'s), instead of the
        environment and ``tune``. Returns the run's
        :class:`bbmm.run.RunResult`, whose ``arrays`` are the host arrays with the final
        values, for ``--check`` and the report (:meth:`stats`)."""
        from .config import RuntimeConfig
        from .run import execute, host_arrays

        module = self.module
        if config is None:
            config = RuntimeConfig.from_env(
                tune=dict(tune) if isinstance(tune, Mapping) else tune)
        devs = _resolve_devices(devices, device_mem, platform, device_kind,
                                profile is not None, config.side)
        made = not isinstance(devices, (list, tuple))  # made here: closed after the run
        done = False
        try:
            arrays = host_arrays(module, params, devs, inputs)
            res = execute(module, devs, dict(params), dict(scalars), arrays, tile=tile,
                          mode=mode, reuse=reuse, coherence=coherence, progress=progress,
                          replay=replay, fuse=fuse, profile=profile, config=config)
            for name, out in (outputs or {}).items():
                np.copyto(out, arrays[name], casting="no")
            done = True
        finally:
            if made:
                for d in devs:
                    try:
                        d.close()
                    except Exception:  # noqa: BLE001 - the run's own error comes first
                        if done:
                            raise
        return res

    def stats(self, res: RunResult) -> RunStats:
        """The report of a run (:meth:`execute`'s result, checked or not): ``bbmm run
        --json``'s document and the returned value."""
        ret = self.compiled.scop.returns
        returned = res.arrays[ret].reshape(-1)[0].item() if ret and ret in res.arrays else None
        return RunStats(res.as_json(self.function), returned)

    # {{{ checks

    def _check(self, arguments: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, float],
                                                            dict[str, np.ndarray]]:
        """``(params, scalars)`` by model name and the caller's arrays by C name, each
        checked (:class:`UsageError` at the first problem)."""
        from .reference.calls import _int_ctype, _int_value
        from .run import array_shapes

        known = set(self.parameters) | set(self.arrays)
        unknown = [k for k in arguments if k not in known]
        if unknown:
            raise UsageError(
                f"{self.function} has no argument {', '.join(map(repr, unknown))} (its "
                f"parameters: {', '.join(self.parameters) or 'none'}; its arrays: "
                f"{', '.join(self.arrays) or 'none'}; options: {', '.join(OPTIONS)})")
        params: dict[str, int] = {}
        scalars: dict[str, float] = {}
        missing = []
        for name, p in self.parameters.items():
            if name not in arguments:
                if p.default is not None:
                    params[p.model] = p.default
                else:
                    missing.append(f"{name} ({p.ctype})")
                continue
            v = arguments[name]
            if p.integer:
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise UsageError(f"parameter {name} ({p.ctype}) must be an int, "
                                     f"got {v!r} ({type(v).__name__})")
                try:
                    ct = _int_ctype(p.ctype)
                except Exception:  # noqa: BLE001 - an unusual spelling: no range check
                    params[p.model] = int(v)
                else:
                    params[p.model] = _int_value(name, v, ct)
            else:
                if isinstance(v, (bool, np.bool_)) or not isinstance(
                        v, (int, float, np.integer, np.floating)):
                    raise UsageError(f"parameter {name} ({p.ctype}) must be a number, "
                                     f"got {v!r} ({type(v).__name__})")
                scalars[p.model] = float(v)
        missing += [f"{a} (array)" for a in self.arrays if a not in arguments]
        if missing:
            raise UsageError(f"{self.function}: missing {', '.join(missing)}")
        shapes = array_shapes(self.module, params)   # UsageError where one would be empty
        given: dict[str, np.ndarray] = {}
        for name, spec in self.arrays.items():
            given[name] = _check_array(spec, arguments[name], shapes[spec.model],
                                       self._fmt(params), flat=spec.model in self._flat)
        return params, scalars, given

    @property
    def _flat(self) -> frozenset[str]:
        s = self.compiled.scop
        return frozenset(s.pointers) | frozenset(a for a, _ in s.rows)

    def _fmt(self, params: Mapping[str, int]) -> str:
        return ", ".join(f"{self._c.get(k, k)}={v}" for k, v in params.items()) or \
            "no parameters"

    # }}}


def _check_array(spec: ArraySpec, a: Any, shape: tuple[int, ...], at: str, flat: bool
                 ) -> np.ndarray:
    name = spec.name
    kind = f"{spec.ctype} {name}[{']['.join(spec.dims)}]"
    mod = type(a).__module__ or ""
    if mod.startswith("pyopencl"):
        raise UsageError(
            f"array {name}: a {mod}.{type(a).__name__} (device memory) is not taken; bbmm "
            f"manages the devices' memory itself and runs on host arrays: pass "
            f"{name}.get() (a numpy copy) and copy the result back with {name}.set(...)")
    if not isinstance(a, np.ndarray):
        raise UsageError(f"array {name} ({kind}) must be a numpy array, got "
                         f"{type(a).__name__}")
    if a.dtype != spec.dtype:
        raise UsageError(f"array {name} ({kind}) must have dtype {spec.dtype}, got {a.dtype} "
                         f"(bbmm does not convert: pass {name}.astype(np.{spec.dtype}) and "
                         f"copy the result back)")
    if a.shape != shape:
        if flat and a.ndim == 1 and a.size == int(np.prod(shape)):
            a = a.reshape(shape)      # a pointer or flat array: its elements in C order
        else:
            raise UsageError(f"array {name} ({kind}) must have shape {shape} for {at}, "
                             f"got {a.shape}")
    if not a.flags.c_contiguous:
        raise UsageError(f"array {name} ({kind}) must be C-contiguous (np.ascontiguousarray "
                         f"makes a copy that is)")
    if spec.written and not a.flags.writeable:
        raise UsageError(f"array {name} ({kind}) is written by the kernel but is read-only")
    return a


def _resolve_devices(devices: Any, device_mem: Any, platform: Any, kind: str,
                     profile: bool, side: bool = True) -> list[Any]:
    from .devices.base import Device

    if devices is None or (isinstance(devices, (int, np.integer))
                           and not isinstance(devices, bool)):
        return make_devices(None if devices is None else int(devices), device_mem=device_mem,
                            platform=platform, device_kind=kind, profile=profile, side=side)
    if isinstance(devices, (list, tuple)) and devices and \
            all(isinstance(d, Device) for d in devices):
        if device_mem is not None:
            raise UsageError("device_mem applies to devices bbmm makes for the run; devices "
                             "passed in keep their caps (bbmm.devices(N, device_mem=...))")
        if platform is not None or kind != "auto":
            raise UsageError("platform and device_kind apply to devices bbmm makes for the "
                             "run, not to devices passed in")
        return list(devices)
    raise UsageError(f"devices must be a number of devices, None, or a list from "
                     f"bbmm.devices(...), got {devices!r}")


def compile(path: str | os.PathLike | None = None, function: str | None = None,
            defines: Mapping[str, Any] | Sequence[str] | None = None,
            include_dirs: Sequence[str | os.PathLike] = (), *, example: str | None = None,
            split_all: bool = False, schedule: str = "auto",
            reassociate: bool = False, options: Any = None) -> Program:
    """Compile the C kernel ``function`` of ``path`` (default: as ``bbmm run`` picks it)
    into a :class:`Program`. ``example``: one of the example kernels shipped with bbmm
    instead of ``path`` (``example="floyd"``, as ``bbmm run --example floyd``;
    :func:`bbmm.example.names` lists them). ``defines``: macros, ``{"N": 1024}`` or
    ``["N=1024"]``; ``include_dirs``: the ``-I`` folders; ``schedule``: ``"as-written"``,
    ``"isl"`` or ``"auto"``, as ``bbmm run --schedule``; ``reassociate``: floating-point
    sums into scalars may run as partial sums in parallel, in another order of additions,
    as ``bbmm run --reassociate``. Compiled drivers are cached by content (the schedule
    taken and ``reassociate`` included), like ``bbmm run``'s; a kernel compiled again in
    the same process (the same text after the preprocessor, function and options) comes
    from memory, its warnings given again. ``options``: the compiler's
    settings (:class:`bbmm.codegen.compile.CompileOptions`; None: the environment's)."""
    from bbmm.codegen.compile import CompileOptions, compile_program

    if example is not None:
        if path is not None:
            raise UsageError(f"example={example!r} and the file {os.fspath(path)}: give one "
                             f"of them")
        from .example import path as example_path
        p = os.fspath(example_path(example, option="example"))
    elif path is None:
        raise UsageError("bbmm.compile needs a C file or example=NAME (bbmm examples lists "
                         "the examples)")
    else:
        p = os.fspath(path)
    if not os.path.exists(p):
        raise UsageError(f"{p}: no such file")
    if os.path.isdir(p):
        raise UsageError(f"{p}: is a directory, not a C file")
    defs: dict[str, str] = {}
    if isinstance(defines, Mapping):
        for k, v in defines.items():
            defs[str(k)] = "1" if v is None or v is True else str(v)
    else:
        for d in defines or ():
            k, _, v = str(d).partition("=")
            defs[k] = v or "1"
    dirs = [os.fspath(d) for d in include_dirs]
    prog = compile_program(p, function=function, defines=defs, include_dirs=dirs,
                           options=CompileOptions.from_env() if options is None else options,
                           split_all=split_all,
                           schedule=schedule, reassociate=reassociate)
    return Program(prog, defs, dirs)
