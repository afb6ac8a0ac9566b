"""Where and whether the triage page is served: on the proxy's listener (default) or its own, and its URL.

The page shows questions, documents and answers, so it is served on a non-loopback address only behind the
/metrics bearer token (`[prometheus] token`) or with `[triage] allow_unauthenticated = true` said explicitly.
"""

from __future__ import annotations

from aiohttp import web

from ragtap.config import Config
from ragtap.store.base import CaptureStore
from ragtap.triage.routes import TriageAPI, add_triage_routes

_LOOPBACK = ("127.", "::1", "localhost")


def triage_host(config: Config) -> str:
    """The address the page listens on."""
    settings = config.triage
    return (settings.listen_host or config.server.host) if settings.listen_port is not None else config.server.host


def triage_unavailable(config: Config, store: CaptureStore | None) -> str | None:
    """Why the page is not served (one line for the log and the start-up line), or None when it is."""
    return triage_problem(config, has_store=store is not None)


def triage_problem(config: Config, *, has_store: bool) -> str | None:
    """`triage_unavailable` before the store is opened (the supervisor of several workers decides what to listen on)."""
    settings = config.triage
    if not settings.enabled:
        return "off ([triage] enabled = false)"
    if not has_store:
        return "off (no capture store: set [store] path)"
    host = triage_host(config)
    if not host.startswith(_LOOPBACK) and not config.prometheus.token and not settings.allow_unauthenticated:
        return (f"off (it would be served on {host} without a token: set [prometheus] token / RAGTAP_METRICS_TOKEN, "
                "or [triage] allow_unauthenticated = true)")
    return None


def mount_triage(app: web.Application, config: Config, store: CaptureStore) -> TriageAPI:
    """Add the page's routes to `app` (the proxy's app before its catch-all route, or the page's own app)."""
    return add_triage_routes(app, store, config.triage, token=config.prometheus.token, thresholds=config.thresholds,
                             listen_host=triage_host(config))


def triage_page_url(config: Config, host: str, port: int) -> str:
    """The page's full URL on a bound listener (an IPv6 host in brackets; 0.0.0.0 is shown as it is bound)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}{config.triage.prefix}/"
