"""``hello-pgmem chat``: an interactive SimpleAgent with the memory and rag tools."""

from __future__ import annotations

import sys

import click

from hello_pgmem.cli.app import State, cli, database


@cli.command()
@click.option(
    "--loop/--no-loop", default=True, show_default=True, help="Run the long-term memory loop after each turn."
)
@click.pass_obj
def chat(state: State, loop: bool) -> None:
    """Talk to an agent that remembers --user (needs LLM_MODEL_ID); an empty line or "exit" ends."""
    from hello_pgmem.agent import HelloAgentsLLM, SimpleAgent
    from hello_pgmem.core.models import MEMORY_TYPES
    from hello_pgmem.embedding import create_embedder
    from hello_pgmem.loop.system import AgentMemorySystem
    from hello_pgmem.tools import MemoryTool, RAGTool, ToolRegistry

    with database() as db:
        llm = HelloAgentsLLM(settings=db.settings)
        embedder = create_embedder(db.settings)
        registry = ToolRegistry(language=state.language)
        registry.register_tool(
            MemoryTool(
                user_id=state.user,
                database=db,
                embedder=embedder,
                memory_types=list(MEMORY_TYPES),
                language=state.language,
            )
        )
        registry.register_tool(
            RAGTool(
                rag_namespace=state.namespace,
                database=db,
                embedder=embedder,
                llm=llm,
                language=state.language,
            )
        )
        memory = AgentMemorySystem(llm, database=db, embedder=embedder) if loop else None
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
