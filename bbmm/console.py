"""The console of bbmm's programs (the command line, generated drivers, MPI ranks): usage
errors and every :class:`~bbmm.diagnostic.BBMMError` as one line ``bbmm: error: ...``, bbmm's
warnings as one line each, and a Ctrl-C that ends the process within a second."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from .diagnostic import BBMMError, UsageError

__all__ = ["OneLineParser", "one_line", "run_with_errors", "one_line_warnings",
           "exit_interrupted", "watch_interrupts"]


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, ``bbmm: error: ...`` (exit 2), as
    bbmm's own."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        print(f"bbmm: error: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def one_line(text: object) -> str:
    """The first line of ``text``, printable."""
    from bbmm.codegen.literals import py_comment
    lines = str(text).splitlines()
    return py_comment(lines[0] if lines else "")


def run_with_errors(fn: Callable[[], int]) -> int:
    """Call ``fn``; a BBMMError becomes one line on stderr and exit status 1 (2 for usage)."""
    try:
        return fn()
    except UsageError as e:
        print(f"bbmm: error: {one_line(e)}", file=sys.stderr)
        return 2
    except BBMMError as e:
        print(f"bbmm: error: {one_line(e)}", file=sys.stderr)
        return 1


def one_line_warnings() -> None:
    """Print bbmm's own warnings as ``bbmm: warning: ...``, one line each."""
    import warnings

    from .diagnostic import BBMMWarning

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore
        if issubclass(category, BBMMWarning):
            print(f"bbmm: warning: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)
    warnings.showwarning = show


_EXIT_LOCK = None
_WAKEUP: Any = None


def exit_interrupted() -> None:
    """Say so and end the process now, status 130: queued device work is abandoned (the
    OpenCL queues would otherwise be drained at exit), and the cache, written by atomic
    renames, keeps no half entry."""
    import os
    import threading

    global _EXIT_LOCK
    if _EXIT_LOCK is None:
        _EXIT_LOCK = threading.Lock()
    with _EXIT_LOCK:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stdout changes nothing
            pass
        print("bbmm: interrupted", file=sys.stderr, flush=True)
        os._exit(130)


def watch_interrupts(grace_s: float = 0.5) -> None:
    """End the process ``grace_s`` after a Ctrl-C even when the main thread cannot take
    the KeyboardInterrupt (blocked in a device wait): the C-level signal handler writes to
    a wakeup socket that a watcher thread reads."""
    import signal
    import socket
    import threading
    import time

    global _WAKEUP
    if _WAKEUP is not None or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return                      # once per process, and only bbmm's own

    r, w = _WAKEUP = socket.socketpair()     # kept: a collected socket closes its fd
    w.setblocking(False)
    try:
        signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        return

    def watch() -> None:
        while True:
            try:
                data = r.recv(64)
            except OSError:
                return
            if not data:
                return              # the socket closed: nothing to watch
            if signal.SIGINT in data:
                break
        time.sleep(grace_s)
        exit_interrupted()
    threading.Thread(target=watch, name="bbmm-interrupt", daemon=True).start()
