"""isl's schedule as the loop order (codegen/schedule.py): taken only where it is legal
and more parallel, the loops as written kept otherwise, and any other order refused."""
from __future__ import annotations

import warnings

import islpy as isl
import pytest

import bbmm
from bbmm.diagnostic import BBMMWarning, UsageError
from bbmm.codegen.compile import compile_program
from bbmm.codegen.deps import dependences, plan
from bbmm.codegen.frontend import parse_file
from bbmm.codegen.schedule import NotRescheduled, apply_schedule, reschedule
from support.paths import KERNELS

GS = KERNELS / "sched" / "gauss_seidel.c"


def quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile_program(*args, **kw)


@pytest.mark.parametrize("name", ["floyd.c", "heat3d.c"])
def test_parallel_loops_as_written_stay(name):
    """A kernel with an outer parallel loop as written compiles to the same program
    under ``auto`` as under ``as-written``."""
    auto, written = quiet(KERNELS / name), quiet(KERNELS / name, schedule="as-written")
    assert auto.schedule == written.schedule == "as-written"
    assert auto.kernel_source == written.kernel_source
    assert auto.host_source == written.host_source


def test_as_written_keeps_the_loops():
    with pytest.warns(BBMMWarning, match="no loop of relax is parallel"):
        prog = compile_program(GS, schedule="as-written")
    assert prog.schedule == "as-written" and prog.rescheduled is None
    assert [lp.iterator for lp in prog.scop.loops()] == ["s", "r", "c"]
    assert [n.band for n in prog.plan.nests] == [()]


def test_auto_takes_a_wavefront():
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # no "no loop is parallel" warning
        prog = compile_program(GS)
    assert prog.schedule == "isl"
    (nest,) = prog.plan.nests
    assert len(nest.band) == 2 and len(nest.host_loops) == 1
    # the schedule is a wavefront: the serial host loop moves along 2s + r + c; the
    # band's first (tiled, distributed) loop is the row r, not the time step s
    assert prog.rescheduled.lines() == ["S0[s, r, c] -> [2s + r + c, r, s]"]
    assert prog.nests[0].boxes.tiling.loose_divs


def test_a_scheduler_past_its_quota_keeps_the_loops_as_written(monkeypatch):
    """isl's scheduler is stopped after ``SCHEDULE_OPERATIONS`` (here: any at all), and
    the program then runs its loops as written, as where isl finds no schedule, instead
    of waiting for the scheduler."""
    from collections import OrderedDict

    from bbmm.codegen import compile as compiling, schedule
    monkeypatch.setattr(schedule, "SCHEDULE_OPERATIONS", 1)
    monkeypatch.setattr(compiling, "_COMPILED", OrderedDict())  # compiled afresh
    prog = quiet(GS)
    assert prog.schedule == "as-written" and prog.rescheduled is None
    assert prog.kernel_source == quiet(GS, schedule="as-written").kernel_source


def test_wavefront_tiles_rows_not_time_steps():
    """isl's own band is [s, r] (tiles of time steps: few, and boxes piecewise over the
    wavefront); the band is reordered to [r, s], which is as legal, and the tiled loop
    then runs over rows."""
    from bbmm.codegen.schedule import compute_schedule
    scop = parse_file(GS)
    deps = dependences(scop)
    tiled = {}
    for first in (False, True):
        res = apply_schedule(scop, deps, compute_schedule(scop, deps, data_first=first))
        (nest,) = plan(res.scop).nests
        assert len(nest.band) == 2
        tiled[first] = res.scop.loop(nest.band[0])
    assert "steps" in tiled[False].upper, tiled[False].text
    assert "steps" not in tiled[True].upper and "m" in tiled[True].upper, tiled[True].text


def test_schedule_is_part_of_the_driver_key():
    """The driver is cached by its source: the two orders give two drivers."""
    isl_ = quiet(GS, schedule="isl")
    written = quiet(GS, schedule="as-written")
    assert "SCHEDULE = 'isl'" in isl_.host_source
    assert "SCHEDULE = 'as-written'" in written.host_source
    assert isl_.host_source != written.host_source


def test_bad_schedule_value():
    with pytest.raises(UsageError, match="schedule must be one of as-written, isl, auto"):
        compile_program(GS, schedule="pluto")


def test_api_takes_schedule():
    prog = bbmm.compile(GS, schedule="isl")
    assert prog.compiled.schedule == "isl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bbmm.compile(GS, schedule="as-written").compiled.schedule == "as-written"


@pytest.mark.parametrize("order", [
    "{ S0[s, r, c] -> [r, s, c] }",          # rows before time steps
    "{ S0[s, r, c] -> [-s, r, c] }",         # time steps backwards
    "{ S0[s, r, c] -> [s, r, -c] }",         # each row right to left
    "{ S0[s, r, c] -> [c, s, r] }",          # columns before time steps
])
def test_illegal_order_is_refused(order):
    """An order that breaks a dependence never becomes a program."""
    scop = parse_file(GS)
    deps = dependences(scop)
    sched = isl.UnionMap(f"[steps, m] -> {order}").intersect_domain(scop.domain())
    with pytest.raises(NotRescheduled, match="breaks a dependence"):
        apply_schedule(scop, deps, sched)


def test_legal_order_is_the_same_program():
    """The identity order gives back the loops as written, under new names."""
    scop = parse_file(GS)
    deps = dependences(scop)
    sched = isl.UnionMap("[steps, m] -> { S0[s, r, c] -> [s, r, c] }") \
        .intersect_domain(scop.domain())
    new = apply_schedule(scop, deps, sched).scop
    assert [lp.iterator for lp in new.loops()] == ["c0", "c1", "c2"]
    assert not plan(new).parallel
    st = new.statements[0]
    assert [str(a.index[0]) + "," + str(a.index[1]) for a in st.accesses][:2] == \
        ["c1 - 1,c2", "c1,c2 - 1"]


def test_iterator_names_avoid_the_kernels(tmp_path):
    """A kernel that names its size c0 gets another first iterator (c0_)."""
    f = tmp_path / "clash.c"
    f.write_text(GS.read_text().replace("int m", "int c0").replace("m - 1", "c0 - 1")
                 .replace("U[m][m]", "U[c0][c0]"))
    prog = quiet(f)
    assert prog.schedule == "isl"
    its = [lp.iterator for lp in prog.scop.loops()]
    assert its[0] == "c0_" and "c0" not in its, its
    assert "c0" in prog.scop.int_params


def test_cholesky_rows_parallel():
    prog = quiet(KERNELS / "sched" / "cholesky_like.c")
    assert prog.schedule == "isl"
    assert sum(len(n.band) for n in prog.plan.nests) >= 2
    assert all(len(n.host_loops) <= 1 for n in prog.plan.nests)
