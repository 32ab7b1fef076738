"""A template's replay written out once as straight-line Python.

:func:`bbmm.shifted.replay_walked` walks a :class:`~bbmm.shifted.Template`'s operations
every serial iteration it replays: it looks up each operation's kind, decodes each box
through a general loop, counts each transfer through a method and loops over the
template's records at the end. Floyd's and LU's steps are replayed thousands of times by a
few templates, and that walk was more than a quarter of a moved-on step's host
instructions (rank 1 of four dry processes of Floyd: the step's operations apart from the
exchange, the launch and the load took about 100k of its 365k). :func:`replay_code`
writes the walk out for one template, once: each operation in turn with its constants in
place, each 2-D box decoded in four additions, each count an addition, each record and
stale part written directly; a whole tile's launch moved on repeats its last launch with
the new pieces' arguments in place (:class:`Relaunch`). It issues the same operations in
the same order, allocates and frees the same transient boxes and leaves the same state as
the walk, which stays the reference and the path of a template's first replays
(:data:`bbmm.shifted.WRITE_AFTER`) and of a run that queues nests behind a gate (``--tune
gate=on``); the tests run both on the same steps. Names and flags reach the source as
literals (``repr``), anything else through a table of constants.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from .box import Box
from .diagnostic import DeviceMemoryError
from .ordertype import box_of
from .tiles import Copy, TileBuffers, last_use


def replay_code(tpl: Any, arrays: tuple[str, ...], parted_rows: Callable[..., Any],
                deferred_counts: Callable[..., Any]) -> Callable[..., bool]:
    """``tpl``'s replay as a function ``(rt, bases, phases, ats) -> bool`` with
    :func:`bbmm.shifted.replay_shifted`'s effects and result, for a runtime whose
    directory's arrays are ``arrays`` in its order (the order its records are kept in).
    ``parted_rows`` and ``deferred_counts``: the replay's checks of a tile run in parts
    and of the write-out groups (:mod:`bbmm.shifted`'s, shared with its walk)."""
    w = _Writer(tpl, arrays)
    src = w.source()
    scope: dict[str, Any] = {
        "Box": Box, "Copy": Copy, "TileBuffers": TileBuffers, "box_of": box_of,
        "DeviceMemoryError": DeviceMemoryError, "clock": time.perf_counter,
        "parted_rows": parted_rows, "deferred_counts": deferred_counts, "TPL": tpl,
        "K": w.consts, "RL": [Relaunch() for _ in range(w.relaunches)],
    }
    exec(compile(src, f"<bbmm.shiftcode template {id(tpl):x}>", "exec"), scope)
    fn = scope["replay"]
    fn.source = src
    return fn


def _const(v: Any) -> str:
    """``v`` (a flag of the template: a bool, an int or None) as a literal."""
    if v is not None and not isinstance(v, (bool, int)):
        raise TypeError(f"not a flag: {v!r}")
    return repr(v)


class _Writer:
    """The source of one template's replay function."""

    def __init__(self, tpl: Any, arrays: tuple[str, ...]):
        self.tpl = tpl
        self.arrays = arrays
        self.flats: dict[str, str] = {}
        self.trans_arrays = [a for a, _, _, _ in tpl.transients]
        self.trans_bytes: list[str] = []
        """Per transient box, an expression of its bytes (its box's volume taken once:
        Floyd's row ``k`` is one box on every device that does not own it)."""
        self.consts: list[Any] = []
        self.relaunches = 0

    def const(self, v: Any) -> str:
        """``v`` as an entry of the function's table of constants (never as source)."""
        self.consts.append(v)
        return f"K[{len(self.consts) - 1}]"

    # ---- pieces ------------------------------------------------------------------------

    def flat(self, a: str) -> str:
        """The variable holding ``bases[a][-1]`` (every distinct coordinate of ``a``)."""
        v = self.flats.get(a)
        if v is None:
            v = self.flats[a] = f"f{len(self.flats)}"
        return v

    def box(self, enc: Any, a: str) -> str:
        """An expression decoding ``enc`` through ``a``'s coordinates (box_of)."""
        nd, coords = enc
        f = self.flat(a)
        vals = [f"{f}[{int(i)}]" + (f" + {int(o)}" if o > 0 else f" - {-int(o)}" if o < 0 else "")
                for i, o in coords]
        lo = ", ".join(vals[:nd]) + ("," if nd == 1 else "")
        hi = ", ".join(vals[nd:]) + ("," if nd == 1 else "")
        return f"Box._new(({lo}), ({hi}))"

    def copy(self, r: tuple) -> tuple[str, str]:
        """An expression for the copy a template refers to by ``r``, and its array."""
        if r[0] == "p":
            return f"copies[{r[1]!r}][{int(r[2])}]", r[1]
        return f"tr{int(r[1])}", self.trans_arrays[r[1]]

    def region(self, enc: Any, a: str) -> str:
        return "c.box" if enc is None else self.box(enc, a)

    # ---- the function ------------------------------------------------------------------

    def source(self) -> str:
        """The function's source (built once: it fills :attr:`consts` and :attr:`flats`)."""
        tpl = self.tpl
        body: list[str] = []
        add = body.append
        add("d = rt.directory")
        add("devs = rt.devices")
        add("stats = rt.stats")
        add("sdev = stats.devices")
        if tpl.parted:
            add("rows_of = parted_rows(rt, TPL, bases, phases)")
            add("if rows_of is None:")
            add("    return False")
        grouped = bool(tpl.deferred) or any(tpl.groups)
        if grouped:
            add("got = deferred_counts(d, TPL, bases)")
            add("if got is None:")
            add("    return False")
            add("groups, counts = got")
        # the transient boxes, allocated from the devices' pools
        made: list[str] = []
        boxes: dict[str, int] = {}  # a transient box's expression: its variables' number
        for n, (a, dev, enc, item) in enumerate(tpl.transients):
            expr = self.box(enc, a)
            k = boxes.get(expr)
            if k is None:
                k = boxes[expr] = len(boxes)
                add(f"b{k} = {expr}")
                add(f"v{k} = b{k}.volume")
            self.trans_bytes.append(f"v{k} * {int(item)}")
            add(f"dv = devs[{int(dev)}]")
            add("try:")
            add(f"    al = dv.alloc({self.trans_bytes[n]})")
            add("except DeviceMemoryError:")
            for m in made:
                add(f"    {m}.device.free({m}.alloc, None)")
            add("    return False")
            add(f"tr{n} = Copy({a!r}, b{k}, dv, al, {int(item)})")
            made.append(f"tr{n}")
        for n, m in enumerate(made):
            add(f"sdev[{m}.device.index].on_alloc({self.trans_bytes[n]})")
        add("copies = d.copies")
        add("times = stats.times")
        add("sbytes = stats.bytes")
        add("kept = TPL.buffers")
        add("harr = d.host.arrays")
        add("clock0 = clock()")
        ops = tpl.ops
        for n, (timer, kind, args) in enumerate(ops):
            self.op(body, n, kind, args)
            if n + 1 < len(ops) and ops[n + 1][0] == timer:
                continue  # the next operation's time goes to the same timer: one reading
            add("clock1 = clock()")
            add(f"times[{timer!r}] += clock1 - clock0")
            add("clock0 = clock1")
        add("if d.writebacks:")
        add("    d.flush_writebacks()")
        for n, m in enumerate(made):
            add(f"{m}.device.free({m}.alloc, {m}.last)")
            add(f"sdev[{m}.device.index].on_free({self.trans_bytes[n]})")
        for recs, stale, a in zip(tpl.dirty, tpl.stale, self.arrays):
            items = []
            for r in recs:
                if r[0] == "s":
                    items.append(f"start[{int(r[1])}]")
                else:
                    items.append(f"({self.box(r[0], a)}, cs[{int(r[1])}])")
            add(f"cs = copies[{a!r}]")
            if any(r[0] == "s" for r in recs):
                add(f"start = d.dirty[{a!r}]")
            add(f"d.dirty[{a!r}] = [{', '.join(items)}]")
            for j, st in enumerate(stale):
                if st is not None:
                    add(f"if len(cs) > {j}:")
                    add(f"    cs[{j}].stale = [{', '.join(self.box(s, a) for s in st)}]")
        if grouped:
            add("for (c, gs), hulls, ns in zip(groups, TPL.groups, counts):")
            add("    ds = bases[c.array]")
            add("    for g, hull, n in zip(gs, hulls, ns):")
            add("        g[0] = box_of(hull, ds)")
            add("        g[1] = n")
        if tpl.tiles:
            add(f"stats.tiles += {int(tpl.tiles)}")
        if tpl.split_accesses:
            add(f"stats.split_accesses += {int(tpl.split_accesses)}")
        if tpl.parted:
            add(f"stats.edge_first += {len(tpl.parted)}")
        for dev, n in tpl.boxes_present:
            add(f"sdev[{int(dev)}].boxes_present += {int(n)}")
        add("stats.replayed += 1")
        add("stats.shifted += 1")
        add("return True")
        head = ["def replay(rt, bases, phases, ats):"]
        for a, v in self.flats.items():
            head.append(f"    {v} = bases[{a!r}][-1]")
        return "\n".join(head + ["    " + x for x in body])

    def op(self, body: list[str], n: int, kind: str, args: tuple) -> None:
        """One operation of the template (as replay_shifted's loop issues it)."""
        add = body.append
        if kind == "launch":
            self.launch(body, n, args)
        elif kind == "begin":
            add(f"cb = phases[{int(args[0])}][2]")
            add("if cb is not None:")
            add("    cb(True)")
        elif kind == "end":
            add(f"cb = phases[{int(args[0])}][3]")
            add("if cb is not None:")
            add("    cb()")
        elif kind == "d2d":
            rdst, rsrc, enc, what = args
            cexpr, a = self.copy(rdst)
            sexpr, _ = self.copy(rsrc)
            add(f"c = {cexpr}")
            add(f"region = {self.region(enc, a)}")
            add(f"d.replay_d2d(c, {sexpr}, region, {what!r})")
            self.count(body, "d2d_bytes", what, self.whole(rdst, enc))
        else:
            r, enc, what, side = args
            cexpr, a = self.copy(r)
            add(f"c = {cexpr}")
            add(f"region = {self.region(enc, a)}")
            add(f"host = harr[{a!r}]")
            if kind == "h2d":
                lane = f"d.lane(c, region, {_const(side)})" if side else "0"
                add(f"d.replay_h2d(c, region, host, {what!r}, {lane})")
                self.count(body, "h2d_bytes", what, self.whole(r, enc))
            else:
                add(f"d.replay_d2h(c, region, host, {what!r}, {_const(side)})")
                self.count(body, "d2h_bytes", what, self.whole(r, enc))

    def launch(self, body: list[str], n: int, args: tuple) -> None:
        """A launch of the template: the tile's pieces as the template's copies and boxes
        give them, by :class:`Relaunch` where it can (a whole tile, moved on), else through
        its callback (:meth:`bbmm.runtime.Runtime._launch`)."""
        p, i, pieces, rows = args
        add = body.append
        got = []
        acc = []
        pairs = []  # (copy, its piece or None where the piece is the copy's box)
        for a, ps, ac in pieces:
            out = []
            for enc, r in ps:
                cexpr, _ = self.copy(r)
                v = f"c{len(got)}_{len(out)}"
                add(f"{v} = {cexpr}")
                if enc is None:
                    out.append(f"({v}.box, {v})")
                    pairs.append(f"({v}, None)")
                else:
                    b = f"b{len(got)}_{len(out)}"
                    add(f"{b} = {self.box(enc, a)}")
                    out.append(f"({b}, {v})")
                    pairs.append(f"({v}, {b})")
            got.append(f"{a!r}: [{', '.join(out)}]")
            acc.append(f"{a!r}: {[int(x) for x in ac]!r}")
        # a transient copy is a new object every replay: the pieces always differ
        transient = any(r[0] == "t" for _, ps, _ in pieces for _, r in ps)
        direct = rows is None
        if direct:
            add(f"rl = RL[{self.relaunches}]")
            self.relaunches += 1
            add(f"ps = ({''.join(x + ', ' for x in pairs)})")
            add(f"if ats is None or not rl.go(rt, ats[{int(p)}][{int(i)}], ps):")
            inner: list[str] = []
            add = inner.append
        add(f"got = {{{', '.join(got)}}}")
        add(f"tb = kept.get({n})")
        if transient:
            add("if tb is not None:")
            add("    tb.before = None")
            add(f"tb = kept[{n}] = TileBuffers(got, {{{', '.join(acc)}}}, before=tb)")
        else:
            add("if tb is None or tb.pieces != got:")
            add("    if tb is not None:")
            add("        tb.before = None")
            add(f"    tb = kept[{n}] = TileBuffers(got, {{{', '.join(acc)}}}, before=tb)")
            if direct:
                add("tb.prepared = None  # (set again by this launch, where it can be)")
        rows_expr = ("None" if rows is None
                     else f"rows_of[({int(p)}, {int(i)}, {self.const(rows)})]")
        add(f"ph = phases[{int(p)}]")
        add(f"rt._launch(ph[0][{int(i)}], tb, {rows_expr}, ph[6], "
            f"None if ats is None else ats[{int(p)}][{int(i)}])")
        if direct:
            add(f"rl.learn(tb, ph[0][{int(i)}].device, ps)")
            body.extend("    " + x for x in inner)

    def whole(self, r: tuple, enc: Any) -> str | None:
        """The bytes of a transfer of the whole of transient copy ``r`` (``enc`` None: its
        own box), as :attr:`trans_bytes` has them; None for any other."""
        return self.trans_bytes[int(r[1])] if r[0] == "t" and enc is None else None

    @staticmethod
    def count(body: list[str], field: str, what: str, nbytes: str | None = None) -> None:
        """:meth:`bbmm.stats.Stats.moved` of one transfer of ``region`` by ``c``
        (``nbytes``: an expression of its bytes, where one is at hand)."""
        body.append(f"nb = {nbytes or 'region.volume * c.itemsize'}")
        body.append("ds = sdev[c.device.index]")
        body.append("ds.copies += 1")
        body.append(f"ds.{field} += nb")
        body.append(f"sbytes[{what!r}] += nb")


class Relaunch:
    """A template's launch of a whole tile moved on (its scalars and grid ``at``, from
    the generated callback's ``kernel.at``: one launch per call), repeated without the
    tile: the kernel, sizes and arguments of its last launch (:attr:`TileBuffers.prepared
    <bbmm.tiles.TileBuffers.prepared>`), with the arguments of the pieces that are other
    copies or other boxes now put in place.

    A transient copy is a new object every replay (Floyd's row ``k`` on a device that
    does not own it), so the launch through the tile's callback rebuilt its buffers and
    looked its arguments up afresh each time: Floyd on four dry devices in one process
    spent 602k instructions per ``k`` with that, 512k without
    (``python scripts/count_host.py floyd --devices 4 --lag 8 --vary n=1024,2048``).
    A grid that moved (LU's shrinks every ``k``) takes its NDRange and origins from the
    launch's regridder (:func:`bbmm.hostlib.regridder`). The callback runs instead
    (:meth:`learn` then notes the launch it made) where there is no launch noted, the
    kernel's work-groups depend on the grid (a staged kernel), a piece's copy lies in
    another buffer or takes another kernel variant (:meth:`~bbmm.tiles.Copy.fits_int`),
    or the device is profiling; after :attr:`MISSES` such replays in a row, the relaunch
    is no longer tried."""

    __slots__ = ("dev", "index", "grid", "kernel", "gsize", "lsize", "tail", "spots",
                 "regrid", "misses")

    MISSES = 4

    def __init__(self) -> None:
        self.dev: Any = None
        self.misses = 0

    def learn(self, tb: TileBuffers, index: int, pieces: tuple) -> None:
        """Note the launch just made on ``tb`` by the callback of a tile of device
        ``index``, its ``pieces`` as :meth:`go` takes them: where each piece's arguments
        lie among the launch's (the k-th piece of a copy in the k-th slot holding the
        copy's base offset, an object of that copy's alone); where a piece's are not
        there, nothing is noted."""
        self.dev = None
        got = tb.prepared
        if got is None or self.misses >= self.MISSES:
            return
        dev, grid, kernel, gsize, lsize, tail, regridder, how, _, bare = got
        spots = []
        seen: dict[int, int] = {}
        for c, piece in pieces:
            base = c.kernel_args()[1]
            at = [i for i, x in enumerate(tail) if x is base]
            k = seen[id(c)] = seen.get(id(c), -1) + 1
            if k >= len(at):
                return
            lo = at[k] - 1
            mid = lo + len(c.kernel_args())  # then its bounds, but in a lean launch
            hi = mid if c.array in bare else mid + 2 * len(c.box.lo)
            spots.append((c, piece, lo, mid, hi, c.alloc.buf, c.fits_int()))
        self.dev, self.index, self.grid = dev, index, grid
        self.kernel, self.gsize, self.lsize = kernel, gsize, lsize
        self.tail, self.spots = tail, spots
        self.regrid = regridder(dev, len(grid), how)

    def go(self, rt: Any, at: tuple, pieces: tuple) -> bool:
        """Launch the tile with scalars and grid ``at`` on ``pieces`` (``(copy, box)``
        in slot order, box None for the copy's own box) as its callback would; False,
        with nothing launched, where the callback must."""
        dev = self.dev
        if dev is None or dev.profiling:
            return False
        scalars, grid = at
        ns = len(scalars)
        args = [*scalars, *self.tail]
        gsize, lsize = self.gsize, self.lsize
        if grid != self.grid:
            if self.regrid is None:
                self.misses += 1
                return False
            gsize, lsize, origins = self.regrid(grid)
            args[ns:ns + len(origins)] = origins
        for (c, piece), (lc, lp, lo, mid, hi, buf, fits) in zip(pieces, self.spots):
            if c is lc:  # the same copy: its arguments stay, its piece's bounds may not
                if hi > mid and piece is not None and piece != lp:  # (no bounds: lean)
                    args[ns + mid:ns + hi] = c.bound_args(piece)
                continue
            if c.alloc.buf is not buf or c.fits_int() is not fits:
                self.misses += 1
                return False
            args[ns + lo:ns + mid] = c.kernel_args()
            if hi > mid:
                args[ns + mid:ns + hi] = c.bound_args(c.box if piece is None else piece)
        before = dev.last
        dev.launch(self.kernel, gsize, lsize, args)
        rt.stats.devices[self.index].launches += 1
        last_use((c for c, _ in pieces), before, dev.last)
        self.misses = 0
        return True
