"""The launches a Python syntax tree writes.

- An argv list or tuple (``["vllm", "serve", model, "--port", str(port)]``): strings are
  words, any other expression a word the program fills in (named, never guessed);
  ``sys.executable`` is ``python``. A list assigned to a name is followed through its
  scope: ``cmd += [...]``, ``cmd.append(x)`` and ``cmd.extend([...])`` add to it, and
  it is read where a call is handed the name (``subprocess.Popen(cmd)``), else where the
  scope ends. An append under a condition or in a loop is left out of what is judged and
  its line named in the launch's note.
- A command string that begins with a launch (``vllm serve``, ``python -m vllm.``): a
  literal, an f-string, ``"…".format(…)``, ``"…" % (…)`` or strings added together; the
  parts the program fills in become words written ``${expression}``.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator, Sequence

from kernelcfg.flags.launches.shell import Word
from kernelcfg.flags.launches.words import Found, Note, from_shell, from_words

__all__ = ["launches_in_tree"]

_COMMANDS = ("vllm serve", "python -m vllm.", "python3 -m vllm.")
"""How a command string that launches vLLM begins."""
_GROWERS = frozenset({"append", "extend"})
_CONDITIONAL = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Match)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def launches_in_tree(tree: ast.Module, path: str) -> Iterator[Found]:
    """Every launch written in a parsed Python file, in the file's order."""
    yield from sorted(_launches(tree, path), key=lambda found: (found.line, found.column))


def _launches(tree: ast.Module, path: str) -> Iterator[Found]:
    read: set[int] = set()
    for body in _bodies(tree):
        yield from _Scope(path, read).run(body)
    for node in ast.walk(tree):
        if id(node) in read:
            continue
        if isinstance(node, ast.List | ast.Tuple):
            words = _list_words(node.elts)
            if _names_vllm(words):
                yield from from_words(words, path)
        elif isinstance(node, ast.expr):
            text = _command_text(node, read)
            if text is not None:
                yield from from_shell(text, path, node.lineno)


def _bodies(tree: ast.Module) -> Iterator[list[ast.stmt]]:
    """The statement lists of the module and of each function and class."""
    yield tree.body
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.body


def _list_words(items: Sequence[ast.expr]) -> list[Word]:
    """An argv list's words: strings as written, other expressions to be filled in."""
    words: list[Word] = []
    for item in items:
        line, column = item.lineno, item.col_offset + 1
        if isinstance(item, ast.Constant) and isinstance(item.value, str | int | float):
            words.append(Word(str(item.value), "$" in str(item.value), line, column))
        elif _is_executable(item):
            words.append(Word("python", False, line, column))
        elif isinstance(item, ast.Starred):
            words.append(Word("*" + ast.unparse(item.value), True, line, column))
        else:
            words.append(Word(ast.unparse(item), True, line, column))
    return words


def _names_vllm(words: Sequence[Word]) -> bool:
    return any("vllm" in w.text for w in words if not w.unresolved)


def _is_executable(node: ast.expr) -> bool:
    """``sys.executable``: the running Python."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "executable"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


@dataclasses.dataclass
class _List:
    """An argv list held by a name."""

    words: list[Word]
    """Its words so far."""
    line: int
    """Where it was assigned."""
    appended: list[int] = dataclasses.field(default_factory=list)
    """The lines of what was added to it."""
    optional: list[int] = dataclasses.field(default_factory=list)
    """The lines of what was added under a condition (left out)."""
    done: bool = False
    """Whether it was read already."""


@dataclasses.dataclass
class _Scope:
    """The argv lists held by names in one scope (a module's or a function's body)."""

    path: str
    """The file."""
    read: set[int]
    """The nodes read here, not to be read again as plain literals."""
    lists: dict[str, _List] = dataclasses.field(default_factory=dict)
    """The lists, by name."""

    def run(self, body: list[ast.stmt]) -> Iterator[Found]:
        """The launches the lists of a scope make."""
        yield from self._statements(body, conditional=False)
        for name, held in self.lists.items():
            if not held.done:
                yield from self._launch(name, held)

    def _statements(self, body: list[ast.stmt], *, conditional: bool) -> Iterator[Found]:
        for statement in body:
            if isinstance(statement, _SCOPES):
                continue
            if self._grow(statement, conditional=conditional):
                continue
            yield from self._handed(statement)
            if isinstance(statement, _CONDITIONAL):
                for part in ("body", "orelse"):
                    yield from self._statements(getattr(statement, part, []), conditional=True)
                for case in getattr(statement, "cases", []):
                    yield from self._statements(case.body, conditional=True)
            elif isinstance(statement, ast.With | ast.AsyncWith | ast.Try):
                yield from self._statements(statement.body, conditional=conditional)

    def _grow(self, statement: ast.stmt, *, conditional: bool) -> bool:
        """Take an assignment of a list, or an addition to one; whether there was one."""
        name, items, line = _growth(statement)
        if name is None:
            return False
        held = self.lists.get(name)
        if isinstance(statement, ast.Assign):
            words = _list_words(items)
            if not _names_vllm(words):
                return False
            self.read.add(id(statement.value))
            self.lists[name] = _List(words, line)
            return True
        if held is None:
            return False
        self.read.update(id(item) for item in items)
        if conditional:
            held.optional.append(line)
        else:
            held.words += _list_words(items)
            held.appended.append(line)
        return True

    def _handed(self, statement: ast.stmt) -> Iterator[Found]:
        """The lists a statement's calls are handed (``Popen(cmd)``), read there."""
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(argument, ast.Name) and argument.id in self.lists:
                    held = self.lists[argument.id]
                    if not held.done:
                        yield from self._launch(argument.id, held)

    def _launch(self, name: str, held: _List) -> Iterator[Found]:
        held.done = True
        note = _note(name, held)
        for found in from_words(held.words, self.path):
            placed = dataclasses.replace(found, line=held.line)
            yield dataclasses.replace(placed, notes=(*found.notes, note)) if note else placed


