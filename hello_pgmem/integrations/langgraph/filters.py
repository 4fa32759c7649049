"""A LangGraph store filter as one jsonpath predicate on a memory's metadata, for SQL to apply
inside the candidate search. The path holds only the filter's shape (its field names quoted as
JSON strings); every value is a variable of ``vars``. Matching follows LangGraph's own stores:
a value equals exactly (a dict filter matches the fields it names, a list the whole list), and
``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` compare; ``$gt``… compare a number with
numbers and a string with strings, never one with the other. What no stored value can be (NaN,
±infinity, a string holding NUL) is compared as Python compares it with every stored value: it
equals none; NaN is neither above nor below any number, infinity above every one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VALUE_PATH = "$.langgraph.value"
NOT_INDEXED = "!($.langgraph.index == false)"
"""Keeps the items put with ``index=False`` out of a query search."""
MAX_DEPTH = 16
MAX_TERMS = 256
_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
OPERATORS = ("$eq", "$ne", *_ORDER)
NEVER = "(1 == 0)"
"""A predicate true of no item."""


@dataclass(frozen=True)
class Predicate:
    """A jsonpath ``path`` the items' metadata must match with ``variables`` (a memory_filter's
    ``where_path`` and ``where_vars``); None: every item passes."""

    path: str | None
    variables: dict[str, Any] = field(default_factory=dict)


def compile_filter(conditions: Mapping[str, Any] | None, *, indexed_only: bool = False) -> Predicate:
    """The predicate of a LangGraph ``filter`` (``ValueError`` naming the field and the rule)."""
    if conditions is not None and not isinstance(conditions, Mapping):
        raise ValueError(f"filter must be a dict of field conditions, got {type(conditions).__name__}")
    builder = _Builder()
    terms = [
        builder.condition(_field(VALUE_PATH, name), name, value, 1)
        for name, value in (conditions or {}).items()
    ]
    if indexed_only:
        terms.append(NOT_INDEXED)
    if not terms:
        return Predicate(None)
    return Predicate(" && ".join(terms), builder.variables)


def _field(path: str, name: object) -> str:
    if not isinstance(name, str):
        raise ValueError(f"filter field {name!r} must be a string")
    if "\x00" in name:
        raise ValueError(f"filter field {name!r} must not contain NUL characters")
    return f"{path}.{json.dumps(name, ensure_ascii=False)}"


class _Builder:
    def __init__(self) -> None:
        self.variables: dict[str, Any] = {}

    def variable(self, value: Any) -> str:
        if len(self.variables) >= MAX_TERMS:
            raise ValueError(f"filter has more than {MAX_TERMS} values")
        name = f"v{len(self.variables)}"
        self.variables[name] = value
        return f"${name}"

    def condition(self, path: str, name: str, value: Any, depth: int) -> str:
        """What ``{name: value}`` asks of the value at ``path``."""
        if isinstance(value, Mapping) and any(str(k).startswith("$") for k in value):
            if not value:
                raise ValueError(f"filter field {name!r}: an operator needs a value")
            return " && ".join(self.operator(path, name, op, operand, depth) for op, operand in value.items())
        return self.equals(path, name, value, depth)

    def operator(self, path: str, name: str, op: object, operand: Any, depth: int) -> str:
        if op == "$eq":
            return self.equals(path, name, operand, depth)
        if op == "$ne":
            return f"!({self.equals(path, name, operand, depth)})"
        if op in _ORDER:
            if isinstance(operand, float) and not math.isfinite(operand):
                return _beyond_numbers(path, str(op), operand)
            kind = _comparable(operand)
            if kind is None:
                raise ValueError(
                    f"filter field {name!r}: {op} compares with a number or a string, got {operand!r}"
                )
            if kind == "string" and "\x00" in operand:
                raise ValueError(f"filter field {name!r}: {op} compares with a string without NUL characters")
            return f'({path}.type() == "{kind}" && {path} {_ORDER[str(op)]} {self.variable(operand)})'
        raise ValueError(f"filter field {name!r}: unknown operator {op!r} (one of {', '.join(OPERATORS)})")

    def equals(self, path: str, name: str, value: Any, depth: int) -> str:
        """The value at ``path`` equals ``value`` (LangGraph's matching: see the module)."""
        if depth > MAX_DEPTH:
            raise ValueError(f"filter field {name!r} is nested deeper than {MAX_DEPTH} levels")
        if value is None:
            return f'(!exists({path}) || {path}.type() == "null")'
        if isinstance(value, Mapping):
            parts = [f'{path}.type() == "object"']
            parts += [self.equals(_field(path, key), name, inner, depth + 1) for key, inner in value.items()]
            return "(" + " && ".join(parts) + ")"
        if isinstance(value, list | tuple):
            parts = [f'{path}.type() == "array"', f"{path}.size() == {len(value)}"]
            parts += [self.equals(f"{path}[{i}]", name, inner, depth + 1) for i, inner in enumerate(value)]
            return "(" + " && ".join(parts) + ")"
        if _unstorable(value):
            return NEVER  # no stored value is one
        kind = "boolean" if isinstance(value, bool) else _comparable(value)
        if kind is None:
            raise ValueError(f"filter field {name!r}: {value!r} is not a JSON value")
        return f'({path}.type() == "{kind}" && {path} == {self.variable(value)})'


def _unstorable(value: object) -> bool:
    """NaN, ±infinity or a string holding NUL: what no stored value is."""
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, str) and "\x00" in value


def _beyond_numbers(path: str, op: str, bound: float) -> str:
    """An order comparison with NaN (true of nothing) or ±infinity (of every number or of none)."""
    if math.isnan(bound):
        return NEVER
    below = op in ("$lt", "$lte")
    return f'({path}.type() == "number")' if below == (bound > 0) else NEVER


def _comparable(value: object) -> str | None:
    """The jsonpath type of a value an order operator takes, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return "number" if math.isfinite(value) else None
    return "string" if isinstance(value, str) else None
