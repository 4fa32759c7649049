"""A tool call's arguments checked against the input schema the tool lists, before it runs.

The tools' own checks coerce the way Python callers expect (``"5"`` for 5); a remote agent gets
what its schema says instead: ``confirm: "yes"`` or ``1`` is not a boolean, ``limit: "5"`` not an
integer, a value outside its bounds or enum is refused, naming the argument and the rule. A null
is an argument left out (its default applies).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Validator:
    schema = json.loads(schema_text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def given(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments without those left out as null."""
    return {name: value for name, value in arguments.items() if value is not None}


def argument_error(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """``"field: rule"`` for the first argument that breaks ``schema``, or None."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    at = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        unknown = min(set(error.instance) - set(known))
        return f"{_joined(at, unknown)}: unknown argument (the tool takes {', '.join(known)})"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = next(name for name in error.validator_value if name not in error.instance)
        return f"{_joined(at, missing)}: required"
    return f"{at or 'arguments'}: {error.message}"


def _joined(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name
