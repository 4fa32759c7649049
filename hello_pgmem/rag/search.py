"""Search and ask: hybrid search of one namespace (with MQE and HyDE variants), and answers that
cite their passages."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from hello_pgmem import embedding_queue
from hello_pgmem.core.checks import check_flag
from hello_pgmem.core.errors import EmbeddingError, InvalidInputError, LLMError
from hello_pgmem.core.i18n import Language, say
from hello_pgmem.core.models import check_content, check_limit, check_name
from hello_pgmem.core.results import Degraded, Results
from hello_pgmem.db.retrieval_log import log_retrieval
from hello_pgmem.embedding import Embedder
from hello_pgmem.llm import ChatClient
from hello_pgmem.rag import store
from hello_pgmem.rag.answer import (
    ANSWER_SYSTEM,
    ANSWER_USER,
    PASSAGES_ONLY_CHARS,
    Answer,
    AnswerStatus,
    Source,
    build_context,
    cited_numbers,
)
from hello_pgmem.rag.expansion import hypothetical_answer, multi_queries
from hello_pgmem.rag.models import ChunkHit

log = logging.getLogger(__name__)

MAX_TOP_K = 100
MAX_EXPANSIONS = 10
"""At most this many rewrites of a query (MQE)."""
MAX_POOL = 10_000
"""search_chunks' pool (``top_k`` times ``candidate_pool_multiplier``) at most."""
ANSWER_CHARS = (100, 1_000_000)
"""The least and the most characters of passages an answer may be given."""
DEFAULT_FUSION = "rrf"


