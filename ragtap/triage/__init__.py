"""The triage page: the thesis's Fig 3.2 table of captured interactions, a detail view, and human labels.

Served by the proxy (its own path, or its own listener) from the capture store (`ragtap.store`); static HTML, CSS
and vanilla JavaScript shipped in the package (no CDN, no build step).  `routes.add_triage_routes` mounts it.
"""
