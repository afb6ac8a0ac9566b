"""What several sub-commands share: user errors and reading an interaction file."""

from __future__ import annotations

from pathlib import Path

from ragtap.records import read_interactions
from ragtap.types import Interaction


class CommandError(Exception):
    """A mistake of the user's (missing file, bad option): printed as `ragtap: <message>`, exit code 2."""


def positive_int(text: str) -> int:
    """argparse type for counts: `--batch 0` is a usage error, not a command that loops forever or divides by 0."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def output_file(name: str):  # type: ignore[no-untyped-def]
    """Open `--out` for writing, or CommandError naming the problem (a missing folder, no permission)."""
    try:
        return open(name, "wb")  # noqa: SIM115 - the caller closes it
    except OSError as error:
        raise CommandError(f"cannot write {name}: {error.strerror or error}") from None


def read_interaction_file(name: str) -> list[Interaction]:
    """All interactions of a JSONL file; RecordError (naming file:line) for a malformed line."""
    path = Path(name)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    return list(read_interactions(path))


def store_settings(config_path: str | None, where: str | None):  # type: ignore[no-untyped-def]
    """The `[store]` settings of the config, with `where` (a SQLite path or a postgresql:// URL) in place of
    the configured location when given.  CommandError when neither names a store."""
    import dataclasses

    from ragtap.config import load_config

    settings = load_config(config_path).store
    if where:
        is_url = where.startswith(("postgresql://", "postgres://"))
        settings = dataclasses.replace(settings, url=where if is_url else None, path=None if is_url else where)
        if not is_url and not Path(where).is_file():
            raise CommandError(f"no capture store at {where}")
    if not (settings.path or settings.url):
        raise CommandError("no capture store: set [store] path or url in the config (--config), or pass --store")
    if settings.path and not settings.url and not Path(settings.path).is_file():  # read, never create an empty one
        raise CommandError(f"no capture store at {settings.path} (`ragtap serve` writes it there by default)")
    return dataclasses.replace(settings, capture="all" if settings.capture == "none" else settings.capture)


PLUGINS_ENV = "RAGTAP_PLUGINS"


def load_plugins(environ: dict[str, str] | None = None) -> None:
    """Import the modules named in RAGTAP_PLUGINS (comma-separated) before the config is read: a plugin registers
    an embedder (`ragtap.embedding.factory.register_embedder`) or an exporter (`ragtap.wiring.register_exporter`)
    that the config then selects by name, in `serve` and `worker` processes alike."""
    import importlib
    import os

    names = (os.environ if environ is None else environ).get(PLUGINS_ENV, "")
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise CommandError(f"{PLUGINS_ENV}: cannot import {name!r} ({error})") from None