def _growth(statement: ast.stmt) -> tuple[str | None, list[ast.expr], int]:
    """What a statement does to a list held by a name: ``name = [...]``, ``name +=
    [...]``, ``name.append(x)``, ``name.extend([...])``; the name, the items, the line."""
    line = statement.lineno
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
        if isinstance(target, ast.Name) and isinstance(value, ast.List | ast.Tuple):
            return target.id, list(value.elts), line
    if (
        isinstance(statement, ast.AugAssign)
        and isinstance(statement.op, ast.Add)
        and isinstance(statement.target, ast.Name)
    ):
        return statement.target.id, _items(statement.value), line
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _GROWERS
            and len(call.args) == 1
        ):
            argument = call.args[0]
            items = _items(argument) if func.attr == "extend" else [argument]
            return func.value.id, items, line
    return None, [], line


def _items(node: ast.expr) -> list[ast.expr]:
    """The items a value adds to a list (a list's, or the value as one unknown word)."""
    if isinstance(node, ast.List | ast.Tuple):
        return list(node.elts)
    return [ast.Starred(value=node, ctx=ast.Load(), lineno=node.lineno, col_offset=node.col_offset)]


def _note(name: str, held: _List) -> Note | None:
    """How a list was assembled, when it was not written in one piece."""
    if not (held.appended or held.optional):
        return None
    said = f"assembled in the list {name} (line {held.line}"
    if held.appended:
        said += ", added to at line" + ("s " if len(held.appended) > 1 else " ")
        said += ", ".join(str(n) for n in held.appended[:10])
    said += ")"
    if held.optional:
        lines = ", ".join(str(n) for n in held.optional[:10])
        said += f"; what is added under a condition (line {lines}) is not judged"
    return Note("assembled-launch", said)


def _command_text(node: ast.expr, read: set[int]) -> str | None:
    """A command string that launches vLLM, the parts the program fills in written
    ``${expression}``; ``None`` for any other expression."""
    parts = _string_parts(node, read)
    if parts is None:
        return None
    text = "".join(parts)
    return text if text.lstrip().startswith(_COMMANDS) else None


def _string_parts(node: ast.expr, read: set[int]) -> list[str] | None:
    """The parts of a string expression: its text, ``${…}`` where a value goes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        read.update(id(value) for value in node.values)
        return [
            str(v.value) if isinstance(v, ast.Constant) else _filled(getattr(v, "value", v))
            for v in node.values
        ]
    if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant | ast.JoinedStr):
        return _operator_parts(node, read)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        template = node.func.value
        if (
            node.func.attr == "format"
            and isinstance(template, ast.Constant)
            and isinstance(template.value, str)
        ):
            read.add(id(template))
            return [_format_fields(template.value)]
    return None


def _operator_parts(node: ast.BinOp, read: set[int]) -> list[str] | None:
    """``"…" + x`` and ``"… %s" % x``."""
    left = _string_parts(node.left, read)
    if left is None:
        return None
    read.add(id(node.left))
    if isinstance(node.op, ast.Mod):
        return [_percent_fields("".join(left))]
    if isinstance(node.op, ast.Add):
        right = _string_parts(node.right, read)
        if right is not None:
            read.add(id(node.right))
        return [*left, *(right if right is not None else [_filled(node.right)])]
    return None


def _filled(node: ast.expr) -> str:
    """Where an expression's value goes in a command string."""
    return "python" if _is_executable(node) else "${" + ast.unparse(node) + "}"


def _format_fields(text: str) -> str:
    """``str.format``'s fields (``{}``, ``{model}``) as values filled in."""
    import string

    out: list[str] = []
    try:
        for literal, field, _, _ in string.Formatter().parse(text):
            out.append(literal)
            if field is not None:
                out.append("${" + (field or "_") + "}")
    except ValueError:
        return text
    return "".join(out)


def _percent_fields(text: str) -> str:
    """``%s``/``%d``/``%(name)s`` fields as values filled in."""
    import re

    return re.sub(r"%(?:\((\w+)\))?[-#0 +]*\d*(?:\.\d+)?[sdifrx]", r"${\1}", text).replace(
        "%%", "%"
    )
