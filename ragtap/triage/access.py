"""Who may read the triage page's data: exact loopback matching and the Host header, parsed strictly.

A request's Host header says which name the browser used to reach ragtap.  Without a token, the API answers
only names that cannot be a stranger's: loopback (127.0.0.0/8, ::1, `localhost` as a whole name), the
listener's own address, and the names in `[triage] allowed_hosts`.  A DNS-rebinding page (evil.example resolving
to 127.0.0.1) sends `Host: evil.example` and is refused.  Names are compared whole: `localhost.example.com` is
not `localhost`, and a Host that is not a plain `name[:port]` (`localhost:1@evil.com`) matches nothing.
"""

from __future__ import annotations

import ipaddress
import re

# name[:port] or [IPv6]:port, nothing else (no user part, no path, no spaces)
_HOST_HEADER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?")
WILDCARD_HOSTS = ("0.0.0.0", "::", "[::]", "")


def host_name(host_header: str) -> str | None:
    """The name of a Host header, lower-case and without brackets or port ("[::1]:8787" -> "::1"); None when the
    header is not a plain host[:port]."""
    found = _HOST_HEADER.fullmatch(host_header.strip())
    if found is None:
        return None
    return found.group(1).strip("[]").lower()


def is_loopback_host(name: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the name `localhost` itself (brackets allowed around an IPv6 address)."""
    bare = name.strip().strip("[]").lower()
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def trusted_hosts(listen_host: str, allowed_hosts: tuple[str, ...]) -> frozenset[str]:
    """The names besides loopback that the API answers without a token: the listener's own address (unless it is
    a wildcard, which is no name a browser uses) and the configured ones."""
    names = {h.strip("[]").lower() for h in allowed_hosts}
    if listen_host not in WILDCARD_HOSTS:
        names.add(listen_host.strip("[]").lower())
    return frozenset(names)


def host_is_trusted(host_header: str, trusted: frozenset[str]) -> bool:
    name = host_name(host_header)
    return name is not None and (is_loopback_host(name) or name in trusted)
