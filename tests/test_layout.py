"""The package's structure, as the code states it: who may use memory's internals, where the
foundations live, and how long a module may grow."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "hello_pgmem"
PUBLIC_MEMORY = {
    "manager",
    "sessions",
    "table",
    "items",
    "decay",
    "classify",
    "reembed",
    "when",
    "in_transaction",
    "versions",
}
"""The modules of hello_pgmem.memory that other layers may import; the rest are its own."""
MAX_LINES = 400


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_only_the_memory_package_reaches_its_internals() -> None:
    offenders = []
    for path in modules():
        if path.is_relative_to(PACKAGE / "memory"):
            continue
        for name in imports(path):
            parts = name.split(".")
            if parts[:2] == ["hello_pgmem", "memory"] and len(parts) > 2 and parts[2] not in PUBLIC_MEMORY:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_the_package_root_holds_the_front_door_and_packages_only() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose == {"__init__.py", "store.py", "agent.py", "demo.py"}, sorted(loose)


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_a_function_over_60_lines_says_why_in_its_docstring() -> None:
    unexplained = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                long = node.end_lineno - node.lineno + 1 > 60
                if long and "Long because" not in (ast.get_docstring(node) or ""):
                    unexplained.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not unexplained, unexplained
