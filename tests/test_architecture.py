"""The import graph follows docs/architecture.md: every part of ragtap imports only parts of lower layers.

Read from the source with `ast` (nothing is imported).  Imports inside `if TYPE_CHECKING:` blocks create no
runtime dependency; they are allowed only where listed in TYPE_ONLY below (a lower type naming a higher part's
result), so that each such exception is a decision, not an accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragtap"

# Layer of each part (a folder or a top-level module of ragtap/), lowest first.  Keep in step with
# docs/architecture.md.
LAYERS: dict[str, int] = {
    "__init__": 0, "types": 0, "exchange": 0, "judgement": 0, "auth": 0, "prompts": 0, "tokens": 0, "tokens_data": 0, "retry": 0,
    "scoring": 1, "recognise": 1, "split": 1, "embedding": 1, "records": 1, "cost": 1, "privacy": 1, "verifier": 1,
    "judge": 2, "testing": 2, "store": 2, "guard": 2,
    "exporters": 3, "demo": 3, "triage": 3,
    "config": 4,
    "pipeline": 5,
    "wiring": 6,
    "proxy": 7,
    "evaluation": 8, "supervisor": 8,
    "commands": 9, "cli": 10, "__main__": 11,
}
TYPE_ONLY: set[tuple[str, str]] = {
    ("types", "exchange"),  # Interaction.exchange: the proxy's record (exchange is layer 0 too)
    ("types", "judgement"),  # Interaction.judgement: the LLM judge's result (a layer-0 record too)
    ("judge", "embedding"),
}


def _part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported ragtap module, only under TYPE_CHECKING) for every ragtap import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ragtap" and node.level == 0:
            found.append((node.module, id(node) in type_only))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, id(node) in type_only) for alias in node.names if alias.name.split(".")[0] == "ragtap")
    return found


def _source_part(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_every_part_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and (p.is_dir() or p.suffix == ".py")}
    assert parts <= set(LAYERS), f"place these in LAYERS and docs/architecture.md: {sorted(parts - set(LAYERS))}"


def test_no_import_points_up_or_sideways() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _source_part(path)
        for module, type_only in _imports(path):
            target = _part(module)
            if target == source:
                continue
            if LAYERS[target] < LAYERS[source] or (type_only and (source, target) in TYPE_ONLY):
                continue
            violations.append(f"{path.relative_to(PACKAGE.parent)}: {source} (layer {LAYERS[source]}) imports {module} (layer {LAYERS[target]})")
    assert not violations, "\n".join(violations)


def test_the_scoring_core_does_no_io() -> None:
    """scoring/ is pure: texts and vectors in, scores and verdicts out."""
    forbidden = {"aiohttp", "asyncio", "socket", "httpx", "openai", "onnxruntime", "sqlite3", "requests", "urllib", "logging"}
    for path in (PACKAGE / "scoring").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert name.split(".")[0] not in forbidden, f"{path.name} imports {name}"


# `from module import _name` across modules: a private name is its module's own business.  These imports predate
# the rule (each within one package); the list may only shrink.
PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = {
    ("ragtap/embedding/minilm_int8.py", "ragtap.embedding.minilm"),
    ("ragtap/exporters/otel/__init__.py", "ragtap.exporters.otel.sdk"),
    ("ragtap/exporters/otel/evaluation.py", "ragtap.exporters.otel.attributes"),
    ("ragtap/exporters/otel/exporter.py", "ragtap.exporters.otel.attributes"),
    ("ragtap/exporters/otel/exporter.py", "ragtap.exporters.otel.evaluation"),
    ("ragtap/exporters/otel/exporter.py", "ragtap.exporters.otel.instruments"),
    ("ragtap/store/factory.py", "ragtap.store.postgres"),
}


def test_no_module_imports_another_modules_private_names() -> None:
    """What two modules share is public: a route module (proxy/chat.py, responses.py, messages.py) takes the
    exchange path's steps from `ragtap.proxy.exchange_path`, never another route's `_helpers`."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ragtap":
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.add((str(path.relative_to(PACKAGE.parent)), node.module))
    assert found <= PRIVATE_IMPORTS_ALLOWED, f"private names imported across modules: {sorted(found - PRIVATE_IMPORTS_ALLOWED)}"
    assert not (PRIVATE_IMPORTS_ALLOWED - found), f"fixed: remove from PRIVATE_IMPORTS_ALLOWED: {sorted(PRIVATE_IMPORTS_ALLOWED - found)}"


def test_the_routes_share_the_exchange_path_not_each_other() -> None:
    """A route module of the proxy imports no other route module: what they share lives in proxy/exchange_path/."""
    routes = {"chat", "chat_stream", "responses", "responses_stream", "messages", "messages_stream"}
    sharing = {"responses": {"responses_stream", "responses_store"}, "chat": {"chat_stream"}, "messages": {"messages_stream"}}
    for path in sorted((PACKAGE / "proxy").glob("*.py")):
        if path.stem not in routes:
            continue
        for module, _ in _imports(path):
            pieces = module.split(".")
            if len(pieces) >= 3 and pieces[1] == "proxy" and pieces[2] in routes:
                assert pieces[2] in sharing.get(path.stem, set()), f"{path.name} imports {module}: share it through ragtap.proxy.exchange_path"
