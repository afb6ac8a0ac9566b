"""Settings of the triage page (`[triage]` in config.toml).

A plain frozen dataclass with safe defaults, like the exporters' settings: the config loader fills it; nothing here
reads a file or the environment.  The page's data routes sit behind a bearer token: `token` (RAGTAP_TRIAGE_TOKEN),
else the /metrics token (`[prometheus] token`, RAGTAP_METRICS_TOKEN), passed in by the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass

TRACE_URL_FIELDS = ("trace_id", "span_id")  # the placeholders a trace URL template may use


@dataclass(frozen=True)
class TriageSettings:
    """Where the triage page is served and how it behaves.

    `listen_port` None serves `path` on the proxy's own listener; a port starts a separate listener (on
    `listen_host`, default the proxy's host), e.g. to keep the page off the port apps reach.  `trace_url` is a
    template with `{trace_id}` / `{span_id}` (Jaeger: `http://127.0.0.1:16686/trace/{trace_id}`; Grafana Explore
    with Tempo: an Explore URL with `{trace_id}` in its query).  `allow_unauthenticated` must be set to serve the
    page on a non-loopback address without a token: the page shows questions, documents and answers.
    `token`: the bearer token of the page's API (None: the /metrics token, if any).  `allowed_hosts`: the names
    (and addresses) browsers use to reach the page from elsewhere; without a token the API answers only requests
    addressed to a loopback name, the listener's own address or one of these (a DNS-rebinding page cannot).
    """

    enabled: bool = True
    path: str = "/triage"
    listen_host: str | None = None
    listen_port: int | None = None
    trace_url: str | None = None
    page_size: int = 50  # rows per page of the table
    poll_seconds: float = 5.0  # live updates: how often the page asks for new rows (0: no live updates)
    # Live updates ask again for rows this much older than the newest shown: an interaction is stored when its
    # scoring ends, so one that finished earlier can arrive after a later one.
    live_lookback_s: float = 120.0
    allow_unauthenticated: bool = False
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()

    @property
    def prefix(self) -> str:
        """The path without a trailing slash ("/triage")."""
        return "/" + self.path.strip("/")
