"""The hello-pgmem command line (see app.py); importing the modules registers their commands."""

from hello_pgmem.cli import admin, changes, chat, knowledge, memory, ops, queue, serve, view
from hello_pgmem.cli.app import cli, main

__all__ = ["admin", "changes", "chat", "cli", "knowledge", "main", "memory", "ops", "queue", "serve", "view"]
