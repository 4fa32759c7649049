"""Running a sample of code as a user would: a Python process of its own, from the repository's
root, with the environment given."""

from __future__ import annotations

import subprocess
import sys

from tests.deployments import REPO


def run_python(code: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (at most 300 s); its exit code, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-"],
        input=code,
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
