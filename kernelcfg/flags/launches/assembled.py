"""Launches built before they run: a command assembled in a shell variable and run by
``eval "$CMD"``, ``bash -c "$CMD"``, ``exec $CMD`` or ``$CMD``, and an image named by a
variable (``docker run … $IMAGE ARGS``).

A variable is followed when a value assigned to it holds a launch or one of vLLM's
images. From that assignment on, the script is read forward: ``CMD="$CMD --flag"`` and
``CMD+=" --flag"`` append, an array's ``CMD+=(--flag)`` too, a plain ``CMD=…`` replaces.
An append inside a compound command (``if …; then CMD+=…; fi``, a loop, a ``case``) is
optional: it is left out of what is judged and its line named in the launch's note, so a
flag added only on request never fails the line. Where the variable is run, its value
stands in and the launch is read as the shell reads it; the launch is reported where the
variable is first assigned. At most :data:`MAX_VARIABLES` variables a script, each read
for at most :data:`MAX_COMMANDS` commands.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.shell import Word, commands
from kernelcfg.flags.launches.spans import Spans, data_spans, logical_start
from kernelcfg.flags.launches.words import Found, Note, from_shell, from_words

__all__ = ["MAX_COMMANDS", "MAX_VARIABLES", "launches"]

MAX_VARIABLES = 8
"""The most variables of one script followed."""
MAX_COMMANDS = 20_000
"""The most commands read after a variable's first assignment."""

_DECLARE = r"(?:(?:export|local|readonly|typeset|declare(?:\s+-\w+)*)\s+)?"
_BEFORE_QUOTE = re.compile(rf"(?:^|[\s;&|(]){_DECLARE}([A-Za-z_]\w*)\+?=\$?$")
"""An assignment whose quoted value starts where the text ends."""
_BEFORE_BARE = re.compile(rf"(?:^|[\s;&|]){_DECLARE}([A-Za-z_]\w*)\+?=(?:\([^()]*|[^\s;&|()'\"]*)$")
"""An assignment whose unquoted (or array) value reaches where the text ends."""
_DECLARERS = frozenset({"export", "local", "readonly", "typeset", "declare"})
_OPENERS = frozenset({"if", "case", "for", "while", "until", "select"})
_CLOSERS = frozenset({"fi", "esac", "done"})
_LEADING = frozenset({"then", "else", "elif", "do", "{", "!"})


def launches(
    text: str, path: str, first_line: int = 1, env: Mapping[str, str] | None = None
) -> Iterator[Found]:
    """The launches that shell ``text`` assembles in variables before it runs them."""
    spans = data_spans(text)
    followed: dict[str, int] = {}
    for match in images.marker_in_shell().finditer(text):
        assigned = _assigned_at(text, spans, match.start())
        if assigned is not None and assigned[0] not in followed:
            followed[assigned[0]] = assigned[1]
            if len(followed) >= MAX_VARIABLES:
                break
    for name, start in followed.items():
        line = first_line + text.count("\n", 0, start)
        yield from _Follow(name, path, dict(env or {})).read(text, line, start)


def _assigned_at(text: str, spans: Spans, at: int) -> tuple[str, int] | None:
    """The variable whose assigned value holds offset ``at``, and where the line of
    that assignment starts; ``None`` when ``at`` is in no assignment."""
    quoted = spans.around(at)
    end = at if quoted is None else quoted
    start = logical_start(text, end)
    before = text[max(start, end - 4096) : end]
    match = (_BEFORE_BARE if quoted is None else _BEFORE_QUOTE).search(before)
    return None if match is None else (match.group(1), start)


class _Value(NamedTuple):
    text: str
    """The value as a script would hold it (an array's words quoted again)."""
    line: int
    """Where it was first assigned."""
    column: int
    """Its column."""


