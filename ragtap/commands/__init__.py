"""Sub-commands of the `ragtap` CLI; each module has `add_parser(subparsers)` and `run(args) -> int`."""
