"""Helm (Go template) files read before they are rendered.

A chart's template is not YAML until Helm renders it. It is read as the YAML it renders
to with what is certain kept: a line holding only actions is blanked (``{{- toYaml . |
nindent 12 }}``: what it writes is unknown); of an ``{{ if }}`` with a final ``{{ else
}}`` only that branch is kept (what renders when no special case holds); the list items an
``{{ if }}`` without one adds (a flag, an environment variable) are optional, so they are
left out, while such a block of anything else (a whole manifest behind a feature switch)
is kept; ``{{ with }}`` and ``{{ range }}`` bodies are kept. Every other action (``{{
.Values.model | quote }}``) becomes a placeholder word that :func:`Template.restore` turns
back into the action's text — a word the run fills in. Lines keep their numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Template", "rendered"]

_ACTION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_ONLY_ACTIONS = re.compile(r"^[ \t]*(?:\{\{.*?\}\}[ \t]*)+$")
_KEYWORD = re.compile(r"\{\{-?\s*(if|with|range|else|end|define|block)\b")
_OPENING = frozenset({"if", "with", "range", "define", "block"})
_PLACEHOLDER = re.compile(r"kcfgtpl(\d+)x")


@dataclass
class Template:
    """A template rendered for reading, and its actions by placeholder."""

    text: str
    """The text with actions blanked or replaced by placeholders."""
    actions: list[str] = field(default_factory=list)
    """Each placeholder's action, by its number."""
    branches: bool = False
    """Whether it held conditions (``if``/``with``/``range``) read at a first branch."""

    def restore(self, text: str) -> str:
        """``text`` with each placeholder turned back into its action."""
        if "kcfgtpl" not in text:
            return text
        return _PLACEHOLDER.sub(lambda m: self.actions[int(m.group(1))], text)


def rendered(text: str) -> Template:
    """``text`` as :class:`Template` reads it."""
    template = Template("")
    lines = text.split("\n")
    plan = _plan(lines)
    out: list[str] = []
    blocks: list[tuple[bool, str | None]] = []  # per open block: left out now?, its plan
    for number, line in enumerate(lines):
        skipped = any(skip for skip, _ in blocks)
        if "{{" not in line:
            out.append("" if skipped else line)
            continue
        if _ONLY_ACTIONS.match(line):
            _control(line, blocks, template, plan.get(number))
            out.append("")
            continue
        out.append("" if skipped else _ACTION.sub(lambda m: _hold(m, template), line))
    template.text = "\n".join(out)
    return template


_DEFAULT = "default"
"""An ``{{ if }}`` with a final ``{{ else }}``: only the ``else`` branch is read."""
_OPTIONAL = "optional"
"""An ``{{ if }}`` without one, whose body is list items: left out."""


def _plan(lines: list[str]) -> dict[int, str]:
    """How each ``{{ if }}`` line's blocks are read: :data:`_DEFAULT` or
    :data:`_OPTIONAL` (absent: kept)."""
    final_else: set[int] = set()
    first_item: set[int] = set()
    opened: list[list[object]] = []  # [keyword, line, body seen, last else is plain]
    for number, line in enumerate(lines):
        if "{{" in line and _ONLY_ACTIONS.match(line):
            for match in _KEYWORD.finditer(line):
                _step(match, number, opened, final_else)
            continue
        if line.strip() and opened and not opened[-1][2]:
            opened[-1][2] = True
            if line.lstrip().startswith("- "):
                first_item.add(int(str(opened[-1][1])))
    plan = dict.fromkeys(first_item, _OPTIONAL)
    plan.update(dict.fromkeys(final_else, _DEFAULT))
    return plan


def _step(match: re.Match[str], number: int, opened: list[list[object]], final: set[int]) -> None:
    """One action keyword of the planning pass."""
    keyword = match.group(1)
    if keyword in _OPENING:
        opened.append([keyword, number, False, False])
    elif keyword == "else" and opened and opened[-1][0] == "if":
        opened[-1][3] = not match.string[match.end() :].lstrip().startswith("if")
    elif keyword == "end" and opened:
        kind, start, _, plain = opened.pop()
        if kind == "if" and plain:
            final.add(int(str(start)))


def _control(
    line: str, blocks: list[tuple[bool, str | None]], template: Template, plan: str | None
) -> None:
    """Follow the blocks a line of actions opens, switches and closes."""
    for match in _KEYWORD.finditer(line):
        keyword = match.group(1)
        if keyword in _OPENING:
            blocks.append((keyword == "if" and plan in (_DEFAULT, _OPTIONAL), plan))
            template.branches = True
        elif keyword == "else" and blocks:
            final = not match.string[match.end() :].lstrip().startswith("if")
            opened = blocks[-1][1]
            blocks[-1] = (not (final and opened == _DEFAULT), opened)
        elif keyword == "end" and blocks:
            blocks.pop()


def _hold(match: re.Match[str], template: Template) -> str:
    """A placeholder word for one action."""
    template.actions.append(match.group())
    return f"kcfgtpl{len(template.actions) - 1}x"
