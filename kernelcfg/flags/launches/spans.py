"""Shell text read forward: which parts are data (quoted strings, heredoc bodies), and
the command that holds a given offset, each part of the text read at most once."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernelcfg.flags.launches.shell import Command, commands

__all__ = ["Cursor", "Spans", "data_spans", "logical_start"]


class Cursor:
    """The commands of shell text, read forward only: the command that holds an offset,
    each part of the text read at most once (a line of 10,000 launches is one pass)."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self.text = text
        self.data = data_spans(text)
        self.end = 0
        """Where the last command read ended (an offset before it is passed)."""
        self._line, self._counted = first_line, 0
        self._reading: Iterator[Command] | None = None

    def command_at(self, at: int) -> Command | None:
        """The command holding the word at offset ``at``; ``None`` when ``at`` lies in
        data (a string or heredoc begun on an earlier line), in a command already
        handed out, or in no command."""
        if at < self.end:
            return None
        if self._reading is None or _LINE_END.search(self.text, self.end, at):
            start = logical_start(self.text, at)
            if self.data.holds(start, at):
                return None
            self._line += self.text.count("\n", self._counted, start)
            self._counted = start
            self._reading = commands(self.text, self._line, start)
        for command in self._reading:
            if command.end <= at:
                continue
            self.end = command.end
            return command
        self.end = len(self.text)
        return None


_LINE_END = re.compile(r"(?<!\\)\n")


@dataclass(frozen=True)
class Spans:
    """Parts of shell text that are data, not commands: quoted strings (by start and
    end) and heredoc bodies."""

    starts: list[int]
    """Where each quoted string or heredoc body starts, in order."""
    ends: list[int]
    """Where each ends."""
    heredocs: list[tuple[int, int]] = field(default_factory=list)
    """Each heredoc body's start and end."""

    def holds(self, line_start: int, at: int) -> bool:
        """Whether ``at`` lies in data that began before ``line_start`` (a string
        assigned across lines, ``CMD="vllm serve ..."``, or a heredoc's text)."""
        place = bisect.bisect_right(self.starts, at) - 1
        return place >= 0 and self.starts[place] < line_start and at < self.ends[place]

    def around(self, at: int) -> int | None:
        """Where the string or heredoc body holding ``at`` starts, if one holds it."""
        place = bisect.bisect_right(self.starts, at) - 1
        return self.starts[place] if place >= 0 and at < self.ends[place] else None


_DATA = re.compile(
    r"""'[^']*'?|"(?:[^"\\]|\\.)*"?|(?:(?<=\s)|^)\#[^\n]*|<<-?[ \t]*(['"]?)([A-Za-z_]\w*)\1|\\.""",
    re.MULTILINE | re.DOTALL,
)


def data_spans(text: str) -> Spans:
    """The quoted strings and heredoc bodies of shell text, in one pass (each string
    costs one step; plain text between them none)."""
    if "'" not in text and '"' not in text and "<<" not in text:
        return Spans([], [])
    starts: list[int] = []
    ends: list[int] = []
    heredocs: list[tuple[int, int]] = []
    at = 0
    while (match := _DATA.search(text, at)) is not None:
        at = max(match.end(), match.start() + 1)
        token = match.group()
        if token[0] in "'\"":
            starts.append(match.start())
            ends.append(match.end())
        elif token.startswith("<<"):
            body = text.find("\n", match.end()) + 1
            if body == 0:
                continue
            close = re.compile(rf"^[ \t]*{re.escape(match.group(2))}[ \t]*$", re.MULTILINE)
            found = close.search(text, body)
            stop = found.start() if found else len(text)
            starts.append(body)
            ends.append(stop)
            heredocs.append((body, stop))
            at = found.end() if found else len(text)
    return Spans(starts, ends, heredocs)


def logical_start(text: str, at: int) -> int:
    """The start of the line holding ``at``, and of the lines it continues (``\\``)."""
    start = text.rfind("\n", 0, at) + 1
    while start >= 2 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return start
