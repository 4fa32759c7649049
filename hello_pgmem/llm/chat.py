"""A chat client for any OpenAI-compatible endpoint (``LLM_MODEL_ID``, ``LLM_API_KEY``, ``LLM_BASE_URL``).

Calls have a timeout and retries; failures raise :class:`~hello_pgmem.core.errors.LLMError`, which
callers turn into their documented degradation (rule-based extraction, plain search, ...).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from hello_pgmem.core.errors import LLMError
from hello_pgmem.core.settings import Settings

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
Message = dict[str, Any]


class ChatClient:
    """``complete`` for text, ``complete_json`` for a validated pydantic object."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.0,
    ) -> None:
        self.model = model
        self.temperature = temperature
        import openai  # imported with the first client: the library is slow to import

        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=max_retries
        )

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        """The raw chat completion (the first choice's message)."""
        import openai

        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=list(messages),  # type: ignore[arg-type]
                temperature=self.temperature,
                **kwargs,
            )
        except openai.OpenAIError as exc:
            raise LLMError(f"chat request to {self.model!r} failed: {exc}") from exc
        if not response.choices:
            raise LLMError(f"chat model {self.model!r} returned no choices")
        return response.choices[0].message

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> str:
        content = self.chat(messages, **kwargs).content
        if not content or not content.strip():
            raise LLMError(f"chat model {self.model!r} returned an empty answer")
        return str(content)

    def complete_json(self, messages: Sequence[Message], schema: type[M]) -> M:
        """Ask for a JSON object (JSON mode) and validate it against ``schema``."""
        text = self.complete(messages, response_format={"type": "json_object"})
        try:
            return schema.model_validate(json.loads(_strip_fences(text)))
        except (json.JSONDecodeError, PydanticValidationError) as exc:
            raise LLMError(f"chat model {self.model!r} returned JSON that does not fit: {exc}") from exc


def _strip_fences(text: str) -> str:
    """Models sometimes wrap JSON in ```json fences even in JSON mode."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped.strip()


def create_chat_client(settings: Settings | None = None) -> ChatClient | None:
    """The configured chat model, or None when ``LLM_MODEL_ID`` is not set."""
    settings = settings or Settings()
    if not settings.llm_model_id:
        return None
    return ChatClient(
        settings.llm_model_id,
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )
