"""SimpleAgent: OpenAI function calling with the registered tools, in a bounded loop.

``HelloAgentsLLM`` is the reference's name for the chat client (``LLM_MODEL_ID``, ``LLM_API_KEY``,
``LLM_BASE_URL``, ``LLM_TIMEOUT``). ``SimpleAgent.run(message)`` sends the conversation and the
tools' JSON Schemas, runs every tool call the model makes (a tool never raises: its errors come
back as text), and returns the model's final answer; after at most ``max_steps`` model calls it
asks for an answer without tools. A short history of past turns is kept in the process; with a
``memory_system``, each turn also goes through the long-term memory loop.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from hello_pgmem.core.errors import ConfigurationError, LLMError
from hello_pgmem.core.i18n import Language, say
from hello_pgmem.core.settings import Settings
from hello_pgmem.llm import ChatClient, Message
from hello_pgmem.loop.system import AgentMemorySystem
from hello_pgmem.tools.base import failed

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT: dict[Language, str] = {
    "zh": "你是一个有长期记忆的助手。当用户告诉你关于自己的信息（姓名、职业、偏好等）时，用 memory 工具"
    "把它记下来（action=add，memory_type=semantic）；当需要回忆用户的信息时，先用 memory 工具搜索"
    "（action=search）；需要文档知识时使用 rag 工具。回答简洁，使用用户的语言。",
    "en": "You are an assistant with long-term memory. When the user tells you about themselves (name, "
    "job, preferences, …), write it down with the memory tool (action=add, memory_type=semantic); when "
    "you need to recall something about the user, search the memory tool first (action=search); use "
    "the rag tool for knowledge from documents. Answer briefly, in the user's language.",
}
ANSWER_NOW: dict[Language, str] = {
    "zh": "请根据以上工具结果直接回答，不要再调用工具。",
    "en": "Answer now from the tool results above, without calling any more tools.",
}


class Toolbox(Protocol):
    """What an agent needs of its tools (``hello_pgmem.tools.ToolRegistry`` is one)."""

    def to_openai_tools(self) -> list[dict[str, Any]]: ...

    def execute_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> str: ...


class _NoTools:
    def to_openai_tools(self) -> list[dict[str, Any]]:
        return []

    def __init__(self, language: Language) -> None:
        self.language = language

    def execute_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        return failed(say(self.language, f"❌ no such tool: {name}", f"❌ 未找到工具: {name}"))


class HelloAgentsLLM(ChatClient):
    """The chat client configured from the environment, as the reference names it."""

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        settings = settings or Settings()
        model = model or settings.llm_model_id
        if not model:
            raise ConfigurationError("LLM_MODEL_ID is not set: name the chat model to use")
        super().__init__(
            model,
            base_url=base_url or settings.llm_base_url,
            api_key=api_key or settings.llm_api_key,
            timeout_s=timeout or settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
        )

    def invoke(self, messages: list[Message]) -> str:
        return self.complete(messages)


class SimpleAgent:
    """An agent that talks through one chat model and calls the tools of a registry."""

    def __init__(
        self,
        name: str,
        llm: ChatClient,
        system_prompt: str | None = None,
        tool_registry: Toolbox | None = None,
        *,
        max_steps: int = 6,
        history_turns: int = 10,
        memory_system: AgentMemorySystem | None = None,
        user_id: str | None = None,
        language: Language | None = None,
    ) -> None:
        """``language`` words the default system prompt and the agent's own messages (default:
        the tool registry's, else ``PGMEM_LANGUAGE``)."""
        self.name = name
        self.llm = llm
        self.language: Language = language or getattr(tool_registry, "language", None) or Settings().language
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT[self.language]
        self.tool_registry: Toolbox = tool_registry or _NoTools(self.language)
        self.max_steps = max_steps
        self.history_turns = history_turns
        self.memory_system = memory_system
        self.user_id = user_id
        self.history: list[Message] = []
        self.last_trace: list[dict[str, Any]] = []

    def run(self, message: str) -> str:
        """Answer ``message``, calling tools as the model asks; returns the final answer."""
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt},
            *self.history,
            {"role": "user", "content": message},
        ]
        tools = self.tool_registry.to_openai_tools()
        self.last_trace = []
        answer = None
        for _ in range(self.max_steps):
            reply = self.llm.chat(messages, tools=tools) if tools else self.llm.chat(messages)
            calls = list(getattr(reply, "tool_calls", None) or [])
            if not calls:
                answer = (reply.content or "").strip()
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.content or "",
                    "tool_calls": [call.model_dump() for call in calls],
                }
            )
            for call in calls:
                result = self._call_tool(call.function.name, call.function.arguments)
                self.last_trace.append(
                    {"tool": call.function.name, "arguments": call.function.arguments, "result": result}
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        if answer is None:  # too many steps: ask for an answer without tools
            messages.append({"role": "user", "content": ANSWER_NOW[self.language]})
            answer = self.llm.complete(messages)
        self._remember(message, answer)
        return answer

    def _call_tool(self, name: str, arguments: str) -> str:
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return failed(
                say(
                    self.language,
                    f"❌ the tool's arguments are not valid JSON: {exc}",
                    f"❌ 工具参数不是合法的 JSON: {exc}",
                )
            )
        if not isinstance(parsed, dict):
            return failed(
                say(
                    self.language,
                    "❌ the tool's arguments must be a JSON object",
                    "❌ 工具参数必须是 JSON 对象",
                )
            )
        return self.tool_registry.execute_tool(name, parsed)

    def _remember(self, message: str, answer: str) -> None:
        self.history += [{"role": "user", "content": message}, {"role": "assistant", "content": answer}]
        self.history = self.history[-2 * self.history_turns :]
        if self.memory_system is not None and self.user_id is not None:
            try:
                self.memory_system.process_turn(message, answer, self.user_id)
            except LLMError as exc:  # the answer stands; the loop failing is logged
                log.warning("the memory loop failed after this turn: %s", exc)

    def clear_history(self) -> None:
        self.history = []
