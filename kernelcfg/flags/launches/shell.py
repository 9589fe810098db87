"""Shell text read as a POSIX shell reads it, far enough to find a ``vllm serve`` launch.

A linear, single-pass reader: backslash-newline joins lines; words are split at blanks
and operators with single quotes, double quotes and backslashes honoured; ``#`` starts a
comment at the start of a word; ``;``, ``&``, ``|``, ``&&``, ``||`` and a line end end a
command; a redirection (``>``, ``2>&1``, ``< in``) is dropped with its target. A word
holding an unquoted ``$`` (``$VAR``, ``${VAR:-x}``, ``"$@"``, ``$(cmd)``) or a backquote
is *unresolved*: the shell fills it in at run time. So is a template's part (``{{ .Values.x
}}``, Helm's and Jinja's, blanks inside kept) and a documentation placeholder
(``--port <prefill_http_port>``: a word, not a redirection). Nothing is executed or
expanded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from kernelcfg.base.bounded import MAX_WORDS

__all__ = ["Command", "Word", "commands"]

_BLANKS = " \t"
_PLAIN = re.compile(r"[^ \t\n;&|<>'\"\\$`{]*")
"""A run of characters that stand for themselves outside quotes."""
_SIMPLE = re.compile(r"[^ \t\n;&|<>'\"\\$`{]+(?=[ \t\n;&|<>]|\Z)")
"""A whole word of characters that stand for themselves."""
_BLANK_RUN = re.compile(r"[ \t]+")
_QUOTED = re.compile(r'[^"\\$`]*')
"""A run of characters that stand for themselves inside double quotes."""
_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w./:-]*>(?=[ \t\n;&|)'\"]|\Z)")
"""A documentation placeholder written where a value goes (``<prefill_http_port>``)."""
_ARRAY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=\(", re.ASCII)
"""An array assignment's first word (``ARGS=(``)."""
_OPERATORS = ";&|"
_REDIRECTS = "<>"


class Word(NamedTuple):
    """One shell word as the shell would pass it (quotes removed)."""

    text: str
    """The word's text, quotes and escapes removed; ``$`` parts kept as written."""
    unresolved: bool
    """Whether the shell would expand part of it (an unquoted or double-quoted ``$``,
    a backquote)."""
    line: int
    """The 1-based line the word starts on."""
    column: int
    """Its 1-based column."""


@dataclass
class Command:
    """One simple command: its words, without redirections, up to an operator."""

    words: list[Word] = field(default_factory=list)
    """The words, in order."""
    end: int = 0
    """Where in the text the command ended (the offset after it)."""
    unbalanced: bool = False
    """Whether a quote in it was never closed (a shell refuses the script)."""
    cut: bool = False
    """Whether it had more than :data:`~kernelcfg.base.bounded.MAX_WORDS` words (the
    rest of its line was skipped, not read)."""


class _Reader:
    """The reader's state over one text (a single pass, index ``at``)."""

    def __init__(self, text: str, line: int, start: int) -> None:
        self.text = text
        self.at = start
        self.line = line
        self.line_start = text.rfind("\n", 0, start) + 1
        self.unbalanced = False
        self.array = False
        """Whether an array's words are being read (``ARGS=(`` … ``)``: its line ends
        end no command)."""

    def newline(self) -> None:
        """Count a line break just passed."""
        self.line += 1
        self.line_start = self.at

    def column(self) -> int:
        return self.at - self.line_start + 1


def commands(text: str, first_line: int = 1, start: int = 0) -> Iterator[Command]:
    """The simple commands of shell ``text`` from offset ``start`` (on line
    ``first_line``), each with its words (redirections and their targets dropped)."""
    reader = _Reader(text, first_line, start)
    current = Command()
    redirect = False
    while True:
        kind = _skip_blanks(reader)
        if kind == "end":
            break
        if kind == "break":
            if current.words:
                current.end, current.unbalanced = reader.at, reader.unbalanced
                yield current
            current = Command()
            redirect = False
            reader.unbalanced = False
            continue
        if kind == "redirect":
            redirect = True
            continue
        word = _word(reader)
        if _ARRAY.match(word.text):
            reader.array = not word.text.endswith(")")
        elif reader.array and word.text.endswith(")"):
            reader.array = False
        if redirect:
            redirect = False
            continue
        current.words.append(word)
        if len(current.words) > MAX_WORDS:
            current.cut = True
            end = _logical_end(reader.text, reader.at)
            reader.line += reader.text.count("\n", reader.at, end)
            reader.line_start = reader.text.rfind("\n", 0, end) + 1
            reader.at = end
    if current.words:
        current.end, current.unbalanced = reader.at, reader.unbalanced
        yield current