@dataclasses.dataclass
class _Follow:
    """One variable followed through a script."""

    name: str
    """The variable."""
    path: str
    """The file."""
    env: dict[str, str]
    """The environment of the script's launches."""
    value: _Value | None = None
    """Its value so far."""
    optional: list[int] = dataclasses.field(default_factory=list)
    """The lines of appends under a condition (left out)."""
    appended: list[int] = dataclasses.field(default_factory=list)
    """The lines of appends taken."""

    def read(self, text: str, line: int, start: int) -> Iterator[Found]:
        """The launches the variable makes, reading ``text`` from ``start``."""
        depth = 0
        reference = re.compile(rf"\$\{{{self.name}(?:\[[@*]\])?\}}|\${self.name}\b")
        for count, command in enumerate(commands(text, line, start)):
            if count >= MAX_COMMANDS:
                return
            words = command.words
            head = _past_leading(words)
            first = words[head].text if head < len(words) else ""
            if first in _CLOSERS:
                depth = max(0, depth - 1)
                continue
            depth += first in _OPENERS
            if self._assign(words, head, depth, reference):
                continue
            if self.value is not None and any(reference.search(w.text) for w in words):
                yield from self._run(words, reference)

    def _assign(self, words: Sequence[Word], head: int, depth: int, ref: re.Pattern[str]) -> bool:
        """Take an assignment to the variable in ``words``; whether there was one."""
        while head < len(words) and words[head].text in _DECLARERS:
            head += 1
        if head >= len(words):
            return False
        word = words[head]
        prefix = next(
            (p for p in (f"{self.name}=", f"{self.name}+=") if word.text.startswith(p)), ""
        )
        if not prefix:
            return False
        value = word.text[len(prefix) :]
        array = value.startswith("(")
        if array:  # an array: its words, to the one that closes it
            value = _array(value[1:], word, words[head + 1 :])
        value = _EXPANDED.sub(lambda m: m.group() if ref.fullmatch(m.group()) else _held(m), value)
        if self.value is None:
            self.value = _Value(value, word.line, word.column)
            return True
        if depth > 0:
            self.optional.append(word.line)
            return True
        current = self.value.text
        if not prefix.endswith("+="):
            joined = ref.sub(lambda _: current, value)
        else:
            joined = f"{current} {value}" if array else current + value
        self.value = self.value._replace(text=joined)
        self.appended.append(word.line)
        return True

    def _run(self, words: Sequence[Word], ref: re.Pattern[str]) -> Iterator[Found]:
        """The launch a command that runs the variable makes."""
        assert self.value is not None
        value = self.value.text
        texts = [w.text for w in words]
        program = texts[0].rsplit("/", 1)[-1] if texts else ""
        if program == "eval" or (program in ("sh", "bash", "dash", "zsh") and "-c" in texts):
            script = " ".join(texts[1:]) if program == "eval" else _script_of(texts)
            found = list(from_shell(ref.sub(lambda _: value, script), self.path, words[0].line))
        else:
            made: list[Word] = []
            for word in words:
                if ref.fullmatch(word.text):
                    made += _split(value, word)
                else:
                    made.append(word)
            found = list(from_words(made, self.path, self.env))
        image = images.is_server(value.strip())  # an image: the launch stays where it runs
        for launch in map(_released, found):
            yield dataclasses.replace(
                launch,
                line=launch.line if image else self.value.line,
                column=launch.column if image else self.value.column,
                env={**self.env, **launch.env},
                notes=(*launch.notes, self._note(words[0].line)),
            )

    def _note(self, run_at: int) -> Note:
        """How the launch was assembled."""
        said = f"assembled in ${self.name} (line {self.value.line if self.value else run_at}"
        if self.appended:
            said += f", appended at {_lines(self.appended)}"
        said += f") and run at line {run_at}"
        if self.optional:
            said += (
                f"; the parts appended under a condition ({_lines(self.optional)}) are not judged"
            )
        return Note("assembled-launch", said)


_EXPANDED = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_]\w*|\$[@*#?0-9]")
"""An expansion in an assigned value (made when the value is assigned)."""
_HELD = re.compile("\x01([^\x02]*)\x02")


def _held(match: re.Match[str]) -> str:
    """An expansion made at assignment, held so that reading the value again (``eval``,
    quotes and all) keeps it a word the run fills in."""
    return f"\x01{match.group()}\x02"


def _released(found: Found) -> Found:
    """A launch with the held expansions written as they were, and unresolved."""
    if not any("\x01" in word for word in found.argv):
        return found
    argv = [_HELD.sub(r"\1", word) for word in found.argv]
    held = [_HELD.sub(r"\1", w) for w in found.argv if "\x01" in w]
    unresolved = list(dict.fromkeys([*(_HELD.sub(r"\1", w) for w in found.unresolved), *held]))
    return dataclasses.replace(found, argv=argv, unresolved=unresolved)


def _past_leading(words: Sequence[Word]) -> int:
    """Past the shell keywords and case patterns a command starts with."""
    at = 0
    while at < len(words) and (words[at].text in _LEADING or words[at].text.endswith(")")):
        at += 1
    return at


def _array(first: str, word: Word, rest: Sequence[Word]) -> str:
    """An array's words (``NAME=(a "$B" c)``) as a script would write them again, each
    word that the shell expands left to expand."""
    items = [Word(first, word.unresolved and "$" in first, word.line, word.column), *rest]
    if items[-1].text.endswith(")"):
        last = items[-1]
        items[-1] = last._replace(text=last.text[:-1])
    return " ".join(_quoted(item) for item in items if item.text)


def _quoted(word: Word) -> str:
    """A word written so that the shell reads it back the same (an expansion stays one)."""
    if word.unresolved:
        return '"' + word.text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return shlex.quote(word.text)


def _script_of(texts: Sequence[str]) -> str:
    """The script of ``sh -c SCRIPT``."""
    at = texts.index("-c")
    return texts[at + 1] if at + 1 < len(texts) else ""


def _split(value: str, where: Word) -> list[Word]:
    """A variable's value split into words where the variable stands."""
    for command in commands(value):
        return [Word(w.text, w.unresolved, where.line, where.column) for w in command.words]
    return []


def _lines(numbers: Sequence[int]) -> str:
    """``lines 3, 5, 9`` (the first ten)."""
    shown = ", ".join(str(n) for n in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"
