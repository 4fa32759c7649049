"""``python -m hello_pgmem.dev up|down|status|url|psql|citus`` (what scripts/devdb runs)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Sequence

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError
from hello_pgmem.dev import DevDB, database_url, down, status, up


def citus(command: str) -> int:
    """``devdb citus up|down|status|url|installed``: the local Citus cluster (hello_pgmem.dev.citus)."""
    from hello_pgmem.dev.citus import CitusCluster, installed

    cluster = CitusCluster(DevDB.from_env())
    if command == "up":
        print(cluster.up())
    elif command == "installed":
        return 0 if installed(cluster.db) else 1
    elif command == "down":
        stopped = cluster.down()
        print(f"stopped {', '.join(stopped)}" if stopped else f"no Citus node runs under {cluster.db.home}")
    elif command == "status":
        ok, text = cluster.status()
        print(text)
        return 0 if ok else 1
    elif command == "url":
        print(cluster.url())
    else:
        print(f"usage: devdb citus up|down|status|url|installed (got {command!r})", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "status"
    logging.basicConfig(level=logging.WARNING, format="devdb: %(message)s")
    try:
        if command == "up":
            print(up())
        elif command == "down":
            print(down())
        elif command == "status":
            ok, text = status()
            print(text)
            return 0 if ok else 1
        elif command == "url":
            print(database_url())
        elif command == "citus":
            return citus(args[1] if len(args) > 1 else "status")
        elif command == "psql":
            db = DevDB.from_env()
            target = database_url()
            if shutil.which("psql"):
                os.execvp("psql", ["psql", target, *args[1:]])
            env = [
                "env",
                "-i",
                "PATH=/usr/bin:/bin",
                "LANG=C.UTF-8",
                "TERM=" + os.environ.get("TERM", "dumb"),
            ]
            os.execvp("env", [*env, "chroot", str(db.root), "psql", target, *args[1:]])
        else:
            print(f"usage: devdb up|down|status|url|psql|citus (got {command!r})", file=sys.stderr)
            return 2
    except (ConfigurationError, DatabaseUnavailableError) as exc:
        print(f"devdb: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