_LINE_END = re.compile(r"(?<!\\)\n")


def _logical_end(text: str, at: int) -> int:
    """Where the line holding ``at`` ends, continuation lines included."""
    found = _LINE_END.search(text, at)
    return len(text) if found is None else found.start()


def _skip_blanks(reader: _Reader) -> str:
    """Move past blanks, comments, line continuations and operators; say what comes:
    ``end``, ``break`` (a command ended), ``redirect`` (its target follows) or ``word``."""
    text = reader.text
    while reader.at < len(text):
        char = text[reader.at]
        if char in _BLANKS:
            reader.at = _BLANK_RUN.match(text, reader.at).end()  # type: ignore[union-attr]
        elif char == "\\" and text.startswith("\n", reader.at + 1):
            reader.at += 2
            reader.newline()
        elif char == "\n":
            reader.at += 1
            reader.newline()
            if not reader.array:
                return "break"
        elif char == "#":
            end = text.find("\n", reader.at)
            reader.at = len(text) if end < 0 else end
        elif char in _OPERATORS:
            while reader.at < len(text) and text[reader.at] in _OPERATORS:
                reader.at += 1
            return "break"
        elif char == "<" and _PLACEHOLDER.match(text, reader.at):
            return "word"
        elif char in _REDIRECTS or (char.isdigit() and _fd_redirect(text, reader.at)):
            if _pass_redirect(reader):
                return "redirect"
        else:
            return "word"
    return "end"


def _fd_redirect(text: str, at: int) -> bool:
    """Whether a word of digits at ``at`` is a file descriptor before ``<`` or ``>``."""
    end = at
    while end < len(text) and text[end].isdigit():
        end += 1
    return end > at and end < len(text) and text[end] in _REDIRECTS


def _pass_redirect(reader: _Reader) -> bool:
    """Move past a redirection operator (``2>``, ``>>``, ``>&``, ``<&``, ``&>``); whether
    a target word follows (``>&1``, ``2>&1`` and ``>&-`` name their descriptor at once)."""
    text = reader.text
    while reader.at < len(text) and text[reader.at].isdigit():
        reader.at += 1
    while reader.at < len(text) and text[reader.at] in "<>&|":
        reader.at += 1
    if text[reader.at - 1] != "&":
        return True
    start = reader.at
    while reader.at < len(text) and (text[reader.at].isdigit() or text[reader.at] == "-"):
        reader.at += 1
    return reader.at == start


def _word(reader: _Reader) -> Word:
    """One word, from a non-blank character to the next unquoted blank or operator."""
    text = reader.text
    line, column = reader.line, reader.column()
    simple = _SIMPLE.match(text, reader.at)
    if simple:  # most words: no quotes, escapes or expansions
        reader.at = simple.end()
        return Word(simple.group(), False, line, column)
    parts: list[str] = []
    unresolved = False
    while reader.at < len(text):
        char = text[reader.at]
        if char in "{<":
            took = _template(reader, parts)
            if took is not None:
                unresolved |= took
                continue
        if char in _BLANKS or char in "\n;&|<>":
            break
        unresolved |= _part(reader, parts, char)
    return Word("".join(parts), unresolved, line, column)


def _part(reader: _Reader, parts: list[str], char: str) -> bool:
    """One part of a word (a quoted string, an escape, an expansion, plain text);
    whether the shell would expand it."""
    text = reader.text
    if char == "'":
        end = text.find("'", reader.at + 1)
        if end < 0:
            reader.unbalanced = True
            end = len(text)
        _count_lines(reader, reader.at, end)
        parts.append(text[reader.at + 1 : end])
        reader.at = end + 1
    elif char == '"':
        return _double_quoted(reader, parts)
    elif char == "\\":
        _escaped(reader, parts)
    elif text.startswith("$'", reader.at):
        _ansi_c_quoted(reader, parts)
    elif text.startswith('$"', reader.at):
        reader.at += 1
        return _double_quoted(reader, parts)
    elif char in "$`":
        _expansion(reader, parts)
        return True
    else:
        end = _PLAIN.match(text, reader.at).end()  # type: ignore[union-attr]
        parts.append(text[reader.at : end])
        reader.at = end
    return False


