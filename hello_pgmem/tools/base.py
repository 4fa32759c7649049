"""Tools for agents: a ``Tool`` base class, the ``@tool_action`` decorator and a registry.

A tool is either one function with an ``action`` parameter, or (``expandable=True``) one
function per ``@tool_action`` method, named ``{tool}_{action}``. Both render to the OpenAI
``tools`` format. Parameters are described by JSON Schema derived from each action's signature
and the ``Args:`` section of its docstring, where a ``zh:`` line under a parameter gives its
Chinese description; the tool's language (:mod:`hello_pgmem.core.i18n`) picks one.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError
from pydantic import validate_call

from hello_pgmem.core.errors import HelloPgmemError, NotFoundError
from hello_pgmem.core.i18n import Language, say
from hello_pgmem.core.models import validation_error
from hello_pgmem.tools.schema import (
    ToolParameter,
    boolean_for_number,
    first_line,
    openai_schema,
    parameters_of,
    with_bounds,
)

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., str])


def tool_action(
    name: str | None = None, description: str | None = None, zh: str | None = None
) -> Callable[[F], F]:
    """Mark a method as a tool action (``name`` defaults to the method's name); ``description``
    in English, ``zh`` in Chinese."""

    def mark(method: F) -> F:
        method._tool_action = {  # type: ignore[attr-defined]
            "name": name or method.__name__.strip("_"),
            "description": description,
            "zh": zh,
        }
        return method

    return mark


class ToolText(str):
    """An action's text for the agent, with its outcome as data: ``ok`` is False for a refusal or
    a failure (the MCP server sends it as ``isError``), ``data`` the answer as JSON-ready values
    (sent as structured content). Everywhere else it is the plain string."""

    data: dict[str, Any] | None
    ok: bool

    def __new__(cls, text: str, data: dict[str, Any] | None = None, *, ok: bool = True) -> ToolText:
        made = super().__new__(cls, text)
        made.data = data
        made.ok = ok
        return made


def failed(text: str) -> ToolText:
    """The text of an action that did not do what was asked."""
    return ToolText(text, ok=False)


def succeeded(text: str) -> bool:
    """Whether a tool's answer reports success (a plain string does)."""
    return not isinstance(text, ToolText) or text.ok


class Tool(ABC):
    """Something an agent can call: a name, a description, parameters and ``run``."""

    def __init__(
        self, name: str, description: str, expandable: bool = False, language: Language = "en"
    ) -> None:
        self.name = name
        self.description = description
        self.expandable = expandable
        self.language: Language = language

    def say(self, en: str, zh: str) -> str:
        """``en`` or ``zh``, in the tool's language."""
        return say(self.language, en, zh)

    def bounds(self) -> dict[str, dict[str, Any]]:
        """Schema keywords this tool adds to its parameters, by name: the bounds its configuration
        sets (a maximum ``limit``)."""
        return {}

    @abstractmethod
    def run(self, parameters: Mapping[str, Any] | str | None = None, /, **kwargs: Any) -> str:
        """Run the tool and return text for the agent. Never raises for bad input."""

    @abstractmethod
    def get_parameters(self) -> list[ToolParameter]:
        """The parameters of the single-function form."""

    def actions(self) -> Iterator[tuple[str, Callable[..., str], str]]:
        """``(action name, bound method, description)`` for every ``@tool_action`` method, the
        description in the tool's language."""
        for attr in dir(type(self)):
            method = getattr(type(self), attr, None)
            mark = getattr(method, "_tool_action", None)
            if mark:
                bound = getattr(self, attr)
                described = (mark["zh"] if self.language == "zh" else None) or mark["description"]
                yield mark["name"], bound, described or first_line(method.__doc__)

    def to_openai_schema(self) -> dict[str, Any]:
        return openai_schema(self.name, self.description, self.get_parameters())

    def get_expanded_tools(self) -> list[Tool]:
        """One tool per action, named ``{tool}_{action}``."""
        return [
            ActionTool(self, action, method, description) for action, method, description in self.actions()
        ]


class ActionsTool(Tool):
    """A tool whose ``@tool_action`` methods are selected by an ``action`` parameter.

    Every calling style works: ``run({"action": "add", ...})``, ``run("add", content=...)``,
    ``run(action="add", ...)`` and ``execute("add", ...)``. Arguments are validated (and lax-typed
    strings such as ``"5"`` coerced) against each action's signature. ``run`` never raises: bad
    input and failures come back as text whose ``ok`` is False (:meth:`failure`).
    """

    def run(self, parameters: Mapping[str, Any] | str | None = None, /, **kwargs: Any) -> str:
        if isinstance(parameters, str):
            action: Any = parameters
            arguments = dict(kwargs)
        elif isinstance(parameters, Mapping) or parameters is None:
            arguments = {**(parameters or {}), **kwargs}
            action = arguments.pop("action", None)
        else:
            return self.bad_input("parameters: must be a JSON object")
        actions = {name: method for name, method, _ in self.actions()}
        method = actions.get(action) if isinstance(action, str) else None
        if method is None:
            return failed(
                self.say(
                    f"❌ unknown action: {action}. The actions: {', '.join(actions)}",
                    f"❌ 不支持的操作: {action}。支持的操作: {', '.join(actions)}",
                )
            )
        refused = boolean_for_number(method, arguments)
        if refused is not None:
            return self.bad_input(f"{refused}: must be a number, not true or false")
        try:
            result: str = validate_call(method)(**arguments)
            return result
        except PydanticValidationError as exc:
            return self.bad_input(str(validation_error(exc)))
        except NotFoundError as exc:  # the same words on every tool and command: "no such …"
            return failed(f"❌ {exc}")
        except HelloPgmemError as exc:
            return self.failure(action, str(exc))
        except Exception as exc:  # the agent gets a message, the log gets the traceback
            log.exception("%s tool action %r failed", self.name, action)
            return self.failure(action, f"{type(exc).__name__}: {exc}")

    def execute(self, action: str, **kwargs: Any) -> str:
        """The references' older calling style: ``execute("search", query=...)``."""
        return self.run(action, **kwargs)

    def bad_input(self, rule: str) -> str:
        """The text for arguments that break a rule (``rule`` names the field)."""
        return failed(self.say(f"❌ invalid input: {rule}", f"❌ 参数错误: {rule}"))

    def failure(self, action: str, message: str) -> str:
        """The text for a failed action."""
        return failed(
            self.say(f"❌ {action} failed: {message}", f"❌ 执行操作 '{action}' 时发生错误: {message}")
        )

    def get_parameters(self) -> list[ToolParameter]:
        """The single-function form: ``action`` plus every action's parameters, all optional."""
        merged: dict[str, ToolParameter] = {}
        for _, method, _ in self.actions():
            for param in with_bounds(parameters_of(method, self.language), self.bounds()):
                merged.setdefault(param.name, ToolParameter(param.name, param.schema, param.description))
        names = [name for name, _, _ in self.actions()]
        described = say(self.language, "the action to run", "要执行的操作")
        action = ToolParameter("action", {"type": "string", "enum": names}, described, required=True)
        return [action, *merged.values()]


class ActionTool(Tool):
    """One action of a parent tool, exposed as a function of its own."""

    def __init__(self, parent: Tool, action: str, method: Callable[..., str], description: str) -> None:
        super().__init__(
            f"{parent.name}_{action}", description or f"{parent.name} {action}", False, parent.language
        )
        self.parent = parent
        self.action = action
        self._parameters = with_bounds(parameters_of(method, parent.language), parent.bounds())

    def get_parameters(self) -> list[ToolParameter]:
        return self._parameters

    def run(self, parameters: Mapping[str, Any] | str | None = None, /, **kwargs: Any) -> str:
        merged = dict(parameters) if isinstance(parameters, Mapping) else {}
        merged.update(kwargs)
        merged["action"] = self.action
        return self.parent.run(merged)


@dataclass
class ToolRegistry:
    """The tools an agent may call, by name."""

    tools: dict[str, Tool] = field(default_factory=dict)
    language: Language = "en"

    def register_tool(self, tool: Tool, auto_expand: bool = True) -> None:
        """Register ``tool``, or its per-action tools when it is expandable."""
        if tool.expandable and auto_expand:
            for sub in tool.get_expanded_tools():
                self.tools[sub.name] = sub
        else:
            self.tools[tool.name] = tool

    def get_tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def list_tools(self) -> list[str]:
        return sorted(self.tools)

    def to_openai_tools(self) -> list[dict[str, Any]]:
        return [tool.to_openai_schema() for tool in self.tools.values()]

    def execute_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        tool = self.tools.get(name)
        if tool is None:
            return failed(say(self.language, f"❌ no such tool: {name}", f"❌ 未找到工具: {name}"))
        return tool.run(dict(arguments or {}))
