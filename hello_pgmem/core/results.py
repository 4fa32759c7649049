"""What a search returns besides its hits: how many rows of its scope still wait for their vectors,
and which stage it had to leave out (a reranker or a query embedder that failed)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from hello_pgmem.core.i18n import Language, say

T = TypeVar("T")

Stage = Literal["rerank", "query_embedding", "catch_up", "expansion"]


@dataclass(frozen=True)
class Degraded:
    """A stage of a search that failed and was left out; the search answered without it."""

    stage: Stage
    error: str

    def text(self, language: Language = "en") -> str:
        """What the caller should know, in ``language``."""
        if self.stage == "rerank":
            return say(
                language,
                f"the reranker failed ({self.error}): results are in the first stage's order",
                f"重排序失败（{self.error}）：结果按第一阶段的顺序排列",
            )
        if self.stage == "expansion":
            return say(
                language,
                f"MQE and HyDE were skipped ({self.error}): a plain search",
                f"已跳过 MQE 与 HyDE（{self.error}）：普通搜索",
            )
        if self.stage == "query_embedding":
            return say(
                language,
                f"the query could not be embedded ({self.error}): results are ranked by their words alone",
                f"查询无法向量化（{self.error}）：结果仅按词语排序",
            )
        return say(
            language,
            f"the newest memories could not be embedded ({self.error}): they are found by their words only",
            f"最新的记忆无法向量化（{self.error}）：只能按词语找到它们",
        )


class Results(list[T]):
    """Search results, best first (a list), with ``pending_embeddings``: how many rows of the
    searched scope were still waiting for their vectors (found by their words only until they have
    them), and ``degraded``: the stages the search left out because they failed."""

    pending_embeddings: int
    degraded: tuple[Degraded, ...]

    def __init__(
        self, items: Iterable[T] = (), pending_embeddings: int = 0, degraded: Iterable[Degraded] = ()
    ):
        super().__init__(items)
        self.pending_embeddings = pending_embeddings
        self.degraded = tuple(degraded)

    def notes(self, language: Language = "en") -> list[str]:
        """What a reader of the results should know: the stages left out, the rows still waiting."""
        notes = [d.text(language) for d in self.degraded]
        if self.pending_embeddings:
            n = self.pending_embeddings
            notes.append(
                say(
                    language,
                    f"{n} rows wait for their vectors and are found by their words only until then"
                    if n > 1
                    else "1 row waits for its vector and is found by its words only until then",
                    f"{n} 条记录正在等待向量化，在此之前只能按词语找到",
                )
            )
        return notes
