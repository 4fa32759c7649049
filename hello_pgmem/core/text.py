"""Text helpers that work for Chinese as well as English: tokens, token counts, keyword score.

Chinese is written without spaces, so a whitespace split sees a whole sentence as one word. We
tokenize runs of CJK characters into overlapping character bigrams (plus single characters for
one-character runs), the standard fallback for Chinese retrieval without a segmenter, and other
text into lowercase words.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

CJK_CLASS = (
    "\u3040-\u30ff"  # Japanese kana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
WORD = f"[^\\W_{CJK_CLASS}]+"  # a run of letters and digits that are not CJK
_WORD = WORD
_PIECES = re.compile(f"[{CJK_CLASS}]+|{_WORD}(?:[.+#']{_WORD})*[+#]*", re.UNICODE)
LONG_WORD = 12
CHARS_PER_TOKEN = 4
_TOKEN_PIECES = re.compile(f"[{CJK_CLASS}]|{_WORD}|[^\\w\\s]", re.UNICODE)


def is_cjk(text: str) -> bool:
    return bool(_CJK_RUN.fullmatch(text))


def tokenize(text: str) -> list[str]:
    """Words for matching: lowercase words, and CJK runs as character bigrams."""
    tokens: list[str] = []
    for piece in _PIECES.findall(text.lower()):
        if is_cjk(piece):
            if len(piece) == 1:
                tokens.append(piece)
            else:
                tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            tokens.append(piece)
    return tokens


def count_tokens(text: str) -> int:
    """A CJK-aware token estimate: one per CJK character, word or punctuation mark.

    Close to what LLM tokenizers produce for Chinese (about one token per character) and for
    English (about one per word); whitespace splitting would count a Chinese sentence as one. A
    word longer than ``LONG_WORD`` characters (an identifier, a hash, a run of base64) counts one
    token per ``CHARS_PER_TOKEN`` characters, as subword tokenizers cut it.
    """
    return sum(
        1 if len(piece) <= LONG_WORD else -(-len(piece) // CHARS_PER_TOKEN)
        for piece in _TOKEN_PIECES.findall(text)
    )


@functools.cache
def token_counter(encoding: str | None = None) -> Callable[[str], int]:
    """A real tokenizer when asked for and available offline, else :func:`count_tokens`.

    ``encoding`` (or ``PGMEM_TIKTOKEN_ENCODING``, e.g. ``cl100k_base``) selects a tiktoken encoding.
    tiktoken fetches its encoding files from the internet on first use; set it only where they are
    already cached (``TIKTOKEN_CACHE_DIR``). Any failure falls back to the estimate, logged once.
    """
    name = encoding or os.environ.get("PGMEM_TIKTOKEN_ENCODING")
    if not name:
        return count_tokens
    try:
        import tiktoken

        encoder = tiktoken.get_encoding(name)
    except Exception as exc:  # missing package, unknown name, or no cached file and no network
        log.warning("tiktoken encoding %r unavailable (%s); counting tokens by estimate", name, exc)
        return count_tokens
    return lambda text: len(encoder.encode(text, disallowed_special=()))


def keyword_score(query: str, content: str) -> float:
    """The reference's keyword score, CJK-aware.

    ``len(query) / len(content)`` when the whole (lowercased) query occurs in the content;
    otherwise ``0.8 * Jaccard(query words, content words)``; 0 when nothing is shared.
    """
    q = query.lower().strip()
    c = content.lower()
    if not q or not c:
        return 0.0
    if q in c:
        return min(1.0, len(q) / len(c))
    q_words, c_words = set(tokenize(q)), set(tokenize(c))
    if not q_words or not c_words:
        return 0.0
    shared = q_words & c_words
    if not shared:
        return 0.0
    return 0.8 * len(shared) / len(q_words | c_words)


def tfidf_scores(query: str, contents: Sequence[str]) -> list[float]:
    """Cosine similarity of TF-IDF vectors between ``query`` and each text (CJK-aware tokens).

    The weighting of scikit-learn's ``TfidfVectorizer`` with its defaults, fitted on the query
    and the texts: raw counts times ``ln((1 + n) / (1 + df)) + 1``, L2-normalised. Written out
    for the few texts of working memory, where importing scikit-learn would cost more than the
    search.
    """
    if not contents:
        return []
    documents = [Counter(tokenize(text)) for text in (query, *contents)]
    frequency = Counter(term for document in documents for term in document)
    n = len(documents)
    idf = {term: math.log((1 + n) / (1 + df)) + 1 for term, df in frequency.items()}

    def weights(document: Counter[str]) -> dict[str, float]:
        raw = {term: count * idf[term] for term, count in document.items()}
        norm = math.sqrt(sum(w * w for w in raw.values()))
        return {term: w / norm for term, w in raw.items()} if norm else {}

    asked = weights(documents[0])
    return [sum(w * asked.get(term, 0.0) for term, w in weights(d).items()) for d in documents[1:]]
