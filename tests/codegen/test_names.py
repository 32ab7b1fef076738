"""C names that isl, the Python driver or OpenCL C cannot take (codegen/names.py): renamed
inside bbmm, the C names kept wherever the user sees them."""
from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from pycparser import c_parser

from bbmm.diagnostic import UnsupportedProgramError, UsageError
from bbmm.run import parse_params
from bbmm.codegen.compile import compile_program
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.names import c_text, rename_unsafe, unsafe

# {{{ which names


@pytest.mark.parametrize("name,array,why", [
    ("min", False, "isl"), ("floor", True, "isl"), ("S0", True, "statement names"),
    ("S12", False, "statement names"), ("half", True, "OpenCL"), ("local", True, "OpenCL"),
    ("get_global_id", True, "OpenCL"), ("float4", False, "OpenCL"),
    ("lambda", False, "Python keyword"), ("match", False, "Python keyword"),
    ("iter", False, "Python built-in"), ("np", False, "host driver"),
    ("nest3_tile", False, "host driver"), ("NEST0_FRESH", False, "host driver"),
    ("_bbmm_x", False, "host driver"), ("C_NAMES", False, "host driver"),
    ("TileSpec", False, "host driver"),
])
def test_unsafe_names_say_why(name, array, why):
    assert why in unsafe(name, array)


@pytest.mark.parametrize("name,array", [
    ("iter", True), ("lambda", True), ("np", True),      # arrays are no Python variables
    ("n", False), ("A", True), ("S", False), ("S0x", True), ("lb", False), ("i_neg", False),
    ("slot", True),
])
def test_safe_names_stay(name, array):
    assert unsafe(name, array) is None

# }}}

# {{{ the renaming


def _func(src: str):
    return c_parser.CParser().parse(src).ext[0]


def test_rename_unsafe_renames_declarations_and_uses_only():
    f = _func("void f(int len, float lambda, float max[len]) {"
              " for (int iter = 0; iter < len; iter++) max[iter] = sqrtf(lambda) + len_; }")
    g, names = rename_unsafe(f, {"len", "lambda", "max", "iter", "sqrtf", "len_"})
    assert names == {"len__": "len", "lambda_": "lambda", "max_": "max", "iter_": "iter"}
    from pycparser import c_generator
    text = c_generator.CGenerator().visit(g)
    assert "float max_[len__]" in text and "max_[iter_] = sqrtf(lambda_) + len_;" in text
    # the original tree is left as it was
    assert "float max[len]" in c_generator.CGenerator().visit(f)


def test_model_names_of_the_drivers_name_forms_end():
    """``NEST1_FRESH_`` still has the form of the driver's ``NEST1_*``: ``c_NEST1_FRESH_``
    (found once, in a random program, as an endless search for a free name)."""
    f = _func("void f(int NEST1_FRESH, float A[NEST1_FRESH]) { A[0] = 0; }")
    assert rename_unsafe(f, {"NEST1_FRESH", "A"})[1] == {"c_NEST1_FRESH_": "NEST1_FRESH"}


def test_rename_unsafe_without_unsafe_names_returns_the_same_tree():
    f = _func("void f(int n, float A[n]) { for (int i = 0; i < n; i++) A[i] = 0; }")
    assert rename_unsafe(f, {"n", "A", "i"}) == (f, {})


@given(st.lists(st.sampled_from(["iter", "len", "min", "S1", "half", "np", "x", "iter2",
                                 "min_", "n"]), min_size=1, max_size=6))
def test_c_text_restores_every_c_name(words):
    model = {"iter_": "iter", "min__": "min_"}       # min_ taken by the C source itself
    inverse = {c: m for m, c in model.items()}
    text = " + ".join(inverse.get(w, w) for w in words)
    assert c_text(text, model) == " + ".join(words)


def test_the_model_keeps_model_names_and_the_c_names():
    s = parse_source("void f(int len, int S1, float lambda, float half[len], float S0[len]) {"
                     " for (int min = 0; min < len; min++)"
                     " S0[min] = lambda * half[min] + S1; }", "k.c")
    assert s.int_params == ("len_", "S1_") and s.float_params == (("lambda_", "float"),)
    assert [a.name for a in s.arrays] == ["half_", "S0_"]
    assert s.loops()[0].iterator == "min_"
    assert {s.c_name(n) for n in s.args} == {"len", "S1", "lambda", "half", "S0"}
    assert s.c_name("n") == "n"


