"""The hello-pgmem command line (see app.py); importing the modules registers their commands."""

from hello_pgmem.cli import admin, changes, chat, embedding_queue, knowledge, memory, ops, serve, view
from hello_pgmem.cli.app import cli, main

__all__ = [
    "admin",
    "changes",
    "chat",
    "cli",
    "embedding_queue",
    "knowledge",
    "main",
    "memory",
    "ops",
    "serve",
    "view",
]
