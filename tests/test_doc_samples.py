"""Every Python sample and every ``hello-pgmem`` command of README.md and docs/ runs as printed,
against a database of its own (docs/sql.md's SQL is run by test_sql_docs.py).

Each sample runs in a process of its own, from the repository's root, with DATABASE_URL naming
a migrated database, the hashing embedder, and a chat model faked at the HTTP boundary. A shell
block runs line by line; the lines that start a server, install packages, build or run the
development server or a Citus cluster, or name another machine are listed below with the reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hello_pgmem import Settings
from hello_pgmem.ops import migrate
from tests.fake_openai import FakeOpenAI, serve
from tests.samples import run_python

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))

NOT_RUN_HERE = {
    "make ": "make demo and make test are what runs this suite",
    "scripts/devdb citus": "a Citus cluster, where one is installed (test_citus.py)",
    "DATABASE_URL=$(scripts/devdb citus url)": "a Citus cluster, where one is installed (test_citus.py)",
    "pip install": "installs packages",
    "hello-pgmem ui": "starts a server (test_ui.py drives it)",
    "hello-pgmem --user alice --namespace handbook ui": "starts a server (test_ui.py drives it)",
    "DATABASE_URL=postgresql://": "names another machine's database (test_security.py deploys the same roles)",
    "hello-pgmem token revoke": "names a token of the list (test_mcp.py revokes one)",
}


def blocks(kind: str) -> list[tuple[str, str]]:
    """(``page:line``, code) of every fenced block of ``kind`` in the pages."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(rf"^```{kind}\n(.*?)^```", text, re.M | re.S):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", match.group(1)))
    return found


PYTHON = blocks("python")
COMMANDS = [
    (where, line.split("  #")[0].strip())
    for where, block in blocks("(?:sh|bash)")
    for line in block.splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]


@pytest.fixture(scope="module")
def environment(new_database: Callable[[], str]) -> Iterator[dict[str, str]]:
    """A migrated database and a fake chat model, as the environment of each sample."""
    url = new_database()
    migrate.upgrade(Settings(database_url=url))
    with serve(FakeOpenAI()) as fake:
        yield {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBED_", "RERANK_"))},
            "DATABASE_URL": url,
            "EMBED_MODEL_TYPE": "hashing",
            "LLM_MODEL_ID": "fake-chat",
            "LLM_BASE_URL": fake.base_url,
            "LLM_API_KEY": "not-needed",
        }


def test_the_pages_have_samples() -> None:
    assert len(PYTHON) >= 8 and len(COMMANDS) >= 10


@pytest.mark.parametrize(("where", "code"), PYTHON, ids=[w for w, _ in PYTHON])
def test_python_sample_runs(environment: dict[str, str], where: str, code: str) -> None:
    ran = run_python(code, environment)
    assert ran.returncode == 0, f"{where}\n{ran.stderr[-3000:]}"


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[f"{w} {c[:40]}" for w, c in COMMANDS])
def test_shell_sample_runs(environment: dict[str, str], where: str, command: str) -> None:
    reason = next((why for start, why in NOT_RUN_HERE.items() if command.startswith(start)), None)
    if reason is not None:
        assert (
            command.split()[0] in ("make", "scripts/devdb", "pip", "hello-pgmem") or "=" in command.split()[0]
        )
        return  # listed above, with its reason
    assert command.startswith("hello-pgmem "), f"{where}: a shell sample this runner does not know: {command}"
    ran = subprocess.run(
        [HELLO_PGMEM, *shell_words(command)[1:]],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode in (0, 3) and "Traceback" not in ran.stderr, (
        f"{where}: {command}\n{ran.stderr[-2000:]}"
    )


def shell_words(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def test_python_md_last_april_finds_last_aprils_memory(environment: dict[str, str]) -> None:
    where, code = next((w, c) for w, c in PYTHON if w.startswith("docs/python.md") and "去年四月" in c)
    ran = run_python(code, environment)
    assert ran.returncode == 0, f"{where}\n{ran.stderr[-3000:]}"
    assert "李四去杭州参加了婚礼 1.0" in ran.stdout.splitlines()
