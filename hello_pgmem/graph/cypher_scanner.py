"""Apache AGE 1.5's Cypher scanner (``src/backend/parser/ag_scanner.l``), ported rule for rule.

The passthrough checks the tokens this scanner finds and then sends AGE a query written from those
tokens alone (:func:`emit`): one space between tokens, no comments, every string and quoted name
in one canonical spelling. What AGE runs is therefore what was checked, whatever the caller's
comments, whitespace or escapes would have made of the original text.

The scanner works on the query's UTF-8 bytes as flex does: at each position the rule with the
longest match wins, the earlier rule on a tie. It is stricter than AGE in four ways, each refused
with the reason: control characters other than tab, line feed and carriage return (AGE scans
``\\v`` and ``\\f`` as spaces), characters outside ASCII in a bare name (write it between
backticks), NUL anywhere, and anything AGE itself refuses (unterminated comments, strings and
quoted names, bad escapes, stray characters).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["name", "quoted", "string", "param", "integer", "decimal", "op"]


class ScanError(ValueError):
    """The query cannot be scanned as AGE scans it; the message says why and where."""


@dataclass(frozen=True)
class Token:
    """One token: ``value`` is a string's or a quoted name's decoded text, else the token as
    written. ``offset`` is where it starts in the query (in characters)."""

    kind: Kind
    value: str
    offset: int


_HEX = rb"[0-9A-Fa-f]"
_ID = rb"[A-Z_a-z\x80-\xff][$0-9A-Z_a-z\x80-\xff]*"
_DECIMAL = (rb"[0-9]+\.[0-9]*", rb"\.[0-9]+")
_SCI = rb"(?:[0-9]+|[0-9]+\.[0-9]*|\.[0-9]+)[Ee]"
_UNICODE = rb"\\(?:U" + _HEX + rb"{8}|u" + _HEX + rb"{4})"
_BAD_UNICODE = (rb"\\U" + _HEX + rb"{0,7}", rb"\\u" + _HEX + rb"{0,3}")

_OPERATORS = ("||", "#>", "?|", "<@", "@>", "?&", "<>", "<=", ">=", "..", "+=", "=~", "::")

Rules = tuple[tuple[str, re.Pattern[bytes]], ...]


def _rules(*rules: tuple[str, bytes | tuple[bytes, ...]]) -> Rules:
    """Compiled rules, one entry per alternative of a rule (``re`` takes the first alternative that
    matches, flex the longest: each alternative is tried on its own)."""
    return tuple(
        (name, re.compile(alternative, re.S))
        for name, patterns in rules
        for alternative in ((patterns,) if isinstance(patterns, bytes) else patterns)
    )


# The INITIAL start condition's rules, in ag_scanner.l's order (the order breaks ties).
_RULES = _rules(
    ("space", rb"[\t\n\v\f\r ]+"),
    ("comment_open", rb"/\*"),
    ("line_comment", rb"//[^\n\r]*"),
    ("integer", (rb"[0-9]+", rb"0[Xx]" + _HEX + rb"+")),
    ("bad_hex", rb"0[Xx]"),
    ("decimal", (*_DECIMAL, _SCI + rb"[+-]?[0-9]+")),
    ("range_integer", rb"[0-9]+\.\."),
    ("bad_exponent", (_SCI, _SCI + rb"[+-]")),
    ("dquote", rb'"'),
    ("squote", rb"'"),
    ("name", _ID),
    ("bquote", rb"`"),
    ("param", rb"\$" + _ID),
    ("op", tuple(re.escape(op.encode()) for op in _OPERATORS)),
    ("op", rb"[?%()*+,\-./:;<=>\[\]^{|}]"),
    ("other", rb"."),
)


def _string_rules(quote: bytes) -> Rules:
    """The rules inside a string opened by ``quote``, in order."""
    return _rules(
        ("chars", rb"[^" + quote + rb"\\]+"),
        ("escape", rb"\\[\"'/\\bfnrt]"),
        ("bad_escape", rb"\\[^Uu]?"),
        ("unicode", _UNICODE),
        ("bad_unicode", _BAD_UNICODE),
        ("close", quote),
    )


_STRING_RULES = {b'"': _string_rules(b'"'), b"'": _string_rules(b"'")}
_ESCAPES = {b"b": "\b", b"f": "\f", b"n": "\n", b"r": "\r", b"t": "\t"}
_ALLOWED_CONTROLS = frozenset("\t\n\r")
_ESCAPED = re.compile(r"[\\'$%\x00-\x1f\x7f]")  # written as \uXXXX in a string


def _longest(rules: Rules, data: bytes, pos: int) -> tuple[str, int]:
    """flex's choice at ``pos``: the rule with the longest match, the first one on a tie."""
    best, length = "", 0
    for name, pattern in rules:
        found = pattern.match(data, pos)
        if found and found.end() - pos > length:
            best, length = name, found.end() - pos
    return best, length


class _Scanner:
    def __init__(self, query: str) -> None:
        self.query = query
        self.data = query.encode("utf-8", "surrogatepass")
        self.pos = 0
        self.tokens: list[Token] = []

    def fail(self, reason: str, at: int | None = None) -> ScanError:
        where = len(self.data[: self.pos if at is None else at].decode("utf-8", "replace"))
        return ScanError(f"{reason} (at character {where + 1})")

    def add(self, kind: Kind, value: str, start: int) -> None:
        offset = len(self.data[:start].decode("utf-8", "replace"))
        self.tokens.append(Token(kind, value, offset))

    def run(self) -> list[Token]:
        actions: dict[str, Callable[[int, int], None]] = {
            "space": lambda start, end: None,
            "line_comment": lambda start, end: None,
            "comment_open": self.block_comment,
            "integer": lambda start, end: self.add("integer", self.text(start, end), start),
            "decimal": lambda start, end: self.add("decimal", self.text(start, end), start),
            "range_integer": self.range_integer,
            "name": self.name,
            "param": lambda start, end: self.add("param", self.text(start, end), start),
            "op": lambda start, end: self.add("op", self.text(start, end), start),
            "dquote": lambda start, end: self.string(start, b'"'),
            "squote": lambda start, end: self.string(start, b"'"),
            "bquote": self.quoted_name,
        }
        while self.pos < len(self.data):
            rule, length = _longest(_RULES, self.data, self.pos)
            start, end = self.pos, self.pos + length
            self.pos = end
            if rule == "bad_hex":
                raise self.fail("invalid hexadecimal integer literal", start)
            if rule == "bad_exponent":
                raise self.fail("invalid scientific notation literal", start)
            if rule == "other":
                char = self.text(start, len(self.data))[:1]
                raise self.fail(f"unexpected character {char!r}", start)
            actions[rule](start, end)
        return self.tokens

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def block_comment(self, start: int, end: int) -> None:
        close = self.data.find(b"*/", end)
        if close < 0:
            raise self.fail("unterminated /* comment", start)
        self.pos = close + 2

    def range_integer(self, start: int, end: int) -> None:
        self.pos = end - 2  # the ".." is scanned again, as AGE's yyless does
        self.add("integer", self.text(start, end - 2), start)

    def name(self, start: int, end: int) -> None:
        text = self.text(start, end)
        if not text.isascii():
            raise self.fail(f"the name {text!r} is not ASCII: write it between backticks", start)
        self.add("name", text, start)

    def quoted_name(self, start: int, end: int) -> None:
        parts: list[bytes] = []
        pos = end
        while True:
            tick = self.data.find(b"`", pos)
            if tick < 0:
                raise self.fail("unterminated quoted identifier", start)
            parts.append(self.data[pos:tick])
            if self.data[tick + 1 : tick + 2] == b"`":
                parts.append(b"`")
                pos = tick + 2
                continue
            self.pos = tick + 1
            break
        value = b"".join(parts).decode("utf-8", "surrogatepass")
        if not value:
            raise self.fail("zero-length quoted identifier", start)
        self.add("quoted", value, start)

    def string(self, start: int, quote: bytes) -> None:
        rules = _STRING_RULES[quote]
        out: list[str] = []
        high: int | None = None  # a high surrogate waiting for its low half
        while True:
            if self.pos >= len(self.data):
                raise self.fail("unterminated quoted string", start)
            rule, length = _longest(rules, self.data, self.pos)
            piece = self.data[self.pos : self.pos + length]
            at = self.pos
            self.pos += length
            if high is not None and rule != "unicode":
                raise self.fail("invalid Unicode surrogate pair", at)
            if rule == "chars":
                out.append(piece.decode("utf-8", "surrogatepass"))
            elif rule == "escape":
                out.append(_ESCAPES.get(piece[1:], piece[1:].decode()))
            elif rule == "bad_escape":
                if length == 1:  # a backslash at the very end: the string is unterminated
                    raise self.fail("unterminated quoted string", start)
                raise self.fail("invalid escape sequence", at)
            elif rule == "bad_unicode":
                raise self.fail("invalid Unicode escape sequence", at)
            elif rule == "unicode":
                code = int(piece[2:], 16)
                if high is not None:
                    if not 0xDC00 <= code <= 0xDFFF:
                        raise self.fail("invalid Unicode surrogate pair", at)
                    out.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
                    high = None
                elif code > 0x10FFFF or code == 0:
                    raise self.fail("unsupported Unicode escape value", at)
                elif 0xD800 <= code <= 0xDBFF:
                    high = code
                elif 0xDC00 <= code <= 0xDFFF:
                    raise self.fail("invalid Unicode surrogate pair", at)
                else:
                    out.append(chr(code))
            else:  # the closing quote
                self.add("string", "".join(out), start)
                return


def scan(query: str) -> list[Token]:
    """The tokens AGE finds in ``query`` (spaces and comments dropped); :class:`ScanError` for
    what AGE refuses and for the characters this port refuses (module docstring)."""
    for offset, char in enumerate(query):
        if (char < " " and char not in _ALLOWED_CONTROLS) or char == "\x7f":
            raise ScanError(f"control character {char!r} is not allowed (at character {offset + 1})")
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise ScanError(f"unpaired surrogate {char!r} (at character {offset + 1})")
    return _Scanner(query).run()


def spell(token: Token) -> str:
    """The canonical text of one token, which :func:`scan` reads back as the same token."""
    if token.kind == "string":
        return "'" + _ESCAPED.sub(lambda found: f"\\u{ord(found.group()):04x}", token.value) + "'"
    if token.kind == "quoted":
        return "`" + token.value.replace("`", "``") + "`"
    return token.value


def emit(tokens: Iterable[Token]) -> str:
    """The query written from ``tokens`` alone: one space between tokens, nothing else. A string
    never holds ``\\``, ``'``, ``$``, ``%`` or a control character as such (each is a ``\\u``
    escape), so no string can close the SQL dollar quote the query travels in or hold a driver
    placeholder; the ``%`` operator is doubled by the caller that builds the SQL."""
    return " ".join(spell(token) for token in tokens)
