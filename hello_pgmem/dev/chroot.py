"""The development server without Docker: a Debian 13 root built once with debootstrap under
``$PGMEM_HOME`` (default ``~/.local/share/hello-pgmem``), ``initdb`` inside it, and the server
started with ``pg_ctl`` in a chroot, listening on 127.0.0.1 (recipe in DEVELOPERS.md)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError
from hello_pgmem.core.settings import DEVELOPMENT_DATABASE, DEVELOPMENT_PORT, IDENTIFIER, development_url

log = logging.getLogger(__name__)

SUITE = "trixie"
PG_MAJOR = 17
PACKAGES = (
    f"postgresql-{PG_MAJOR}",
    f"postgresql-{PG_MAJOR}-pgvector",
    f"postgresql-{PG_MAJOR}-age",
)
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_PORT = DEVELOPMENT_PORT
DEFAULT_DBNAME = DEVELOPMENT_DATABASE
PG_BIN = f"/usr/lib/postgresql/{PG_MAJOR}/bin"
DATA_DIR = f"/var/lib/pgmem/{PG_MAJOR}/data"  # inside the root
LOG_FILE = f"/var/lib/pgmem/{PG_MAJOR}/server.log"  # inside the root
SOCKET_DIR = "/var/run/postgresql"  # inside the root

# AGE is not preloaded: AGE 1.5 in shared_preload_libraries breaks DROP TABLE in every database
# that lacks the extension (apache/age#2180, fixed in 1.8 by #2438). Instead age.so is linked
# into $libdir/plugins, where any role may LOAD it; hello_pgmem loads it per connection.
AGE_PLUGIN = f"/usr/lib/postgresql/{PG_MAJOR}/lib/plugins/age.so"
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": f"'{SOCKET_DIR}'",
    "max_connections": "200",
    "shared_buffers": "'512MB'",
    "work_mem": "'16MB'",
    "maintenance_work_mem": "'1GB'",
    "max_parallel_maintenance_workers": "1",
    "dynamic_shared_memory_type": "mmap",
    "log_min_messages": "warning",
}


@dataclass(frozen=True)
class DevDB:
    """Where the chroot-based development server lives."""

    home: Path
    port: int
    dbname: str

    @classmethod
    def from_env(cls) -> DevDB:
        home = Path(os.environ.get("PGMEM_HOME", "~/.local/share/hello-pgmem")).expanduser()
        port = int(os.environ.get("PGMEM_PORT", DEFAULT_PORT))
        dbname = os.environ.get("PGMEM_DB", DEFAULT_DBNAME)
        if not IDENTIFIER.match(dbname):
            raise ConfigurationError(f"PGMEM_DB must match ^[A-Za-z_][A-Za-z0-9_]*$, got {dbname!r}")
        return cls(home=home, port=port, dbname=dbname)

    @property
    def root(self) -> Path:
        return self.home / f"root-{SUITE}-pg{PG_MAJOR}"

    @property
    def url(self) -> str:
        return development_url(self.port, self.dbname)

    def inside(self, path: str) -> Path:
        """The host path of ``path`` inside the root."""
        return self.root / path.lstrip("/")


def run(cmd: Sequence[str], *, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess[str]:
    log.debug("running %s", " ".join(cmd))
    return subprocess.run(list(cmd), check=check, text=True, capture_output=capture)


def run_in_root(
    db: DevDB, *cmd: str, as_postgres: bool = True, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{PG_BIN}:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/var/lib/postgresql",
    }
    user = ["--userspec=postgres:postgres"] if as_postgres else []
    full = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "chroot", *user, str(db.root), *cmd]
    return run(full, check=check)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@contextlib.contextmanager
def locked(db: DevDB) -> Iterator[None]:
    db.home.mkdir(parents=True, exist_ok=True)
    with open(db.home / "devdb.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def debian_mirror() -> str:
    """The Debian mirror this host already uses, or ``deb.debian.org``."""
    if env := os.environ.get("PGMEM_DEBIAN_MIRROR"):
        return env
    candidates: list[str] = []
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            words = line.split()
            for word in words:
                if word.startswith(("http://", "https://")) and word.rstrip("/").endswith("/debian"):
                    candidates.append(word.rstrip("/"))
    return candidates[0] if candidates else DEFAULT_MIRROR


def can_chroot() -> bool:
    return os.geteuid() == 0 and Path("/etc/debian_version").exists()


def build_root(db: DevDB) -> None:
    """Build the Debian 13 root with PostgreSQL 17, pgvector and AGE (once, about a minute)."""
    if (db.inside(PG_BIN) / "postgres").exists():
        return
    if shutil.which("debootstrap") is None:
        log.warning("installing debootstrap with apt-get")
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", "debootstrap"])
    partial = db.root.with_name(db.root.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    db.home.mkdir(parents=True, exist_ok=True)
    mirror = debian_mirror()
    log.warning(
        "building a Debian %s root with PostgreSQL %s in %s from %s",
        SUITE,
        PG_MAJOR,
        db.root,
        mirror,
    )
    cmd = [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(partial),
        mirror,
    ]
    done = run(cmd, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise DatabaseUnavailableError(f"debootstrap failed (exit {done.returncode}):\n{tail}")
    partial.rename(db.root)


def _postgres_ids(db: DevDB) -> tuple[int, int]:
    for line in db.inside("/etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == "postgres":
            return int(fields[2]), int(fields[3])
    raise DatabaseUnavailableError(f"no postgres user in {db.root}/etc/passwd: rebuild the root")


def server_config(db: DevDB) -> str:
    """The text of pgmem.conf, our settings included from postgresql.conf."""
    lines = [f"{key} = {value}" for key, value in SERVER_SETTINGS.items()]
    return "# written by hello_pgmem.devdb\n" + f"port = {db.port}\n" + "\n".join(lines) + "\n"


def link_age_plugin(db: DevDB) -> None:
    plugin = db.inside(AGE_PLUGIN)
    if not plugin.exists():
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.symlink_to("../age.so")


def write_config(db: DevDB) -> bool:
    """Write pgmem.conf when it differs from ours; True when it changed."""
    conf = db.inside(DATA_DIR) / "pgmem.conf"
    wanted = server_config(db)
    if conf.exists() and conf.read_text() == wanted:
        return False
    uid, gid = _postgres_ids(db)
    conf.write_text(wanted)
    os.chown(conf, uid, gid)
    return True


def init_cluster(db: DevDB) -> None:
    """Create the data directory with our settings, once."""
    if (db.inside(DATA_DIR) / "PG_VERSION").exists():
        return
    uid, gid = _postgres_ids(db)
    for path in (str(Path(DATA_DIR).parent), SOCKET_DIR):
        host = db.inside(path)
        host.mkdir(parents=True, exist_ok=True)
        os.chown(host, uid, gid)
    partial = db.inside(DATA_DIR + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    run_in_root(
        db,
        f"{PG_BIN}/initdb",
        "-D",
        DATA_DIR + ".partial",
        "--username=postgres",
        "--auth-local=trust",
        "--auth-host=trust",
        "--encoding=UTF8",
        "--no-locale",
    )
    with open(partial / "postgresql.conf", "a") as handle:
        handle.write("\ninclude_if_exists = 'pgmem.conf'\n")
    partial.rename(db.inside(DATA_DIR))


def running(db: DevDB) -> bool:
    if not (db.inside(DATA_DIR) / "PG_VERSION").exists():
        return False
    return run_in_root(db, f"{PG_BIN}/pg_ctl", "status", "-D", DATA_DIR, check=False).returncode == 0


def wait_ready(db: DevDB, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = run_in_root(
            db, f"{PG_BIN}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(db.port), check=False
        )
        if done.returncode == 0:
            return
        time.sleep(0.2)
    raise DatabaseUnavailableError(f"server on port {db.port} did not accept connections in {timeout_s:.0f}s")


def psql(db: DevDB, sql: str, dbname: str = "postgres") -> str:
    """Run ``sql`` with the root's psql on the server at ``db.port``; its output, unaligned."""
    done = run_in_root(
        db,
        "psql",
        "-X",
        "-q",
        "-At",
        "-h",
        "127.0.0.1",
        "-p",
        str(db.port),
        "-U",
        "postgres",
        "-d",
        dbname,
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
        check=False,
    )
    if done.returncode != 0:
        raise DatabaseUnavailableError(f"psql on port {db.port}: {done.stderr.strip()}")
    return done.stdout.strip()


