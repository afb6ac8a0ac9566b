"""ragtap: an OpenAI-compatible proxy that watches RAG answers (see README.md and docs/architecture.md)."""

__version__ = "0.2.0"  # the one place the version is written (pyproject.toml reads it)
