"""The `ragtap` command: one sub-command per module in ragtap/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> module in ragtap.commands; each module has `add_parser(subparsers)` and `run(args) -> int`
COMMANDS: dict[str, str] = {
    "serve": "serve",
    "worker": "worker",
    "demo": "demo",
    "score": "score",
    "experiment": "experiment",
    "calibrate": "calibrate",
    "judge": "judge",
    "recognise": "recognise",
    "export": "export",
}


def main(argv: list[str] | None = None) -> int:
    from ragtap import __version__

    parser = argparse.ArgumentParser(prog="ragtap", description="Watch RAG answers: an OpenAI-compatible proxy that scores grounding.")
    parser.add_argument("--version", action="version", version=f"ragtap {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"ragtap.commands.{module_name}")
        module.add_parser(subparsers)
        modules[name] = module
    args = parser.parse_args(argv)
    from ragtap.commands.common import CommandError
    from ragtap.config import ConfigError
    from ragtap.evaluation.extras import MissingExtra
    from ragtap.records import RecordError

    try:
        return int(modules[args.command].run(args) or 0)
    except ConfigError as error:
        print(f"ragtap: config error: {error}", file=sys.stderr)
    except (CommandError, RecordError, MissingExtra) as error:
        print(f"ragtap: {error}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
