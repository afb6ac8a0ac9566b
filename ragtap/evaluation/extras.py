"""The experiments' optional packages (`pip install 'ragtap[eval]'`): a clear one-line error when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(RuntimeError):
    """An experiment needs a package of the `eval` extra that is not installed."""


def require(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        package = module.split(".")[0]
        raise MissingExtra(f"{package} is not installed; the experiments need the eval extra: pip install 'ragtap[eval]'") from error
