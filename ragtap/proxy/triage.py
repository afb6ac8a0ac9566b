"""Where and whether the triage page is served: on the proxy's listener (default) or its own, and its URL.

The page shows questions, documents and answers, so it is served on a non-loopback address only behind a bearer
token (`[triage] token`, else `[prometheus] token`) or with `[triage] allow_unauthenticated = true` said
explicitly.  Loopback is matched exactly (ragtap/triage/access.py): 127.0.0.0/8, ::1 and `localhost`.
"""

from __future__ import annotations

from aiohttp import web

from ragtap.config import Config
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.store.base import CaptureStore
from ragtap.triage.access import WILDCARD_HOSTS, is_loopback_host
from ragtap.triage.routes import TriageAPI, add_triage_routes


def triage_host(config: Config) -> str:
    """The address the page listens on."""
    settings = config.triage
    return (settings.listen_host or config.server.host) if settings.listen_port is not None else config.server.host


def triage_token(config: Config) -> str | None:
    """The bearer token of the page's API: its own, else the /metrics token (None: no token)."""
    return config.triage.token or config.prometheus.token


def triage_unavailable(config: Config, store: CaptureStore | None) -> str | None:
    """Why the page is not served (one line for the log and the start-up line), or None when it is."""
    return triage_problem(config, has_store=store is not None)


def triage_problem(config: Config, *, has_store: bool) -> str | None:
    """`triage_unavailable` before the store is opened (the supervisor of several workers decides what to listen on)."""
    settings = config.triage
    if not settings.enabled:
        return "off ([triage] enabled = false)"
    if not has_store:
        return "off (no capture store: [store] capture is \"none\" or path is \"\")"
    host = triage_host(config)
    if not is_loopback_host(host) and not triage_token(config) and not settings.allow_unauthenticated:
        return (f"off (it would be served on {host} without a token: set [triage] token / RAGTAP_TRIAGE_TOKEN "
                "(or [prometheus] token / RAGTAP_METRICS_TOKEN), or [triage] allow_unauthenticated = true)")
    return None


def triage_warning(config: Config) -> str | None:
    """One line when the page is served to other machines without a token but no browser could use it: bound to
    every address, its API answers only the names in `[triage] allowed_hosts` (and loopback)."""
    settings = config.triage
    host = triage_host(config)
    if triage_token(config) or not settings.allow_unauthenticated or settings.allowed_hosts or host not in WILDCARD_HOSTS:
        return None
    return (f"triage page: served on {host} without a token, but its API answers only loopback names: set [triage] "
            "allowed_hosts to the names browsers use to reach it (e.g. [\"triage.example.com\"])")


def mount_triage(app: web.Application, config: Config, store: CaptureStore, redactor: Redactor = NO_REDACTION) -> TriageAPI:
    """Add the page's routes to `app` (the proxy's app before its catch-all route, or the page's own app)."""
    return add_triage_routes(app, store, config.triage, token=triage_token(config), thresholds=config.thresholds,
                             listen_host=triage_host(config), redactor=redactor)


def triage_page_url(config: Config, host: str, port: int) -> str:
    """The page's full URL on a bound listener (an IPv6 host in brackets; 0.0.0.0 is shown as it is bound)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}{config.triage.prefix}/"
