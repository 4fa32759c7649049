"""Who may reach a store from outside the process, and how servers face the network: identities,
bearer tokens, the failed-credential throttle, which roles and hosts a server accepts, and
bounded HTTP serving. The MCP server, the web view and the command line import it."""

from hello_pgmem.access.identity import MODES, PERSONAL, Identity, Mode, check_mode, personal_namespace
from hello_pgmem.access.tokens import TokenInfo, create_token, list_tokens, resolve_token, revoke_token

__all__ = [
    "MODES",
    "PERSONAL",
    "Identity",
    "Mode",
    "TokenInfo",
    "check_mode",
    "create_token",
    "list_tokens",
    "personal_namespace",
    "resolve_token",
    "revoke_token",
]
