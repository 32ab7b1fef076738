"""Lean kernels (:func:`bbmm.hostlib._layout`), on PoCL: a kernel specialized for the slot
of every access takes only the buffer, base and strides of the slots its accesses use,
so that NVIDIA's driver, which copies every argument at each enqueue, has fewer to
copy. A kernel whose accesses are split, or a program generated with every access
split, takes every argument; a lean launch gives the same results as a full one."""
from __future__ import annotations

import numpy as np
import pytest

import bbmm.hostlib as hostlib
from bbmm.config import KernelOptions, RuntimeConfig
from bbmm.run import execute, host_arrays
from bbmm.codegen.compile import compile_program, load_driver
from support.paths import POLYBENCH

PROGRAMS = {"heat2d": {"n": 40, "tsteps": 3}, "lu": {"n": 40}, "floyd": {"n": 36},
            "fdtd2d": {"nx": 30, "ny": 26, "tmax": 3}, "heat3d": {"n": 14, "tsteps": 2}}


def _nests(module):
    """``(kernel name, NEST<i>_LAUNCH)`` of each nest of a driver."""
    i = 0
    while hasattr(module, f"NEST{i}_LAUNCH"):
        yield f"{module.FUNCTION}_nest{i}", getattr(module, f"NEST{i}_LAUNCH")
        i += 1


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_a_kernel_with_every_access_in_one_slot_takes_three_arguments_a_slot(make, prog):
    """Built for every access in slot 0 (the variant prebuild guesses), each array takes
    its buffer, base and strides once; built full, every slot with its bounds and each
    access's slot: heat2d's 69 arguments become 13."""
    module = load_driver(compile_program(POLYBENCH / f"{prog}.c"))
    dev, = make(1)
    o = KernelOptions(prebuild=False)
    for name, arrays in _nests(module):
        sels = tuple(tuple(0 for _ in e[3]) for e in arrays)
        lean = hostlib._kernel(dev, module.KERNELS, name, arrays, sels, True, (1, 1), None, o)
        full = hostlib._kernel(dev, module.KERNELS, name, arrays, (), True, (1, 1), None,
                               KernelOptions(prebuild=False, specialize=False))
        per_slot = sum(2 + (ndim - 1) for _, _, ndim, _ in arrays)
        everything = sum(slots * (2 + (ndim - 1) + 2 * ndim) + len(ids)
                         for _, slots, ndim, ids in arrays)
        assert full.num_args - lean.num_args == everything - per_slot, name
        if prog == "heat2d":
            assert (lean.num_args, full.num_args) == (13, 69)


def test_a_program_with_every_access_split_is_never_built_lean():
    """--split-all's kernels test each slot's bounds at every access: they take every
    argument whatever the slots of the accesses."""
    split = compile_program(POLYBENCH / "heat2d.c", split_all=True)
    plain = compile_program(POLYBENCH / "heat2d.c")
    assert hostlib._lean(plain.kernel_source, None)
    assert not hostlib._lean(split.kernel_source, None)
    assert not hostlib._lean(plain.kernel_source, KernelOptions(specialize=False))
    module = load_driver(split)
    name, arrays = next(_nests(module))
    sels = tuple(tuple(0 for _ in e[3]) for e in arrays)
    assert hostlib._layout(module.KERNELS, arrays, sels, KernelOptions()) is None


def _run(module, devs, params, config, seed=3):
    arrays = host_arrays(module, params, devs)
    rng = np.random.default_rng(seed)
    for a in arrays.values():
        a[...] = rng.random(a.shape) + 0.5
    res = execute(module, devs, params, {}, arrays, progress=False, config=config)
    return {k: v.copy() for k, v in res.arrays.items()}


@pytest.mark.parametrize("fuse", [1 / 64, 0.0])
@pytest.mark.parametrize("prog", ["heat2d", "lu", "fdtd2d"])
def test_lean_launches_give_the_full_launches_results(make, monkeypatch, prog, fuse):
    """Over two devices the specialized (lean) kernels give bit for bit what the
    unspecialized ones give; with boxes never fused into their hull (``fuse`` 0) heat2d's
    halo accesses are split, so that its launches take every argument of A and only
    B's slot of B."""
    module = load_driver(compile_program(POLYBENCH / f"{prog}.c"))
    params = PROGRAMS[prog]
    layouts = set()
    real = hostlib._bare

    def bare(tb, arrays, source, o):
        got = real(tb, arrays, source, o)
        layouts.add((len(got), len(arrays)))
        return got

    monkeypatch.setattr(hostlib, "_bare", bare)
    got = {}
    for specialize in (False, True):
        config = RuntimeConfig(fuse=fuse, kernels=KernelOptions(prebuild=False,
                                                                specialize=specialize))
        got[specialize] = _run(module, make(2), params, config)
    for k in got[False]:
        np.testing.assert_array_equal(got[True][k], got[False][k], err_msg=k)
    if prog == "heat2d":
        assert (1, 2) in layouts if fuse == 0 else (2, 2) in layouts
