"""The review's reproduction of work left behind by calls past their time limit: rounds of
searches at once with a query that is slow to parse and to encode. The test of the MCP server and
bench/hostile_load.py both send it."""

from __future__ import annotations

from typing import Any

import anyio

SLOW_QUERY = "_x" * 10_000
"""20,000 characters on which the text-search parser and E5 take longest."""


async def timed_out_searches(client: Any, rounds: int = 6, at_once: int = 4) -> list[Any]:
    """``rounds`` rounds, one after another, of ``at_once`` ``memory_search`` calls at once with
    :data:`SLOW_QUERY` through the MCP ``client``: every call's result."""
    results: list[Any] = []
    for _ in range(rounds):
        async with anyio.create_task_group() as group:
            for _ in range(at_once):

                async def search() -> None:
                    results.append(await client.call_tool("memory_search", {"query": SLOW_QUERY}))

                group.start_soon(search)
    return results
