"""The capture store: scored interactions kept for triage and human labels (SQLite or PostgreSQL).

`base` is the typed interface; `sqlite` and `postgres` the backends; `factory.open_store` picks one from
`[store]` settings.  The store sits above types/scoring and below the exporters and the proxy.
"""

from ragtap.store.base import CapturedInteraction, CaptureStore, Label, Page, StoreError, StoreQuery, UnknownInteraction

__all__ = ["CaptureStore", "CapturedInteraction", "Label", "Page", "StoreError", "StoreQuery", "UnknownInteraction"]
