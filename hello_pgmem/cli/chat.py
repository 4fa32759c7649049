"""``hello-pgmem chat``: an interactive SimpleAgent with the memory and rag tools."""

from __future__ import annotations

import sys

import click

from hello_pgmem.cli.app import State, cli, open_store


@cli.command()
@click.option(
    "--loop/--no-loop", default=True, show_default=True, help="Run the long-term memory loop after each turn."
)
@click.pass_obj
def chat(state: State, loop: bool) -> None:
    """Talk to an agent that remembers --user (needs LLM_MODEL_ID); an empty line or "exit" ends."""
    from hello_pgmem.agent import HelloAgentsLLM, SimpleAgent
    from hello_pgmem.core.models import MEMORY_TYPES
    from hello_pgmem.tools import ToolRegistry

    with open_store(background=True) as store:
        llm = HelloAgentsLLM(settings=store.settings)
        registry = ToolRegistry(language=state.language)
        registry.register_tool(store.memory_tool(state.user, types=MEMORY_TYPES))
        registry.register_tool(store.rag_tool(state.namespace))
        memory = store.loop(llm) if loop else None
        agent = SimpleAgent(
            "hello-pgmem", llm, tool_registry=registry, memory_system=memory, user_id=state.user
        )
        stdin = sys.stdin
        while True:
            if stdin.isatty():
                click.echo("you> ", nl=False)
            line = stdin.readline()
            if not line or line.strip() in ("", "exit", "quit"):
                break
            click.echo(f"agent> {agent.run(line.strip())}")
