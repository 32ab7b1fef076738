"""The serial loop runs with the objects made before it out of the garbage collector's
reach (bbmm.run.frozen_heap): a full collection walks them all, and in a run over
processes one process's pause stalls every other."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from bbmm.codegen.compile import compile_program, load_driver
from bbmm.devices import DryDevice
import bbmm.run as run_module
from bbmm.run import execute, frozen_heap
from support.paths import POLYBENCH


def test_objects_made_before_are_frozen_inside_and_thawed_after():
    assert gc.get_freeze_count() == 0
    before = [object() for _ in range(3)]
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen >= len(gc.get_objects()) // 2  # most of the heap, not a few objects
        garbage = [[]]
        garbage[0].append(garbage)  # a cycle made in the loop is collected as ever
        del garbage
        assert gc.collect() >= 2
        # a collection leaves the frozen objects frozen (a frozen object whose last
        # reference goes, a finished thread's frame, leaves the count as it is freed)
        assert frozen >= gc.get_freeze_count() >= frozen - 1000
    assert gc.get_freeze_count() == 0
    assert before


def test_collections_in_the_loop_are_host_steps_of_a_trace(monkeypatch):
    """With a log (a profiled run's host steps), each collection in the loop of at least
    COLLECT_LOG_S is logged with its generation and times, and only inside the loop."""
    monkeypatch.setattr(run_module, "COLLECT_LOG_S", 0.0)
    log = []
    gc.collect()
    with frozen_heap(log):
        gc.collect(0)
        gc.collect()
    gc.collect()  # after the loop: not logged
    assert [name.split(" at ")[0] for name, _, _ in log] == ["collect gen 0", "collect gen 2"]
    # where the collection began: here, the call that asked for it
    assert all(" at test_frozen_heap.py:" in name and name.endswith(
        " test_collections_in_the_loop_are_host_steps_of_a_trace") for name, _, _ in log)
    assert all(0 <= end - start < 5 for _, start, end in log)
    assert log[0][2] <= log[1][1]
    gc.freeze()  # a caller's own freeze: the collections are still logged
    try:
        with frozen_heap(log):
            gc.collect(1)
    finally:
        gc.unfreeze()
    assert log[-1][0].startswith("collect gen 1 at ") and len(log) == 3


def test_a_caller_that_froze_objects_keeps_them_frozen():
    gc.freeze()
    try:
        held = gc.get_freeze_count()
        with frozen_heap():
            assert gc.get_freeze_count() == held
        assert gc.get_freeze_count() == held
    finally:
        gc.unfreeze()


def test_an_error_in_the_loop_thaws_the_heap():
    before = gc.get_threshold()
    try:
        with frozen_heap():
            raise KeyError("stop")
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_the_young_passes_are_rarer_in_the_loop_only():
    """Inside, the collector's first threshold is LOOP_YOUNG (its others as they were);
    after, as before; a threshold the caller set higher, or 0 (collections off), is
    left alone."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with frozen_heap():
            assert gc.get_threshold() == (run_module.LOOP_YOUNG, 10, 10)
            assert run_module.LOOP_YOUNG > 700
        assert gc.get_threshold() == (700, 10, 10)
        for mine in ((10 * run_module.LOOP_YOUNG, 5, 5), (0, 10, 10)):
            gc.set_threshold(*mine)
            with frozen_heap():
                assert gc.get_threshold() == mine
            assert gc.get_threshold() == mine
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("over", ["devices", "processes"])
def test_a_run_loops_with_the_heap_frozen(monkeypatch, over):
    """``bbmm run`` (``run.execute``) and a rank of a run over processes
    (``mpirun.execute_mpi``, its peers stood in) call the driver's loop frozen."""
    import bench_host as bh  # scripts/ is on the import path (pyproject.toml)
    from bbmm.mpirun import execute_mpi

    module = load_driver(compile_program(str(POLYBENCH / "floyd.c")))
    seen = []
    run = module.run

    def counting(rt, *args):
        seen.append(gc.get_freeze_count())
        return run(rt, *args)

    monkeypatch.setattr(module, "run", counting)
    arrays = {"path": np.zeros((16, 16), np.float32)}
    if over == "devices":
        execute(module, [DryDevice(0), DryDevice(1)], {"n": 16}, {}, arrays, progress=False)
    else:
        execute_mpi(module, [DryDevice(0)], {"n": 16}, {}, arrays, bh.LoopbackComm(0, 2, 1),
                    gather=False, progress=False)
    assert seen and seen[0] > 0
    assert gc.get_freeze_count() == 0
