"""The MCP server: the memory and rag tools for any MCP client, scoped to one user per call.

``hello-pgmem mcp`` serves over stdio (the user from ``--user``) or streamable HTTP (the user from
a bearer token, see :mod:`hello_pgmem.access`). Needs the ``mcp`` extra.
"""
