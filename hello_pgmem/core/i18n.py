"""One language for every text a user or an agent reads: English (``en``, the default) or
Chinese (``zh``, the reference's wording), chosen by ``PGMEM_LANGUAGE`` (``Settings.language``)
or per object. Both wordings stand side by side where the text is made: ``say(language, en, zh)``.
"""

from __future__ import annotations

from typing import Literal

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")


def check_language(value: str) -> Language:
    """``value`` if it is a language we speak, else a ValueError naming the rule."""
    for known in LANGUAGES:
        if value == known:
            return known
    raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {value!r}")


def say(language: Language, en: str, zh: str) -> str:
    """The wording of ``language``."""
    return zh if language == "zh" else en


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph or CJK punctuation (a Chinese text leaking into
    English output)."""
    return any(
        "\u3000" <= ch <= "\u303f" or "\u3400" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" for ch in text
    )
