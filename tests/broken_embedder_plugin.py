"""A RAGTAP_PLUGINS module for tests/test_serve_workers.py: an embedder that cannot be built (as a missing model
file would make it), selected with RAGTAP_EMBEDDER=broken."""

from ragtap.embedding.factory import register_embedder


def _broken(**_options):  # type: ignore[no-untyped-def]
    raise RuntimeError("the model file is not there")


register_embedder("broken", _broken)
