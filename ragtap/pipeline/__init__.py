"""Embedding + scoring of interactions, shared by the proxy (online queue) and the CLI (offline files)."""