def _template(reader: _Reader, parts: list[str]) -> bool | None:
    """A template's part (``{{ … }}``, to its closing braces) or a placeholder
    (``<name>``) at the reader, kept as written: ``True``; a lone ``{``, taken as
    itself: ``False``; ``None`` when neither is there."""
    text = reader.text
    if text.startswith("{{", reader.at):
        close = text.find("}}", reader.at + 2)
        end = len(text) if close < 0 else close + 2
    elif text[reader.at] == "<":
        placeholder = _PLACEHOLDER.match(text, reader.at)
        if placeholder is None:
            return None
        end = placeholder.end()
    else:
        parts.append("{")
        reader.at += 1
        return False
    _count_lines(reader, reader.at, end)
    parts.append(text[reader.at : end])
    reader.at = end
    return True


def _count_lines(reader: _Reader, start: int, end: int) -> None:
    """Count the line breaks inside a quoted part."""
    breaks = reader.text.count("\n", start, end)
    if breaks:
        reader.line += breaks
        reader.line_start = reader.text.rfind("\n", start, end) + 1


def _escaped(reader: _Reader, parts: list[str]) -> None:
    """A backslash outside quotes: the next character as itself (a newline: nothing)."""
    text = reader.text
    if reader.at + 1 < len(text):
        if text[reader.at + 1] == "\n":
            reader.at += 2
            reader.newline()
            return
        parts.append(text[reader.at + 1])
    reader.at += 2


def _double_quoted(reader: _Reader, parts: list[str]) -> bool:
    """A double-quoted part; whether it holds an expansion."""
    text = reader.text
    reader.at += 1
    unresolved = False
    start = reader.at
    while reader.at < len(text) and text[reader.at] != '"':
        reader.at = _QUOTED.match(text, reader.at).end()  # type: ignore[union-attr]
        if reader.at >= len(text) or text[reader.at] == '"':
            break
        char = text[reader.at]
        if char == "\\" and reader.at + 1 < len(text) and text[reader.at + 1] in '$`"\\\n':
            parts.append(text[start : reader.at])
            if text[reader.at + 1] != "\n":
                parts.append(text[reader.at + 1])
            reader.at += 2
            start = reader.at
            continue
        if char in "$`":
            unresolved = True
        reader.at += 1
    parts.append(text[start : reader.at])
    _count_lines(reader, start, reader.at)
    reader.unbalanced |= reader.at >= len(text)
    reader.at += 1
    return unresolved


_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b"}


def _ansi_c_quoted(reader: _Reader, parts: list[str]) -> None:
    """``$'...'``: bash's quoting with backslash escapes (``\\n`` is a line break)."""
    text = reader.text
    at = reader.at + 2
    out: list[str] = []
    while at < len(text) and text[at] != "'":
        if text[at] == "\\" and at + 1 < len(text):
            out.append(_ANSI_C.get(text[at + 1], "\\" + text[at + 1]))
            at += 2
        else:
            out.append(text[at])
            at += 1
    reader.unbalanced |= at >= len(text)
    _count_lines(reader, reader.at, at)
    parts.append("".join(out))
    reader.at = at + 1


def _expansion(reader: _Reader, parts: list[str]) -> None:
    """``$NAME``, ``${...}``, ``$(...)`` or a backquoted command, kept as written."""
    text = reader.text
    start = reader.at
    if text[reader.at] == "`":
        end = text.find("`", reader.at + 1)
        reader.at = len(text) if end < 0 else end + 1
    elif text.startswith(("${", "$("), reader.at):
        opening, closing = text[reader.at + 1], "}" if text[reader.at + 1] == "{" else ")"
        depth = 0
        while reader.at < len(text):
            char = text[reader.at]
            depth += char == opening
            depth -= char == closing
            reader.at += 1
            if depth == 0 and char == closing:
                break
    else:
        reader.at += 1
        while reader.at < len(text) and (text[reader.at].isalnum() or text[reader.at] in "_@*#?!-"):
            reader.at += 1
            if text[reader.at - 1] in "@*#?!-" and reader.at - start == 2:
                break
    _count_lines(reader, start, reader.at)
    parts.append(text[start : reader.at])
