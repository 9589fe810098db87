"""CI report formats: GitHub workflow annotations, JUnit XML and SARIF 2.1.0.

Each takes a list of :class:`Entry` — one per resolved command line (or per finding of
``lint-env``) — and returns text. GitHub shows the annotations on the run; JUnit
makes each entry a test case (failed when it has errors); SARIF makes each problem a
result, for code-scanning dashboards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from kernelcfg._version import __version__
from kernelcfg.base.bounded import one_line

__all__ = ["Entry", "github", "junit", "sarif"]

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


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
    """Its line in that file."""


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
            title = _escape_property(f"{tool} {entry.name}: {problem['code']}")
            message = _escape_data(problem["message"])
            where = ""
            if entry.file is not None:
                where = f"file={_escape_property(entry.file)},"
                if entry.line is not None:
                    where += f"line={entry.line},"
            lines.append(f"::{kinds[problem['severity']]} {where}title={title}::{message}")
    return "".join(line + "\n" for line in lines)


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
        case = ET.SubElement(suite_el, "testcase", classname=suite, name=_xml(entry.name))
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


def sarif(entries: Sequence[Entry], tool: str = "kernelcfg") -> str:
    """A SARIF 2.1.0 log: one result per problem, rules named by problem code."""
    codes = sorted({p["code"] for e in entries for p in e.problems})
    results = []
    for entry in entries:
        for problem in entry.problems:
            result: dict[str, Any] = {
                "ruleId": problem["code"],
                "ruleIndex": codes.index(problem["code"]),
                "level": _LEVELS[problem["severity"]],
                "message": {"text": problem["message"]},
                "locations": [{"logicalLocations": [{"name": entry.name, "kind": "object"}]}],
            }
            if problem.get("field"):
                result["properties"] = {"field": problem["field"]}
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
                        "informationUri": "https://pypi.org/project/kernelcfg/",
                        "rules": [{"id": code, "name": code} for code in codes],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
