"""The path of one search from the API to the SQL: the calls that cross from one module of the
package to another, in order, counted at run time (``sys.setprofile``), on a fresh database.

    python -m bench.search_path            # the default hybrid search of a manager

A stop is a call from a function of one module into a function of another module of
hello_pgmem; the path to the SQL ends at the call that sends the search statement. Calls into
the same module, and into other libraries, are not stops.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from bench.harness import fresh_database
from hello_pgmem import HashingEmbedder, MemoryManager

PACKAGE = str(Path(__file__).resolve().parent.parent / "hello_pgmem")
SENDS = {"execute"}  # psycopg's Connection/Cursor.execute: the statement leaves


def module_of(frame: FrameType) -> str | None:
    name = frame.f_code.co_filename
    if not name.startswith(PACKAGE):
        return None
    return name[len(PACKAGE) + 1 :].removesuffix(".py").replace("/", ".")


def chain(frame: FrameType | None) -> list[str]:
    """The functions of the package on the stack, outermost first, as ``module:function``."""
    found: list[str] = []
    while frame is not None:
        module = module_of(frame)
        if module:
            found.append(f"{module}:{frame.f_code.co_qualname}")
        frame = frame.f_back
    return found[::-1]


def stops_of(calls: list[str]) -> list[str]:
    """The calls of a chain that enter another module than their caller's."""
    modules = [call.split(":")[0] for call in calls]
    return [call for i, call in enumerate(calls) if i and modules[i] != modules[i - 1]]


def trace(action: Any) -> tuple[list[str], int, list[str]]:
    """Every call of ``action`` that crosses modules up to the first statement that names
    search_memories, how many of them enter a module the path had already left, and the chain
    of calls on the stack when that statement is sent."""
    stops: list[str] = []
    stack: list[str] = []
    done = False

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal done
        if done or event != "call":
            return
        caller = frame.f_back
        callee_module = module_of(frame)
        caller_module = module_of(caller) if caller else None
        if frame.f_code.co_name in SENDS and caller_module and callee_module is None:
            query = frame.f_locals.get("query")
            if "search_memories" in str(query):
                stops.append(f"{caller_module} -> SQL")
                stack.extend(chain(caller))
                done = True
            return
        if callee_module and caller_module and callee_module != caller_module:
            stops.append(f"{caller_module} -> {callee_module}.{frame.f_code.co_qualname}")

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    seen: list[str] = []
    returns = 0
    for stop in stops:
        target = stop.split(" -> ")[1].rsplit(".", 1)[0]
        source = stop.split(" -> ")[0]
        if not seen or seen[-1] != source:
            seen.append(source)
        if target in seen[:-1]:
            returns += 1
        seen.append(target)
    return stops, returns, stack


def main() -> None:
    with fresh_database() as settings:
        manager = MemoryManager(user_id="path", settings=settings, embedder=HashingEmbedder())
        manager.add_memories(["Alice moved to Berlin in 2021", "Bob works at Acme"], "episodic")
        manager.retrieve_memories("where does Alice live?")  # every part made, every cache warm
        stops, returns, stack = trace(lambda: manager.retrieve_memories("where does Alice live?"))
        manager.close()
    print("the calls on the stack when the search statement is sent, outermost first:")
    for call in stack:
        print(f"  {call}")
    crossing = stops_of(stack)
    print(f"{len(crossing)} stops (calls across modules) from the API to the SQL")
    print("every call across modules before the statement is sent, in order:")
    for number, stop in enumerate(stops, 1):
        print(f"{number:2}. {stop}")
    modules = {stop.split(" -> ")[0] for stop in stops}
    print(
        f"{len(stops)} calls across modules, {len(modules)} modules, {returns} entering a module left before"
    )


if __name__ == "__main__":
    main()
