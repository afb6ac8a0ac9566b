"""`ragtap serve --workers N`: N processes serving one port, and the supervisor that keeps them.

- `listeners.py`: the supervisor opens the listening side before any worker starts: with SO_REUSEPORT (Linux) it
  binds a placeholder that reserves the port (port 0 resolved once) and each worker binds its own socket to it, the
  kernel spreading connections over them; elsewhere, or with `[server] reuse_port = false`, one listening socket
  that every worker accepts on.
- `process.py`: one serving process from start to stop (`ragtap serve` alone runs exactly this), and a worker's
  entry point: reports ready to the supervisor, stops on SIGTERM, or when the supervisor is gone.
- `supervisor.py`: starts the workers, prints one start-up line once all are ready, starts a new worker when one
  dies (with a back-off when it keeps dying), passes SIGTERM/SIGINT on and waits out the grace period.

What the workers share: the port; /metrics (prometheus_client's multiprocess mode in a directory the supervisor
owns: ragtap/exporters/prometheus.py); the capture store (one database, a writer thread per worker, worker 0 prunes
it); the interaction log (line-atomic appends).  What each has of its own: the scoring queue and embedder (or the
Redis hand-off), the upstream connection pool, the client connection limit, a 1/N share of the online judge's rate
and budget, and the memory of injected Responses (docs/scaling.md).
"""
