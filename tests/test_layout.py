"""The package's structure, as the code states it: privacy by name, no import cycle, the package
root, and how long a module or a function may grow."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "hello_pgmem"
MAX_LINES = 400
LONGER = {"memory/manager.py": 470}
"""The class that lists the memory API whole, one method per operation, each a check and a call."""


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every hello_pgmem module ``path`` imports, at any depth of its code, those under ``if
    TYPE_CHECKING`` too (``from a.b import c`` gives ``a.b``, and ``a.b.c`` when that is a module)."""
    found: set[str] = set()
    known = {module_name(p) for p in modules()}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)
    return {name for name in found if name in known}


def test_no_module_imports_another_packages_private_module() -> None:
    """A module named ``_x`` is its package's own: nothing outside that package imports it."""
    offenders = []
    for path in modules():
        importer = module_name(path)
        for name in imports(path):
            parts = name.split(".")
            for depth, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:depth])
                    if importer != owner and not importer.startswith(owner + "."):
                        offenders.append(f"{importer} imports {name}")
                    break
    assert not offenders, "\n".join(offenders)


def test_the_import_graph_has_no_cycle() -> None:
    graph = {module_name(path): imports(path) for path in modules()}
    for name in graph:  # a package's __init__ is imported with each of its modules: not a cycle
        graph[name] = {m for m in graph[name] if m != name and not name.startswith(m + ".")}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def package_of(module: str) -> str:
    """The subpackage a module belongs to (``memory`` for ``hello_pgmem.memory._search``), or the
    front door for the package root's modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "(front door)"


def test_the_subpackages_are_layers() -> None:
    """No import cycle between subpackages and the front door (the root's modules), those under
    TYPE_CHECKING included: each layer imports only the ones below it (the command line, the web
    view and the MCP server stand on the front door, which stands on the rest)."""
    graph: dict[str, set[str]] = {}
    for path in modules():
        importer = package_of(module_name(path))
        for name in imports(path) - {"hello_pgmem"}:  # `from hello_pgmem import embedding_queue` is embedding_queue
            if package_of(name) != importer:
                graph.setdefault(importer, set()).add(package_of(name))

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert [p for p in graph if p in reaches(p)] == []


def test_nothing_in_the_repository_edits_sys_path() -> None:
    """The benchmarks are a package run from the root (``python -m bench.<script>``), the tests import
    them by name: no module finds another by a path of its own."""
    root = PACKAGE.parent
    edits = [
        str(p.relative_to(root))
        for folder in ("hello_pgmem", "tests", "bench", "alembic", "scripts")
        for p in (root / folder).rglob("*.py")
        if "sys.path" in p.read_text(encoding="utf-8") and p != Path(__file__).resolve()
    ]
    assert edits == []


def test_the_benchmarks_import_each_other_by_package_name() -> None:
    """A benchmark imports another as ``bench.<name>``, at any depth of its code: run as a module
    from the root, a bare ``import harness`` finds nothing."""
    bench = PACKAGE.parent / "bench"
    names = {p.stem for p in bench.glob("*.py")}
    bare = []
    for path in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            )  # fmt: skip
            bare += [f"{path.name}: {name}" for name in imported if name.split(".")[0] in names]
    assert bare == []


def test_a_benchmark_script_imports_library_modules_only() -> None:
    """The benchmarks share code through the modules that run nothing of their own (no ``__main__``:
    harness, datasets, workload, loads, scenarios, the twin, ...); no script imports another."""
    bench = PACKAGE.parent / "bench"
    scripts = {p.stem for p in bench.glob("*.py") if "__main__" in p.read_text(encoding="utf-8")}
    crossing = []
    for path in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "bench":
                used = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
                used = {(node.module or "").split(".")[1]}
            else:
                continue
            crossing += [f"{path.stem} imports {name}" for name in sorted(used & scripts)]
    assert crossing == []


def test_the_package_root_holds_the_front_door_and_packages_only() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose == {"__init__.py", "store.py", "agent.py", "demo.py"}, sorted(loose)


def test_no_module_is_over_400_lines() -> None:
    long = {
        name: n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines()))
        > LONGER.get(name := str(p.relative_to(PACKAGE)), MAX_LINES)
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


def test_every_benchmark_result_is_cited_or_a_scripts_latest_output() -> None:
    """bench/results keeps what the docs cite and each script's latest output (bench/README.md)."""
    root = PACKAGE.parent
    documents = [*root.glob("docs/*.md"), *root.glob("*.md"), *root.glob("*/README.md")]
    cited = "\n".join(path.read_text(encoding="utf-8") for path in documents)
    latest = re.compile(r"(retrieval|longmemeval)-[a-z0-9-]+\.json|rag_fusion\.json|summary\.md|retrieval\.md")
    results = sorted((root / "bench" / "results").iterdir())
    uncited = [p.name for p in results if p.name not in cited and not latest.fullmatch(p.name)]
    assert results and uncited == []