def start_server(db: DevDB) -> None:
    changed = write_config(db)
    if running(db) and port_open(db.port):
        if changed:
            log.warning("settings changed: restarting the development server")
            run_in_root(db, f"{PG_BIN}/pg_ctl", "-D", DATA_DIR, "-m", "fast", "-w", "stop")
        else:
            return
    if port_open(db.port):
        raise DatabaseUnavailableError(
            f"port {db.port} is taken by another program: set PGMEM_PORT to a free port"
        )
    uid, gid = _postgres_ids(db)
    socket_dir = db.inside(SOCKET_DIR)
    socket_dir.mkdir(parents=True, exist_ok=True)
    os.chown(socket_dir, uid, gid)
    done = run_in_root(
        db,
        f"{PG_BIN}/pg_ctl",
        "-D",
        DATA_DIR,
        "-l",
        LOG_FILE,
        "-w",
        "-t",
        "60",
        "-o",
        f"-p {db.port}",
        "start",
        check=False,
    )
    if done.returncode != 0:
        server_log = db.inside(LOG_FILE)
        tail = server_log.read_text(errors="replace").splitlines()[-20:] if server_log.exists() else []
        raise DatabaseUnavailableError("pg_ctl start failed:\n" + "\n".join([done.stderr.strip(), *tail]))
    wait_ready(db)


def ensure_database(db: DevDB) -> None:
    exists = psql(db, f"SELECT 1 FROM pg_database WHERE datname = '{db.dbname}'")
    if exists != "1":
        psql(db, f'CREATE DATABASE "{db.dbname}"')


def chroot_up(db: DevDB) -> str:
    with locked(db):
        build_root(db)
        link_age_plugin(db)
        init_cluster(db)
        start_server(db)
        ensure_database(db)
    return db.url
