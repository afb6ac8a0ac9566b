"""A throwaway PostgreSQL server for tests: Debian's `initdb` + `pg_ctl` on a temporary folder and a free port.

Running as root (CI), the server runs as the `postgres` user (PostgreSQL refuses to run as root).  Tests that
need it skip with the reason from `unavailable()` only where the binaries are absent.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable() -> str | None:
    """Why no server can be started here, or None."""
    if _bin_dir() is None:
        return "PostgreSQL binaries (initdb, pg_ctl) not found: install Debian's postgresql package (scripts/system-packages.sh)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: cannot start PostgreSQL as the postgres user"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        bin_dir = _bin_dir()
        assert bin_dir is not None, unavailable()
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="ragtap-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.folder, "postgres", "postgres")
            self.folder.chmod(0o700)

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        done = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr[-500:]}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
        done = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "-t", "30", "start")
        if done.returncode != 0:
            log = (self.folder / "log").read_text(errors="replace")[-800:] if (self.folder / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr[-300:]} {log}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop")

    def wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"PostgreSQL did not listen on {self.port} within {timeout} s")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def running_postgres() -> Iterator[PostgresServer]:
    """A started server for a pytest fixture (skipped with the reason where the binaries are absent), removed after."""
    import pytest

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    server = PostgresServer()
    server.init()
    server.start()
    try:
        yield server
    finally:
        server.remove()
