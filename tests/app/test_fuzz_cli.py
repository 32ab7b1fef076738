"""Fuzzing ``bbmm compile`` (issue 41): mutated C files (byte flips, truncation, random
tokens and lines inserted into PolyBench's floyd.c and the test kernels) and random
argument lists; every outcome must be success or exactly one ``bbmm: error:`` line
(bbmm's one-line warnings aside), never a traceback. Seeded, so a failure repeats:
``BBMM_FUZZ_SEED`` picks another seed, ``BBMM_FUZZ_CASES`` the number of cases."""
from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from bbmm.cli import main
from support.paths import KERNELS, ROOT

SOURCES = [ROOT / "polybench" / "floyd.c"] + sorted(
    p for p in (KERNELS).glob("*.c") if not p.name.startswith("invalid_"))
SEED = int(os.environ.get("BBMM_FUZZ_SEED", "41"))
CASES = int(os.environ.get("BBMM_FUZZ_CASES", "120"))
BUDGET_S = 40

TOKENS = ["for", "(", ")", "{", "}", "[", "]", ";", "=", "+", "-", "*", "/", "%", "<", "<=",
          "i", "j", "k", "n", "A", "0", "1", "-1", "2147483648", "1e400", "0x", "'", '"',
          "#pragma scop", "#pragma endscop", "#define X", "#include \"nope.h\"", "#if 0",
          "return", "int", "float", "double", "static", "if", "else", "while", "do", "goto",
          "break", "continue", "\\", "\n", "/*", "*/", "//", "\x00", "\xe9", "\U0001F600",
          "sqrt(", "min(", "?", ":", "&&", "||", "!", "&", "->", ".", ",", "...", "void",
          "n]", "[n", "i++", "++i", "--", "+=", "__global", "#", "##", "???"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["flip", "truncate", "token", "tokens", "delete", "line", "dup"])
    b = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del b[rng.randrange(len(b)):]
    elif kind in ("token", "tokens"):
        for _ in range(1 if kind == "token" else rng.randint(2, 6)):
            i = rng.randrange(len(b) + 1)
            b[i:i] = (" " + rng.choice(TOKENS) + " ").encode("utf-8", "surrogatepass")
    elif kind == "delete":
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, 40)]
    elif kind == "line":
        lines = bytes(b).split(b"\n")
        i = rng.randrange(len(lines))
        lines[i] = " ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 8))).encode(
            "utf-8", "surrogatepass")
        b = bytearray(b"\n".join(lines))
    else:
        i, j = sorted(rng.randrange(len(b)) for _ in range(2))
        b[j:j] = b[i:i + 60]
    return bytes(b)


def arguments(rng: random.Random, path: Path, tmp: Path) -> list[str]:
    args = ["compile", str(path)]
    for _ in range(rng.randint(0, 3)):
        opt = rng.choice(["-D", "-I", "--function", "--split-all", "--dump-scop",
                          "--dump-deps", "--explain", "-o", "--bogus", "--param", "x"])
        if opt == "-D":
            args.append("-D" + rng.choice(["N=10", "X", "=3", "1x=2", "N=", "M=(", "A B=1"]))
        elif opt == "-I":
            args += ["-I", rng.choice([str(tmp), "/nonexistent", ""])]
        elif opt == "--function":
            args += ["--function", rng.choice(["main", "nope", "kernel", "", "k;"])]
        elif opt == "-o":
            args += ["-o", str(rng.choice([tmp / "out", tmp / "file", tmp]))]
        else:
            args.append(opt)
    return args


def check_outcome(rc: int, err: str, what: str) -> None:
    lines = [ln for ln in err.splitlines() if not ln.startswith("bbmm: warning:")]
    assert "Traceback" not in err, what + "\n" + err
    if rc == 0:
        assert not lines, what + "\n" + err
    else:
        assert rc in (1, 2), what + f" exit {rc}\n" + err
        assert len(lines) == 1 and lines[0].startswith("bbmm: error: "), what + "\n" + err


def test_fuzz_compile(tmp_path, capsys):
    rng = random.Random(SEED)
    (tmp_path / "file").write_text("x")
    t0 = time.monotonic()
    outcomes = {"ok": 0, "error": 0}
    for case in range(CASES):
        if time.monotonic() - t0 > BUDGET_S:
            break
        src = rng.choice(SOURCES)
        data = mutate(rng, src.read_bytes()) if rng.random() < 0.9 else src.read_bytes()
        path = tmp_path / rng.choice(["k.c", "k k.c", "k\"x.c", "k\\x.c"])
        path.write_bytes(data)
        argv = arguments(rng, path, tmp_path)
        what = f"case {case} (seed {SEED}): bbmm {' '.join(map(repr, argv))} on a mutation of " \
               f"{src.name}"
        capsys.readouterr()
        try:
            rc = main(argv)
        except SystemExit as e:         # argparse's usage errors
            rc = e.code if isinstance(e.code, int) else 1
        except Exception as e:          # noqa: BLE001 - what the test looks for
            pytest.fail(f"{what}: {type(e).__name__}: {e}")
        err = capsys.readouterr().err
        check_outcome(rc, err, what)
        outcomes["ok" if rc == 0 else "error"] += 1
    assert outcomes["ok"] and outcomes["error"], outcomes     # both kinds were met
