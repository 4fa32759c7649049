"""The package as a user installs it: sdist and wheel built, the wheel installed into a fresh
virtual environment outside the checkout, and the command line used from another directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.deployments import REPO

pytestmark = pytest.mark.slow


def run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, text=True, capture_output=True, check=False, timeout=900
    )
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def building(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel, built from the sdist (so the sdist is proved complete too), and what the build
    printed."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        cwd=out, text=True, capture_output=True, check=False, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"build failed:\n{done.stdout}\n{done.stderr}"
    wheels = list(out.glob("hello_pgmem-*.whl"))
    assert len(wheels) == 1 and list(out.glob("hello_pgmem-*.tar.gz"))
    return wheels[0], done.stdout + done.stderr


@pytest.fixture(scope="module")
def built(building: tuple[Path, str]) -> Path:
    return building[0]


def test_setuptools_warns_of_nothing(building: tuple[Path, str]) -> None:
    """Every data folder is a package of the configuration: setuptools prints none of its warnings
    (a data folder absent from ``packages`` printed a 40-line block each)."""
    for sign in ("absent from", "BuildBackendWarning", "DeprecationWarning"):
        assert sign not in building[1], building[1][-3000:]


def test_the_wheel_holds_every_subpackage_and_resource(built: Path) -> None:
    """Every module of the package with its templates and styles, and sql/ and alembic/ mapped into it."""
    names = set(zipfile.ZipFile(built).namelist())
    kept = (".py", ".sql", ".mako", ".typed", ".html", ".css")
    source = {
        str(p.relative_to(REPO))
        for p in (REPO / "hello_pgmem").rglob("*")
        if p.is_file() and p.suffix in kept and "__pycache__" not in p.parts
    }
    for folder in ("sql", "alembic"):
        source |= {
            f"hello_pgmem/{p.relative_to(REPO)}"
            for p in (REPO / folder).rglob("*")
            if p.is_file() and p.suffix in kept and "__pycache__" not in p.parts
        }
    assert any(name.startswith("hello_pgmem/alembic/versions/") for name in source)
    assert "hello_pgmem/ui/templates/search.html" in source
    assert source <= names, f"missing from the wheel: {sorted(source - names)}"


def test_installed_wheel_migrates_adds_and_searches(
    built: Path, tmp_path: Path, new_database: Callable[[], str]
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    run(bin_dir / "pip", "install", "--quiet", built, cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DATABASE_URL": new_database(),
        "EMBED_MODEL_TYPE": "hashing",
        "PGMEM_USER": "wheel_user",
    }
    cli = bin_dir / "hello-pgmem"
    assert "Usage: hello-pgmem" in run(cli, "--help", cwd=elsewhere, env=env)
    assert "(head)" in run(cli, "migrate", cwd=elsewhere, env=env)
    info = json.loads(run(cli, "--json", "info", cwd=elsewhere, env=env))
    assert info["revision"] == info["head"]
    added = json.loads(
        run(cli, "--json", "add", "the wheel stores memories", "--type", "episodic", cwd=elsewhere, env=env)
    )
    found = json.loads(run(cli, "--json", "search", "wheel memories", cwd=elsewhere, env=env))
    assert [item["id"] for item in found] == [added["id"]]
    imported = run(
        bin_dir / "python",
        "-c",
        "import hello_pgmem, sys; print(hello_pgmem.__file__)",
        cwd=elsewhere,
        env=env,
    )
    assert str(env_dir) in imported and str(REPO) not in imported


def test_make_install_prints_no_warning(tmp_path: Path) -> None:
    """``make install``'s editable install, as the Makefile runs it (without the extras' packages):
    setuptools says nothing (its "Editable installation" notice is information the recipe leaves
    out)."""
    recipe = next(
        line.strip()
        for line in (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
        if "pip install --quiet -e '.[dev,docs,e5]'" in line
    )
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    run(env_dir / "bin" / "pip", "install", "--quiet", "--upgrade", "pip", cwd=tmp_path)  # as make install
    command = recipe.replace("$(BIN)/pip", str(env_dir / "bin" / "pip")).replace("'.[dev,docs,e5]'", ".")
    done = subprocess.run(
        ["bash", "-c", f"{command} --no-deps"], cwd=REPO, text=True, capture_output=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = "\n".join(
        line for line in (done.stdout + done.stderr).splitlines() if "is ignored: it is neither" not in line
    )  # this machine's pip configuration names a local index folder that may be absent
    assert "Warning" not in printed and "Editable installation" not in printed, printed[-3000:]
