"""``hello-pgmem mcp`` (the MCP server) and ``hello-pgmem token`` (its bearer tokens)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from hello_pgmem.cli.app import FORWARDED_ALLOW_IPS, State, cli, emit, open_store
from hello_pgmem.core.errors import no_such
from hello_pgmem.mcp_server.limits import Limits

DEFAULT_LIMITS = Limits()
"""The options' defaults: the limits' own, written once (mcp_server/limits.py)."""


@cli.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: the address to listen on.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="HTTP: the port."
)
@click.option("--public-url", help="HTTP: the URL clients reach the server at (default http://HOST:PORT).")
@click.option(
    "--files-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder the file tools (rag_add_document, rag_ingest, a perceptual memory_add) read "
    "beneath. stdio: default the working directory. HTTP: each user's own folder lies beneath it "
    "(FILES_ROOT/<user>, or a {user} in the path); without it, no file is read.",
)
@click.option(
    "--rate",
    default=DEFAULT_LIMITS.calls_per_minute,
    show_default=True,
    type=click.IntRange(1),
    help="HTTP: requests a minute per token, every one counted (stdio: not throttled).",
)
@click.option(
    "--sessions-per-token",
    default=DEFAULT_LIMITS.sessions_per_token,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="HTTP: live MCP sessions per token; one more closes its oldest.",
)
@click.option(
    "--session-idle",
    default=DEFAULT_LIMITS.session_idle_s,
    show_default=True,
    type=click.FloatRange(1),
    help="HTTP: seconds a session may go without a request before it ends.",
)
@click.option(
    "--concurrency",
    default=DEFAULT_LIMITS.concurrent_calls,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Requests per token in progress at once.",
)
@click.option(
    "--timeout",
    default=DEFAULT_LIMITS.call_timeout_s,
    show_default=True,
    type=click.FloatRange(1),
    help="Seconds a call may take: its statements and loops stop there too.",
)
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), help="HTTP: serve HTTPS with it.")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), help="HTTP: the key of --certfile.")
@click.option(
    "--allow-privileged-role",
    is_flag=True,
    help="HTTP: serve even as a superuser, a BYPASSRLS role or the schema owner (no row-level security).",
)
@FORWARDED_ALLOW_IPS
@click.option(
    "--max-request-bytes",
    default=DEFAULT_LIMITS.max_request_bytes,
    show_default=True,
    type=click.IntRange(1024),
    help="Largest request.",
)
@click.pass_obj
def mcp(
    state: State,
    use_http: bool,
    host: str,
    port: int,
    public_url: str | None,
    files_root: Path | None,
    rate: int,
    sessions_per_token: int,
    session_idle: float,
    concurrency: int,
    timeout: float,
    certfile: str | None,
    keyfile: str | None,
    allow_privileged_role: bool,
    forwarded_allow_ips: str | None,
    max_request_bytes: int,
) -> None:
    """Serve the memory and rag tools to MCP clients (needs: pip install 'hello-pgmem[mcp]').

    Over stdio (the default), for a client that starts this command itself, every call works for
    --user and the knowledge-base --namespace. With --http, at http://HOST:PORT/mcp for remote
    clients: each request carries "Authorization: Bearer <token>", and the token (made with
    "hello-pgmem token create") decides the user and the namespaces; a request without a valid
    token gets 401. Run the server as the application role (DATABASE_URL of a role made by
    "hello-pgmem grant --app"): row-level security then holds every call to its user.

    Long because its docstring is the command's --help.
    """
    import anyio

    from hello_pgmem.access import Identity
    from hello_pgmem.access.exposure import cleartext_warning, privileged_refusal, privileged_role
    from hello_pgmem.mcp_server.http import serve_http
    from hello_pgmem.mcp_server.server import serve_stdio

    limits = Limits(
        calls_per_minute=rate,
        sessions_per_token=sessions_per_token,
        session_idle_s=session_idle,
        concurrent_calls=concurrency,
        call_timeout_s=timeout,
        max_request_bytes=max_request_bytes,
        files_root=files_root,
    )
    if bool(certfile) != bool(keyfile):
        raise click.UsageError("--certfile and --keyfile go together")
    if files_root is not None and "{user}" not in str(files_root) and not files_root.is_dir():
        raise click.BadParameter(
            "must be a folder (its subfolders are the users'), or hold {user}", param_hint="--files-root"
        )
    with open_store(background=True) as store:  # a server runs its embedding workers
        db = store.db
        if use_http:
            privileged = privileged_role(db)
            if privileged and not allow_privileged_role:
                raise click.ClickException(privileged_refusal(privileged, "remote callers"))
            warning = cleartext_warning(host, bool(certfile))
            if warning:
                click.echo(warning, err=True)
            scheme = "https" if certfile else "http"
            click.echo(f"serving MCP at {scheme}://{host}:{port}/mcp (Ctrl-C stops)", err=True)
            serve_http(
                db,
                host,
                port,
                limits,
                public_url,
                certfile=certfile,
                keyfile=keyfile,
                forwarded_allow_ips=forwarded_allow_ips,
            )
        else:
            anyio.run(serve_stdio, db, Identity(state.user, (state.namespace,)), limits)


@cli.group()
def token() -> None:
    """Bearer tokens of the MCP server over HTTP (run as the schema owner)."""


def for_user(state: State, user: str | None) -> str:
    """The user a token command is for: its own --user, else the global one."""
    return user or state.user


USER = click.option("--user", "user", help="The tokens' user (default: the global --user).")


MODES = ("read", "write", "admin")


def split_modes(namespaces: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """``NAME`` or ``NAME=MODE`` options as the namespaces and the modes they name."""
    names, modes = [], {}
    for item in namespaces:
        name, equals, mode = item.rpartition("=")
        if not equals:
            name = item
        elif mode not in MODES or not name:
            raise click.BadParameter(
                f"{item!r}: give NAME or NAME=MODE, the mode one of {', '.join(MODES)}",
                param_hint="--namespace",
            )
        else:
            modes[name] = mode
        names.append(name)
    return names, modes


@token.command("create")
@USER
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="A namespace the token may use, NAME or NAME=MODE (repeat).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="write",
    show_default=True,
    help="read: search and ask; write: also add, update, remove; admin: also clear. For the user's "
    "memory and every --namespace without a mode of its own.",
)
@click.option("--label", help="What the token is for.")
@click.option(
    "--days",
    type=click.IntRange(0),
    default=90,
    show_default=True,
    help="Expire after this many days (0: never).",
)
@click.pass_obj
def token_create(
    state: State, user: str | None, namespaces: tuple[str, ...], mode: str, label: str | None, days: int
) -> None:
    """Make a token for --user and print it (only its hash is stored: it cannot be shown again).

    Without --namespace the token's knowledge base is the user's own namespace, user:<user>.
    """
    from hello_pgmem.access import check_mode, create_token

    owner = for_user(state, user)
    names, modes = split_modes(namespaces)
    expires = datetime.now(UTC) + timedelta(days=days) if days else None
    with open_store() as store:
        db = store.db
        secret, token_id = create_token(
            db,
            owner,
            names,
            label,
            expires,
            mode=check_mode(mode),
            namespace_modes={n: check_mode(m) for n, m in modes.items()},
            lifetime=None,
        )
    payload = {
        "token": secret,
        "id": str(token_id),
        "user": owner,
        "namespaces": names,
        "mode": mode,
        "namespace_modes": modes,
        "expires_at": expires.isoformat() if expires else None,
    }
    until = f"until {expires:%Y-%m-%d}" if expires else "never expires"
    emit(state, payload, f"{secret}\n(id {token_id}, user {owner}, {mode}, {until}; store it now: not kept)")


@token.command("list")
@USER
@click.option("--all-users", is_flag=True, help="Every user's tokens (not only --user's).")
@click.pass_obj
def token_list(state: State, user: str | None, all_users: bool) -> None:
    """The tokens (never the secrets): id, user, namespaces, label, dates."""
    from hello_pgmem.access import TokenInfo, list_tokens

    with open_store() as store:
        db = store.db
        tokens = list_tokens(db, None if all_users else for_user(state, user))

    def namespaces(t: TokenInfo) -> str:
        named = [n + (f"={t.namespace_modes[n]}" if n in t.namespace_modes else "") for n in t.namespaces]
        return ", ".join(named) or t.user_id

    lines = [
        f"{t.id} {t.user_id} {t.mode} [{namespaces(t)}] {t.label or ''}"
        f"{' REVOKED' if t.revoked_at else ''} last used {t.last_used_at or 'never'}"
        for t in tokens
    ]
    emit(state, [vars(t) for t in tokens], "\n".join(lines) or "no tokens")


@token.command("revoke")
@USER
@click.argument("token_id")
@click.pass_obj
def token_revoke(state: State, user: str | None, token_id: str) -> None:
    """Revoke --user's token whose id starts with TOKEN_ID (at least 8 characters)."""
    from hello_pgmem.access import revoke_token

    owner = for_user(state, user)
    with open_store() as store:
        db = store.db
        revoked = revoke_token(db, token_id, owner)
    if not revoked:
        raise no_such("token", token_id, state.language)
    emit(state, [str(r) for r in revoked], f"revoked {', '.join(str(r) for r in revoked)}")
