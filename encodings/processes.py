"""Prover processes that end when they should: at the limit, or with their parent.

CaDiCaL cannot be interrupted through pysat, so every prover that may run
long runs in a child process, and the only real time limit is killing it.
Two ways a child could outlive its use, both closed here:

- the parent gives up (a limit, an answer from another member): `stop`
  sends SIGTERM, then SIGKILL to whatever lingers — a solver busy in C does
  not run Python's signal handlers, so SIGTERM alone may do nothing;
- the parent dies without cleaning up (SIGKILL, the out-of-memory killer, a
  Celery pool process killed at its hard time limit): `die_with_parent`
  asks Linux to send the child SIGKILL when that happens, so no prover is
  left running under init, burning a core for nobody.

A child also starts by moving everything it inherited out of the cycle
collector's sight (`start_child`), so that its own allocations do not make
the collector walk, and copy page by page, the parent's objects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import signal
from typing import Any

#: prctl(2) option: the signal this process gets when its parent dies.
PR_SET_PDEATHSIG = 1


def _libc() -> ctypes.CDLL | None:
    """Return the C library, looked up once here rather than in every child."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def die_with_parent(parent_pid: int) -> None:
    """Make this (child) process get SIGKILL when ``parent_pid`` dies.

    Called first thing in the child. If the parent died between the fork
    and the call, the death signal would never come, so the child checks
    its parent again and exits at once. Where prctl is missing (not Linux),
    this does nothing: the parent's own `stop` still applies. Linux sends
    the signal when the *thread* that forked the child ends, so a child
    started from a short-lived thread must be waited for by that thread
    (`certificates.certify_within` is: it stops its child before returning).
    """
    prctl = getattr(_LIBC, "prctl", None)
    if prctl is None or prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if os.getppid() != parent_pid:
        os._exit(1)


def start_child(parent_pid: int) -> None:
    """Begin a forked prover child: `die_with_parent`, then `gc.freeze`.

    Why the freeze: the child inherits every object of its parent (a Celery
    worker, the CLI with Flask and the benchmark's rows), and the cycle
    collector's full passes, which the encoder's hundred thousand clause
    lists set off, would walk all of them and touch (so copy) their pages.
    Frozen, they are left alone; the child's own objects are collected as
    usual (an inherited cycle the child drops waits for its exit: a prover
    child lives for one proof). Measured (`patience bench --engine auto
    --count 300 --time-limit 10`, the two codes side by side, each pinned
    to a core): the verdicts' formulas built in a median of 0.086 s against
    0.118 s, the 300 verdicts in 26.9 s against 30.6 s, p90 0.156 s against
    0.192 s.
    """
    die_with_parent(parent_pid)
    gc.freeze()


def stop(procs: list[Any], grace: float = 0.5) -> None:
    """Terminate processes at once, then kill any still alive after ``grace`` s."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=grace)
        if proc.is_alive():
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.join(timeout=grace)
