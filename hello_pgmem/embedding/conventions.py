"""How each embedding model wants a question told from a text it should find.

Retrieval models trained on (query, passage) pairs embed the two sides differently: E5 reads a
``query: `` or ``passage: `` prefix, BGE an instruction before the query, Nomic ``search_query: `` and
``search_document: ``, and some hosted APIs an ``input_type`` field of the request. Searches embed
as queries, and everything stored (memories, chunks) as documents; a model with no convention
here embeds both alike. ``EMBED_QUERY_PREFIX``, ``EMBED_DOCUMENT_PREFIX`` and ``EMBED_INPUT_TYPES``
(``query,document``: the two values of the request's ``input_type``) override the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hello_pgmem.core.errors import ConfigurationError


@dataclass(frozen=True)
class Convention:
    """A model's prefixes for queries and documents, or the ``input_type`` its API takes."""

    query_prefix: str = ""
    document_prefix: str = ""
    input_types: tuple[str, str] | None = None
    """The request's ``input_type`` for a query and for a document (None: the API takes none)."""

    @property
    def symmetric(self) -> bool:
        return not (self.query_prefix or self.document_prefix or self.input_types)


SYMMETRIC = Convention()
E5 = Convention("query: ", "passage: ")

REGISTRY: tuple[tuple[re.Pattern[str], Convention], ...] = (
    (re.compile(r"(^|[/:_-])(multilingual-)?e5-(small|base|large)", re.I), E5),
    (
        re.compile(r"(^|/)bge-(small|base|large)-en", re.I),
        Convention("Represent this sentence for searching relevant passages: "),
    ),
    (
        re.compile(r"(^|/)bge-(small|base|large)-zh", re.I),
        Convention("为这个句子生成表示以用于检索相关文章："),
    ),
    (re.compile(r"(^|/)nomic-embed-text", re.I), Convention("search_query: ", "search_document: ")),
    (
        re.compile(r"^embed-(english|multilingual)", re.I),
        Convention(input_types=("search_query", "search_document")),
    ),
    (re.compile(r"^voyage-", re.I), Convention(input_types=("query", "document"))),
    (re.compile(r"^(nvidia/|nv-embed)", re.I), Convention(input_types=("query", "passage"))),
)
"""Known models by name: E5 (and multilingual E5), BGE v1.5 (English and Chinese), Nomic,
Cohere's embed-*, Voyage and NVIDIA's retrieval models. OpenAI's and most others are symmetric."""


def convention_for(
    model: str,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    input_types: str | None = None,
) -> Convention:
    """The registry's convention for ``model``, with what the settings give instead."""
    known = next((c for pattern, c in REGISTRY if pattern.search(model)), SYMMETRIC)
    types = known.input_types
    if input_types:
        parts = [p.strip() for p in input_types.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ConfigurationError(
                f"EMBED_INPUT_TYPES must be two values, the query's and the document's (e.g. query,passage), "
                f"got {input_types!r}"
            )
        types = (parts[0], parts[1])
    return Convention(
        known.query_prefix if query_prefix is None else query_prefix,
        known.document_prefix if document_prefix is None else document_prefix,
        types,
    )