class Search(store.Namespaced):
    """The search methods of :class:`~hello_pgmem.rag.knowledge.KnowledgeBase`."""

    embedder: Embedder
    llm: ChatClient | None
    fusion: str
    asked_by: str | None
    language: Language
    embeds_now: bool

    def search(
        self,
        query: str,
        top_k: int = 5,
        *,
        min_score: float | None = None,
        document_ids: Sequence[str] | None = None,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        mqe_expansions: int = 2,
        candidate_pool_multiplier: int = 4,
    ) -> Results[ChunkHit]:
        """Hybrid search; with MQE/HyDE every query variant is searched and the best score per
        chunk kept. ``min_score`` applies to the cosine similarity (``vector_score``). The results
        say how many chunks of the namespace still wait for their vectors (a chunk waiting has
        cosine 0), and whether the query could not be embedded (then ranked by words alone).

        Long because every query variant is searched and merged in one loop."""
        check_content(query, field="query")
        started = time.perf_counter()
        check_limit(top_k, MAX_TOP_K, "top_k")
        check_flag(enable_mqe, "enable_mqe")
        check_flag(enable_hyde, "enable_hyde")
        check_limit(mqe_expansions, MAX_EXPANSIONS, "mqe_expansions")
        check_limit(candidate_pool_multiplier, MAX_POOL // top_k, "candidate_pool_multiplier")
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, int | float)):
            raise InvalidInputError("min_score", f"must be a number, got {type(min_score).__name__}")
        if document_ids is not None:
            if isinstance(document_ids, str) or not isinstance(document_ids, Sequence):
                raise InvalidInputError("document_ids", "must be a list of document ids")
            document_ids = [check_name(d, "document_ids") for d in document_ids]
        variants: list[tuple[str, str]] = [("original", query)]
        unexpanded = (enable_mqe or enable_hyde) and self.llm is None
        if unexpanded:
            log.info("no chat model configured: MQE/HyDE skipped, plain search")
        elif self.llm is not None:
            if enable_mqe:
                variants += [
                    ("mqe", q) for q in multi_queries(self.llm, query, mqe_expansions, self.language)
                ]
            if enable_hyde:
                passage = hypothetical_answer(self.llm, query, self.language)
                if passage:
                    variants.append(("hyde", passage))
        waiting, degraded = self._waiting_chunks()
        if unexpanded:
            degraded.append(Degraded("expansion", "no chat model is configured: LLM_MODEL_ID"))
        fusion = self.fusion
        try:
            vectors = list(self.registered_embedder().encode_queries([text for _, text in variants]))
        except EmbeddingError as exc:
            log.info("a search of %r ranks by words alone: %s", self.namespace, exc)  # said in degraded
            degraded.append(Degraded("query_embedding", str(exc)))
            fusion, variants = "lexical", variants[:1]
            vectors = [np.eye(1, self.embedder.dimension, dtype=np.float32)[0]]
        pool = top_k * candidate_pool_multiplier
        best: dict[uuid.UUID, ChunkHit] = {}
        with self.transaction() as conn:
            for (kind, text), vector in zip(variants, vectors, strict=True):
                params = self.params(
                    model=self.embedder.model_name,
                    query=vector,
                    text=query if kind == "hyde" else text,
                    limit=pool,
                    document_ids=list(document_ids) if document_ids else None,
                    fusion=fusion,
                    pool=pool,
                )
                for row in self.db.call_rows(conn, store.SEARCH, store.SEARCH_DELEGATED, params):
                    hit = _hit(row)
                    known = best.get(hit.id)
                    if known is None or hit.score > known.score:
                        hit.matched_by = sorted({kind, *(known.matched_by if known else [])})
                        best[hit.id] = hit
                    else:
                        known.matched_by = sorted({kind, *known.matched_by})
        hits = sorted(best.values(), key=lambda h: (-h.score, -h.vector_score, str(h.id)))
        if min_score is not None:
            hits = [h for h in hits if h.vector_score >= min_score]
        hits = hits[:top_k]
        log_retrieval(
            self.db,
            self.asked_by or f"rag:{self.namespace}",
            "rag",
            query,
            [(h.id, h.score) for h in hits],
            int((time.perf_counter() - started) * 1000),
            self.namespace,
        )
        return Results(hits, waiting, degraded)

    def _waiting_chunks(self) -> tuple[int, list[Degraded]]:
        """How many of the namespace's chunks wait for a vector of the search's model, after the
        search embedded them itself when few wait (what was just added is found by meaning)."""
        if self.embeds_now:
            return 0, []
        embedder = self.registered_embedder()
        left, failure = embedding_queue.waiting_for_search(self.db, embedder, "chunk", self.namespace)
        return left, [] if failure is None else [Degraded("catch_up", failure)]

    def ask(
        self,
        question: str,
        top_k: int = 5,
        *,
        max_chars: int | None = None,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        min_score: float | None = None,
    ) -> Answer:
        """Answer from the knowledge base only, citing passages as [n]; without a chat model, the
        passages themselves with a notice.

        ``max_chars`` bounds the passages: the context given to the chat model (1,200 by default),
        or what is shown without one (6,000 by default).

        Long because retrieval, the context budget, the prompt and the fallback without a model make one
        answer.
        """
        check_content(question, field="question")
        hits = self.search(
            question, top_k, min_score=min_score, enable_mqe=enable_mqe, enable_hyde=enable_hyde
        )
        if max_chars is None:
            max_chars = 1200 if self.llm is not None else PASSAGES_ONLY_CHARS
        low, high = ANSWER_CHARS
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not low <= max_chars <= high:
            raise InvalidInputError("max_chars", f"must be an integer between {low} and {high}")
        context, used = build_context(hits, max_chars, self.language)
        notes = hits.notes(self.language)
        sources = [
            Source(
                number=i,
                document_id=h.document_id,
                source_path=h.source_path,
                heading_path=h.heading_path,
                score=h.score,
                similarity=h.vector_score,
            )
            for i, h in enumerate(used, 1)
        ]
        if not used:
            with self.transaction() as conn:
                row = conn.execute(store.HOLDS_DOCUMENTS, self.params()).fetchone()
            empty = not (row and row[0])
            name = self.namespace
            notice = (
                say(
                    self.language,
                    f"the namespace {name!r} holds no documents",
                    f"命名空间 {name!r} 中没有文档",
                )
                if empty
                else say(self.language, "nothing in the knowledge base matches", "知识库中没有找到相关内容")
            )
            status: AnswerStatus = "no_documents" if empty else "no_passages"
            return Answer(
                question=question,
                answer=None,
                sources=[],
                context="",
                notice=notice,
                status=status,
                notes=notes,
            )
        if self.llm is None:
            return Answer(
                question=question,
                answer=None,
                sources=sources,
                context=context,
                notice=say(
                    self.language,
                    "no chat model is configured (LLM_MODEL_ID): the most relevant passages follow, "
                    "not a written answer",
                    "未配置大语言模型（LLM_MODEL_ID）：以下是最相关的原文片段，而不是生成的回答",
                ),
                status="no_llm",
                notes=notes,
            )
        messages = [
            {"role": "system", "content": ANSWER_SYSTEM[self.language]},
            {
                "role": "user",
                "content": ANSWER_USER[self.language].format(question=question, context=context),
            },
        ]
        try:
            text = self.llm.complete(messages)
        except LLMError as exc:
            log.info("answering failed, returning the passages: %s", exc)  # said in the answer's notice
            return Answer(
                question=question,
                answer=None,
                sources=sources,
                context=context,
                notice=say(
                    self.language,
                    f"the chat model failed ({exc}): the most relevant passages follow",
                    f"大语言模型调用失败（{exc}）：以下是最相关的原文片段",
                ),
                status="llm_failed",
                notes=notes,
            )
        cited = cited_numbers(text)
        for source in sources:
            source.cited = source.number in cited
        return Answer(question=question, answer=text, sources=sources, context=context, notes=notes)


def _hit(row: Sequence[Any]) -> ChunkHit:
    """A row of ``store.SEARCH`` as a hit, by column name."""
    return ChunkHit.model_validate(dict(zip(store.SEARCH_COLUMNS, row, strict=True)))
