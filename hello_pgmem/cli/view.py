"""``hello-pgmem ui``: the read-only web view."""

from __future__ import annotations

import click

from hello_pgmem.cli.app import FORWARDED_ALLOW_IPS, State, cli, load_settings


@cli.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8377, show_default=True, type=click.IntRange(1, 65535), help="The port.")
@click.option(
    "--tokens",
    "use_tokens",
    is_flag=True,
    help="Ask for a bearer token at a login form, even on loopback (always off loopback).",
)
@click.option(
    "--allowed-host",
    "allowed",
    multiple=True,
    help="Off loopback: a name clients reach the view by; other Host headers get 421 (repeat).",
)
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), help="Serve HTTPS with it.")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), help="The key of --certfile.")
@click.option(
    "--allow-privileged-role",
    is_flag=True,
    help="With tokens, serve even as a superuser, a BYPASSRLS role or the schema owner.",
)
@FORWARDED_ALLOW_IPS
@click.pass_obj
def ui(
    state: State,
    host: str,
    port: int,
    use_tokens: bool,
    allowed: tuple[str, ...],
    certfile: str | None,
    keyfile: str | None,
    allow_privileged_role: bool,
    forwarded_allow_ips: str | None,
) -> None:
    """Serve a read-only web view of memories, searches, the graph and documents (needs: pip
    install 'hello-pgmem[ui]').

    On loopback it shows --user's memories and --namespace's documents, and answers only requests
    addressed to a loopback name. Off loopback (or with --tokens) it asks for a bearer token made
    by "hello-pgmem token create" and keeps a session of its own in an HttpOnly, SameSite=Strict
    cookie: the token's user and namespaces are what its holder sees, enforced by row-level
    security, so run it as the application role. Every transaction it opens is READ ONLY.
    """
    from hello_pgmem.access import Identity
    from hello_pgmem.access.exposure import (
        cleartext_warning,
        is_loopback,
        privileged_refusal,
        privileged_role,
    )
    from hello_pgmem.access.serving import serve
    from hello_pgmem.store import Store
    from hello_pgmem.ui import Login, ui_app

    if bool(certfile) != bool(keyfile):
        raise click.UsageError("--certfile and --keyfile go together")
    tokens = use_tokens or not is_loopback(host)
    settings = load_settings(read_only=True, retrieval_log=False)
    with Store(settings) as store:
        privileged = privileged_role(store.db)
        if privileged and tokens and not allow_privileged_role:
            raise click.ClickException(privileged_refusal(privileged, "token holders"))
        if privileged and not tokens:
            click.echo(
                f"warning: connected as {privileged}: row-level security does not bind it; the view "
                f"shows {state.user!r} alone by its own queries",
                err=True,
            )
        warning = cleartext_warning(host, bool(certfile))
        if warning:
            click.echo(warning, err=True)
        fixed = None if tokens else Identity(state.user, (state.namespace,))
        app = ui_app(store, Login(fixed, secure_cookie=bool(certfile)), hosts=allowed, bind_host=host)
        scheme = "https" if certfile else "http"
        who = "token holders" if tokens else f"user {state.user!r}"
        click.echo(f"serving the web view for {who} at {scheme}://{host}:{port}/ (Ctrl-C stops)", err=True)
        serve(app, host, port, certfile=certfile, keyfile=keyfile, forwarded_allow_ips=forwarded_allow_ips)
