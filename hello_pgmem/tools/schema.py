"""Tool parameters as JSON Schema, read from an action method's signature, type hints and docstring
(a ``zh:`` line under a parameter gives its Chinese description), in the OpenAI ``tools`` format
that the MCP server lists too."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args, get_origin, get_type_hints

from hello_pgmem.core.i18n import Language

_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


@dataclass(frozen=True)
class ToolParameter:
    """One parameter of a tool, as JSON Schema."""

    name: str
    schema: dict[str, Any]
    description: str = ""
    required: bool = False

    def to_schema(self) -> dict[str, Any]:
        schema = dict(self.schema)
        if self.description:
            schema["description"] = self.description
        return schema


_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _schema_for(annotation: Any) -> tuple[dict[str, Any], bool]:
    """JSON Schema of a type hint, and whether None is allowed; ``Annotated[int, Field(ge=…,
    le=…)]`` gives the bounds (which ``validate_call`` enforces)."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        base, *extras = get_args(annotation)
        schema, nullable = _schema_for(base)
        for extra in extras:
            schema.update(getattr(extra, "keywords", {}))  # a tools.params.Schema
            for constraint in getattr(extra, "metadata", [extra]):
                for attr, key in _BOUNDS.items():
                    if getattr(constraint, attr, None) is not None:
                        schema[key] = getattr(constraint, attr)
        return schema, nullable
    if origin in (types.UnionType, typing.Union):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(get_args(annotation))
        if len(args) == 1:
            return _schema_for(args[0])[0], nullable
        return {"anyOf": [_schema_for(a)[0] for a in args]}, nullable
    if origin is Literal:
        values = list(get_args(annotation))
        return {"type": _JSON_TYPES.get(type(values[0]), "string"), "enum": values}, False
    if origin in (list, tuple, set, frozenset):
        item_args = get_args(annotation)
        items = _schema_for(item_args[0])[0] if item_args else {}
        return {"type": "array", "items": items}, False
    if origin in (dict, Mapping):
        return {"type": "object"}, False
    if annotation is Any:
        return {}, False
    return {"type": _JSON_TYPES.get(annotation, "string")}, False


def _docstring_args(doc: str | None, language: Language = "en") -> dict[str, str]:
    """Descriptions from a Google-style ``Args:`` section, in ``language``: a ``zh:`` line under
    a parameter is its Chinese description (the English one where it has none)."""
    if not doc:
        return {}
    match = re.search(r"^\s*Args:\s*$(.*?)(?:^\s*(?:Returns|Raises|Examples?):\s*$|\Z)", doc, re.M | re.S)
    if not match:
        return {}
    described: dict[str, dict[str, str]] = {}
    current: str | None = None
    part = "en"
    for line in match.group(1).splitlines():
        chinese = re.match(r"^\s*zh:\s*(.*)$", line)
        item = re.match(r"^\s*(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if chinese and current:
            part = "zh"
            described[current]["zh"] = chinese.group(1).strip()
        elif item:
            current, part = item.group(1), "en"
            described[current] = {"en": item.group(2).strip()}
        elif current and line.strip():
            described[current][part] += " " + line.strip()
    return {name: texts.get(language, texts["en"]) for name, texts in described.items()}


def parameters_of(method: Callable[..., Any], language: Language = "en") -> list[ToolParameter]:
    """The parameters of an action method, from its signature, type hints and docstring."""
    hints = get_type_hints(method, include_extras=True)
    described = _docstring_args(method.__doc__, language)
    result = []
    for param in inspect.signature(method).parameters.values():
        if param.name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema, _ = _schema_for(hints.get(param.name, str))
        optional = param.default is not inspect.Parameter.empty
        if optional and param.default is not None:
            schema["default"] = param.default
        if optional:  # null is an optional argument left out (its default applies): said, not implied
            schema = _or_null(schema)
        result.append(
            ToolParameter(
                name=param.name,
                schema=schema,
                description=described.get(param.name, ""),
                required=param.default is inspect.Parameter.empty,
            )
        )
    return result


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also takes null."""
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    if isinstance(schema.get("type"), str):
        nullable = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:
            nullable["enum"] = [*schema["enum"], None]
        return nullable
    return schema  # any type: null among them


def _type_names(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema names (``"type": "integer"`` or ``["integer", "null"]``)."""
    named = schema.get("type", [])
    return [named] if isinstance(named, str) else list(named)


def with_bounds(
    parameters: list[ToolParameter], bounds: Mapping[str, Mapping[str, Any]]
) -> list[ToolParameter]:
    """``parameters`` with ``bounds`` (schema keywords by parameter name) added to their schemas."""
    return [replace(p, schema={**p.schema, **bounds[p.name]}) if p.name in bounds else p for p in parameters]


def boolean_for_number(method: Callable[..., Any], arguments: Mapping[str, Any]) -> str | None:
    """The first parameter that wants a number but was given true or false (pydantic would take
    true for 1.0), or None."""
    for param in parameters_of(method):
        schema = param.schema
        types = {name for part in (schema, *schema.get("anyOf", [])) for name in _type_names(part)}
        if (
            isinstance(arguments.get(param.name), bool)
            and "boolean" not in types
            and types & {"number", "integer"}
        ):
            return param.name
    return None


def first_line(doc: str | None) -> str:
    """A docstring's first line (an action's description when the mark gives none)."""
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


def openai_schema(name: str, description: str, parameters: list[ToolParameter]) -> dict[str, Any]:
    """A function in the OpenAI ``tools`` format."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p.name: p.to_schema() for p in parameters},
                "required": [p.name for p in parameters if p.required],
            },
        },
    }
