"""The listening side of `ragtap serve --workers N`, opened by the supervisor before any worker starts.

SO_REUSEPORT (Linux, `[server] reuse_port = true`): each worker binds its own listening socket to the same port and
the kernel spreads new connections over them, evenly and without waking every worker for each one.  The supervisor
first binds the address *without* the option (so a port another program holds, or another ragtap's workers hold,
is an error here as it is for one process, not a port silently shared), learns the port (port 0 picks one), then
holds it with a bound, never-listening SO_REUSEPORT placeholder: a connection only ever reaches a listening socket,
and a worker replaced later binds the same port again.

A shared socket (elsewhere, or `reuse_port = false`): the supervisor listens and every worker accepts from that one
socket (inherited at fork).  Works everywhere; the kernel hands a connection to whichever worker accepts first.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from dataclasses import dataclass

from ragtap.config import Config
from ragtap.proxy.server import METRICS, PROXY, TRIAGE, Listener, Listeners
from ragtap.proxy.triage import triage_host, triage_problem
from ragtap.supervisor.process import CannotServe

BACKLOG = 128  # aiohttp's own default for a TCPSite


def reuse_port_available() -> bool:
    """SO_REUSEPORT that balances connections over the listening sockets: Linux.  (BSD and macOS have the option but
    hand every connection to one socket.)"""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


@dataclass
class OpenedListeners:
    config: Config  # with every port resolved (port 0 replaced by the port picked)
    listeners: Listeners
    held: list[socket.socket]  # the supervisor's own sockets: placeholders, or the shared listening sockets
    reuse_port: bool

    @property
    def mode(self) -> str:
        return "SO_REUSEPORT" if self.reuse_port else "one shared socket"

    def close(self) -> None:
        for sock in self.held:
            sock.close()
        self.held.clear()

    def close_in_worker(self) -> None:
        """In a forked worker: the placeholders are the supervisor's (a worker binds its own socket)."""
        if self.reuse_port:
            self.close()


def _wanted(config: Config) -> list[tuple[str, str, int]]:
    """(name, host, port) of each listener the workers open: the proxy's, and /metrics and the triage page when
    they listen on ports of their own."""
    wanted = [(PROXY, config.server.host, config.server.port)]
    prometheus = config.prometheus
    if prometheus.enabled and prometheus.listen_port is not None:
        wanted.append((METRICS, prometheus.listen_host or config.server.host, prometheus.listen_port))
    if config.triage.listen_port is not None and triage_problem(config, has_store=config.store.enabled) is None:
        wanted.append((TRIAGE, triage_host(config), config.triage.listen_port))
    return wanted


def _address(host: str, port: int) -> tuple[socket.AddressFamily, tuple[str, int]]:
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return family, address[:2]  # type: ignore[return-value]


def _placeholder(host: str, port: int) -> socket.socket:
    family, address = _address(host, port)
    with socket.socket(family, socket.SOCK_STREAM) as probe:  # exclusive: fails if anything holds the port
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
        port = probe.getsockname()[1]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address[0], port))
    except BaseException:
        sock.close()
        raise
    return sock


def _shared(host: str, port: int) -> socket.socket:
    family, address = _address(host, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def open_listeners(config: Config) -> OpenedListeners:
    """Every listener of the workers, opened; CannotServe (the port is taken, the host is not this machine's) with
    nothing left open."""
    reuse_port = config.server.reuse_port and reuse_port_available()
    held: list[socket.socket] = []
    by_name: dict[str, Listener] = {}
    ports: dict[str, int] = {}
    try:
        for name, host, port in _wanted(config):
            try:
                sock = _placeholder(host, port) if reuse_port else _shared(host, port)
            except OSError as error:
                shown = f"[{host}]" if ":" in host else host
                raise CannotServe(f"cannot listen on {shown}:{port}: {error.strerror or error}") from None
            held.append(sock)
            ports[name] = sock.getsockname()[1]
            by_name[name] = Listener(reuse_port=True) if reuse_port else Listener(sock=sock)
    except BaseException:
        for sock in held:
            sock.close()
        raise
    resolved = dataclasses.replace(config, server=dataclasses.replace(config.server, port=ports[PROXY]))
    if METRICS in ports:
        resolved = dataclasses.replace(resolved, prometheus=dataclasses.replace(resolved.prometheus, listen_port=ports[METRICS]))
    if TRIAGE in ports:
        resolved = dataclasses.replace(resolved, triage=dataclasses.replace(resolved.triage, listen_port=ports[TRIAGE]))
    return OpenedListeners(resolved, Listeners(by_name), held, reuse_port)
