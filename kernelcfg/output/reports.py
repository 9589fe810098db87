"""CI report formats: GitHub workflow annotations, JUnit XML and SARIF 2.1.0.

Each takes a list of :class:`Entry` — one per resolved command line (or per finding of
``lint-env``) — and returns text. GitHub shows the annotations on the run; JUnit
makes each entry a test case (failed when it has errors); SARIF makes each problem a
result, for code-scanning dashboards. An entry with a file is placed on its line: the
annotation's ``file=``/``line=``, the test case's ``file``/``line``, the result's
``physicalLocation`` (its URI relative to the repository root).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes
from xml.etree import ElementTree as ET

from kernelcfg._version import __version__
from kernelcfg.base.bounded import one_line

__all__ = ["Entry", "artifact_location", "github", "junit", "repository_root", "sarif"]

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
_SRCROOT = "%SRCROOT%"
"""The ``uriBaseId`` of file URIs relative to the repository root (GitHub's convention)."""


@dataclass
class Entry:
    """One checked thing: a command line, a batch line, an environment variable."""

    name: str
    """A short name that identifies it (a batch line's id, a variable)."""
    exit_code: int
    """Its exit code: 0 fine, 1 refused, 2 unusable."""
    problems: list[dict[str, Any]] = field(default_factory=list)
    """Its problems, as in the JSON output (severity, code, field, message)."""
    detail: str = ""
    """What was checked, for people (the flags, the value)."""
    file: str | None = None
    """The file it was found in (``scan``), for annotations on that line."""
    line: int | None = None
    """Its line in that file (1-based)."""
    column: int | None = None
    """Its column on that line (1-based), when known."""
    cell: dict[str, str] = field(default_factory=dict)
    """The ``--matrix`` cell it was resolved for (empty without a matrix): two cells of one
    line are two entries, told apart by :attr:`label`."""

    @property
    def label(self) -> str:
        """Its name, with its matrix cell when it has one: ``r1 [device=h100]``."""
        if not self.cell:
            return self.name
        return f"{self.name} [{', '.join(f'{k}={v}' for k, v in self.cell.items())}]"


def _escape_data(text: str) -> str:
    """A workflow command's message: GitHub's escapes for ``%``, CR and LF; any other
    control character (a terminal escape in a file name or value) written as ``\\x1b``."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text if text.isprintable() else one_line(text)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(entries: Sequence[Entry], tool: str = "kernelcfg") -> str:
    """``::error title=…::message`` lines, one per problem (notes become ``::notice``)."""
    kinds = {"error": "error", "warning": "warning", "info": "notice"}
    lines = []
    for entry in entries:
        for problem in entry.problems:
            title = _escape_property(f"{tool} {entry.label}: {problem['code']}")
            message = _escape_data(problem["message"])
            where = _github_where(entry)
            lines.append(f"::{kinds[problem['severity']]} {where}title={title}::{message}")
    return "".join(line + "\n" for line in lines)


def _github_where(entry: Entry) -> str:
    """``file=…,line=…,col=…,`` for an entry found in a file; empty for one that was not."""
    if entry.file is None:
        return ""
    where = f"file={_escape_property(entry.file)},"
    if entry.line is not None:
        where += f"line={entry.line},"
        if entry.column is not None:
            where += f"col={entry.column},"
    return where


_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold written as ``\\xNN`` escapes."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def junit(entries: Sequence[Entry], suite: str = "kernelcfg") -> str:
    """A JUnit XML report: one test case per entry; errors make it fail."""
    failures = sum(1 for e in entries if e.exit_code == 1)
    errors = sum(1 for e in entries if e.exit_code not in (0, 1))
    root = ET.Element(
        "testsuites",
        name=suite,
        tests=str(len(entries)),
        failures=str(failures),
        errors=str(errors),
    )
    suite_el = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(entries)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
    )
    for entry in entries:
        case = ET.SubElement(suite_el, "testcase", classname=suite, name=_xml(entry.label))
        if entry.file is not None:
            case.set("file", _xml(entry.file))
            if entry.line is not None:
                case.set("line", str(entry.line))
        bad = [p for p in entry.problems if p["severity"] == "error"]
        if entry.exit_code != 0:
            tag = "failure" if entry.exit_code == 1 else "error"
            first = _xml(bad[0]["message"]) if bad else f"exit code {entry.exit_code}"
            node = ET.SubElement(case, tag, message=first, type=bad[0]["code"] if bad else tag)
            node.text = _xml("\n".join(p["message"] for p in bad)) or first
        notes = [p for p in entry.problems if p["severity"] != "error"]
        if notes or entry.detail:
            out = ET.SubElement(case, "system-out")
            out.text = _xml(
                "\n".join(
                    ([entry.detail] if entry.detail else [])
                    + [f"{p['severity']}: {p['message']}" for p in notes]
                )
            )
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def repository_root() -> str:
    """The folder SARIF file URIs are relative to: ``GITHUB_WORKSPACE`` when set (the
    checkout, in GitHub Actions), else the current directory."""
    return os.environ.get("GITHUB_WORKSPACE") or os.getcwd()


def artifact_location(file: str, root: str) -> dict[str, str]:
    """A SARIF ``artifactLocation`` of ``file`` (a path from the current directory): a URI
    relative to ``root`` with ``uriBaseId`` %SRCROOT%, or, outside ``root``, an absolute
    ``file://`` URI; percent-encoded as RFC 3986 requires. Symbolic links in the folders
    are resolved on both sides, so a checkout reached through one is still ``root``."""
    absolute = os.path.abspath(file)
    folder, name = os.path.split(absolute)
    inside = os.path.relpath(os.path.join(os.path.realpath(folder), name), os.path.realpath(root))
    if inside == os.pardir or inside.startswith(os.pardir + os.sep):
        return {"uri": Path(absolute).as_uri()}
    return {"uri": quote_from_bytes(os.fsencode(inside), safe="/"), "uriBaseId": _SRCROOT}


def _location(entry: Entry, root: str) -> dict[str, Any]:
    """A result's location: the file and line (a problem of a whole file on its line 1)
    when the entry has a file, and always its name (with its matrix cell)."""
    location: dict[str, Any] = {}
    if entry.file is not None:
        region: dict[str, int] = {"startLine": entry.line or 1}
        if entry.line is not None and entry.column is not None:
            region["startColumn"] = entry.column
        location["physicalLocation"] = {
            "artifactLocation": artifact_location(entry.file, root),
            "region": region,
        }
    location["logicalLocations"] = [{"name": entry.label, "kind": "object"}]
    return location


def _rule(code: str) -> dict[str, Any]:
    """The ``tool.driver.rules`` entry of a problem code, with the descriptions GitHub
    shows at the top of an alert (each result's message says the rest)."""
    return {
        "id": code,
        "name": code,
        "shortDescription": {"text": f"kernelcfg: {code.replace('-', ' ')}"},
        "fullDescription": {"text": f"kernelcfg problem {code}: see each result's message."},
    }


def sarif(entries: Sequence[Entry], tool: str = "kernelcfg", root: str | None = None) -> str:
    """A SARIF 2.1.0 log: one result per problem, rules named by problem code; a result of
    an entry found in a file is placed on its line, its URI relative to ``root`` (default:
    :func:`repository_root`)."""
    root = repository_root() if root is None else root
    codes = sorted({p["code"] for e in entries for p in e.problems})
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for entry in entries:
        location = _location(entry, root) if entry.problems else {}
        for problem in entry.problems:
            result: dict[str, Any] = {
                "ruleId": problem["code"],
                "ruleIndex": index[problem["code"]],
                "level": _LEVELS[problem["severity"]],
                "message": {"text": problem["message"]},
                "locations": [location],
            }
            properties: dict[str, Any] = {}
            if problem.get("field"):
                properties["field"] = problem["field"]
            if entry.cell:
                properties["matrix"] = entry.cell
            if properties:
                result["properties"] = properties
            results.append(result)
    log = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool,
                        "version": __version__,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
