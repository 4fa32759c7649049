"""The development server on a Docker engine: ``docker compose`` with the repository's compose file."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def available() -> bool:
    """A compose file next to the package (a source checkout) and an engine that answers."""
    return COMPOSE_FILE.exists() and answers()


def compose(*args: str) -> None:
    """Run ``docker compose`` with PGMEM_PORT and PGMEM_DB passed through to the compose file."""
    env = {
        **os.environ,
        "PGMEM_PORT": os.environ.get("PGMEM_PORT", "55432"),
        "PGMEM_DB": os.environ.get("PGMEM_DB", "pgmem"),
    }
    subprocess.run(["docker", "compose", "-f", str(COMPOSE_FILE), *args], check=True, env=env)
