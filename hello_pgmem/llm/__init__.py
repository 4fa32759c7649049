"""Chat models behind any OpenAI-compatible endpoint."""

from hello_pgmem.llm.chat import ChatClient, Message, create_chat_client

__all__ = ["ChatClient", "Message", "create_chat_client"]