def test_errors_and_warnings_speak_of_the_c_names():
    with pytest.raises(UnsupportedProgramError) as e:
        parse_source("void f(int len, float max[len][len]) {\n"
                     " for (int min = 0; min < len; min++)\n"
                     "  for (int iter = 0; iter < len; iter++) max[min * iter][iter] = 1; }",
                     "e.c")
    assert str(e.value) == ("e.c:3:46: non-affine subscript 'min * iter' in "
                            "'max[min * iter][iter]' (product of two variables)")
    with pytest.raises(UnsupportedProgramError, match=r"e.c:2:2: write to parameter 'lambda'"):
        parse_source("void f(int len, float max[len], float lambda) {\n lambda = 2;"
                     " for (int i = 0; i < len; i++) max[i] = lambda; }", "e.c")


def test_out_of_bounds_warning_speaks_of_the_c_names(tmp_path):
    p = tmp_path / "w.c"
    p.write_text("void w(int len, float max[len]) {\n"
                 "  for (int iter = 0; iter < len; iter++) max[iter + 1] = 0; }\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prog = compile_program(p)
    msgs = [str(w.message) for w in caught]
    assert any("max[iter + 1] may be out of the bounds of max" in m for m in msgs), msgs
    assert "renamed: len -> len_ (a Python built-in), max -> max_ (a word of isl's " \
           "notation), iter -> iter_ (a Python built-in)" in prog.summary()
    compile(prog.host_source, "w_host.py", "exec")     # the driver is valid Python

# }}}

# {{{ parameters by their C names


def test_parse_params_takes_and_names_c_names():
    c = {"iter_": "iter", "lambda_": "lambda"}
    ints, floats = parse_params(["iter=4", "lambda=0.5", "n=3"], ("iter_", "n"),
                                (("lambda_", "float"),), None, c)
    assert ints == {"iter_": 4, "n": 3} and floats == {"lambda_": 0.5}
    with pytest.raises(UsageError, match=r"^missing --param iter=VALUE \(the kernel's integer "
                                         r"parameters: iter, n\)$"):
        parse_params(["n=3"], ("iter_", "n"), (), None, c)
    with pytest.raises(UsageError, match=r"no parameter 'iter_' \(its parameters: iter, n, "
                                         r"lambda\)"):
        parse_params(["iter_=3"], ("iter_", "n"), (("lambda_", "float"),), None, c)
    # the sizes main passes are keyed by model names, as the model is
    assert parse_params(["n=1"], ("iter_", "n"), (), {"iter_": 9}, c)[0] == {"iter_": 9, "n": 1}

# }}}


@settings(deadline=None, max_examples=15)
@given(st.permutations(["iter", "lambda", "min", "S1", "half", "np", "run", "lb", "slot",
                        "get_global_id", "nest0_tile", "float2", "NEST1_FRESH", "rt",
                        "spec", "tile", "TileSpec"]))
def test_any_awkward_names_give_valid_python_and_opencl_names(names):
    """A heat stencil with every name drawn from the awkward ones: the model holds no
    name unsafe anywhere, and the driver compiles as Python."""
    n, t, i, j, a, b, alpha = names[:7]
    src = (f"void k(int {n}, int {t}, float {alpha}, float {a}[{n}][{n}], float {b}[{n}][{n}]) {{\n"
           f"  for (int q = 0; q < {t}; q++) {{\n"
           f"#pragma omp parallel for\n"
           f"    for (int {i} = 1; {i} < {n} - 1; {i}++)\n"
           f"      for (int {j} = 1; {j} < {n} - 1; {j}++)\n"
           f"        {b}[{i}][{j}] = {alpha} * ({a}[{i} - 1][{j}] + {a}[{i}][{j} + 1]);\n"
           f"#pragma omp parallel for\n"
           f"    for (int {i} = 1; {i} < {n} - 1; {i}++)\n"
           f"      for (int {j} = 1; {j} < {n} - 1; {j}++)\n"
           f"        {a}[{i}][{j}] = {b}[{i}][{j}];\n  }}\n}}\n")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.c"
        path.write_text(src)
        prog = compile_program(path)
    compile(prog.host_source, "k_host.py", "exec")
    s = prog.scop
    model = list(s.int_params) + [p for p, _ in s.float_params] + \
        [lp.iterator for lp in s.loops()]
    assert all(unsafe(m) is None for m in model), model
    assert all(unsafe(a.name, True) is None for a in s.arrays)
    assert sorted(s.c_name(x) for x in s.args) == sorted([n, t, alpha, a, b])
