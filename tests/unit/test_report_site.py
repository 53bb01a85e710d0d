"""`conformance site`: what the index shows for a known set of reports, that every link of a built
site resolves, that badges are valid shields.io endpoint JSON and well-formed SVG, that a run
that did not complete is never published, the trend across versions, and that the committed site
is what the documented command builds from the committed reports."""

from __future__ import annotations

import filecmp
import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from conformance.cli.main import main
from conformance.errors import UsageError
from conformance.reporting.site import build_site

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "site"
SAMPLE = ROOT / "reports" / "sample" / "report.json"
CONVERTERS = ROOT / "reports" / "vendors" / "debezium-3.6.3-postgres" / "options" / "converters" / "report.json"
#: What docs/site.md says builds the committed site (from the repository's root).
SITE_INPUTS = ["reports/vendors", "reports/published", "reports/sample"]
SITE_DIR = ROOT / "site"

# shields.io's endpoint badge, as its documentation lists the fields
# (https://shields.io/badges/endpoint-badge): schemaVersion (required, always 1), label (required;
# "" omits the left side), message (required, not empty), color / labelColor (a named colour, hex,
# rgb(a), hsl(a) or a CSS colour name), isError, namedLogo, logoSvg, logoColor, logoWidth, style,
# cacheSeconds (at least 300).
SHIELDS_ENDPOINT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schemaVersion", "label", "message"],
    "additionalProperties": False,
    "properties": {
        "schemaVersion": {"const": 1},
        "label": {"type": "string"},
        "message": {"type": "string", "minLength": 1},
        "color": {"type": "string", "minLength": 1},
        "labelColor": {"type": "string", "minLength": 1},
        "isError": {"type": "boolean"},
        "namedLogo": {"type": "string"},
        "logoSvg": {"type": "string"},
        "logoColor": {"type": "string"},
        "logoWidth": {"type": "integer", "minimum": 0},
        "style": {"enum": ["flat", "flat-square", "plastic", "for-the-badge", "social"]},
        "cacheSeconds": {"type": "integer", "minimum": 300},
    },
}
SHIELDS_COLORS = {"brightgreen", "green", "yellowgreen", "yellow", "orange", "red", "blue", "lightgrey", "grey",
                  "purple", "success", "important", "critical", "informational", "inactive"}


class _Page(HTMLParser):
    """Every link (href, src), id, script tag and table cell of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0
        self.rows: list[dict[str, Any]] = []
        self._cell: dict[str, Any] | None = None
        self._header: list[str] = []
        self._in_th = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for k in ("href", "src"):
            if a.get(k) is not None:
                self.links.append(str(a[k]))
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "script":
            self.scripts += 1
        if tag == "tr" and a.get("data-encoder"):
            self.rows.append({"encoder": a["data-encoder"], "cells": []})
        if tag == "th" and a.get("data-column"):
            self._header.append(str(a["data-column"]))
        if tag == "td" and self.rows and "cell" in (a.get("class") or ""):
            self._cell = {"class": a.get("class"), "text": ""}
            self.rows[-1]["cells"].append(self._cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data + " "


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site([FIX, SAMPLE, CONVERTERS], out)
    return out


def _expected(reports: list[dict[str, Any]], encoder: str, protocol: str,
              profile_of: Any) -> dict[str, dict[str, dict[str, int]]]:
    """Per profile, per level: checks passed / failed / known, each check at its worst over the
    runs — computed here from the raw JSON, independently of the site's code."""
    statuses: dict[str, dict[str, tuple[str, set[str]]]] = {}
    for rep in reports:
        runs = rep["runs"]
        for r in rep["results"]:
            run = runs[r["run"]]
            if run["encoder"] != encoder or run["protocol"] != protocol:
                continue
            prof = profile_of(run)
            st = {"failed": "known" if r.get("known") else "failed"}.get(r["outcome"], r["outcome"])
            statuses.setdefault(prof, {}).setdefault(r["check"], (r["level"], set()))[1].add(st)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for prof, checks in statuses.items():
        for level, seen in checks.values():
            worst = next((s for s in ("errored", "failed", "known", "passed") if s in seen), None)
            if worst is not None:
                row = out.setdefault(prof, {}).setdefault(level, {})
                row[worst] = row.get(worst, 0) + 1
    return out


def _cell_counts(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    text = " ".join(text.split())
    for level, rest in re.findall(r"\b(MUST|SHOULD|INFO) ((?:\d+ \w+(?: · )?)+)", text):
        out[level] = {w: int(n) for n, w in re.findall(r"(\d+) (\w+)", rest)}
    return out


def test_the_index_shows_every_encoder_and_protocol_with_its_counts(built: Path) -> None:
    page = parse(built / "index.html")
    assert page._header == ["debezium/json", "debezium/avro", "ticdc-avro/current", "ticdc-simple/current"]
    rows = {r["encoder"]: r["cells"] for r in page.rows}
    assert sorted(rows) == ["Debezium PostgreSQL connector 3.6.3.Final", "node-ticdc-simple 0.1.0",
                            "node-ticdc-simple 0.2.0", "node-ticdc-simple 0.3.0", "node-ticdc-simple 0.4.0",
                            "ticdc-avro/mutant/json-compact (version unknown)"]
    assert all(len(cells) == 4 for cells in rows.values())

    def cell(encoder: str, column: str) -> dict[str, Any]:
        return rows[encoder][page._header.index(column)]

    node = [json.loads((FIX / f"node-{v}.json").read_text()) for v in ("0.1.0", "0.2.0")]
    for version, rep in zip(("0.1.0", "0.2.0"), node, strict=True):
        want = _expected([rep], rep["encoder"]["name"], "ticdc-simple", lambda run: "current")["current"]
        c = cell(f"node-ticdc-simple {version}", "ticdc-simple/current")
        got = _cell_counts(c["text"])
        assert got["MUST"]["pass"] == want["MUST"].get("passed", 0) > 20
        assert got["MUST"]["fail"] == want["MUST"].get("failed", 0)
        assert "1 combination" in c["text"] and rep["started"][:10] in c["text"]
    assert "cell pass" in cell("node-ticdc-simple 0.1.0", "ticdc-simple/current")["class"]
    bad = cell("node-ticdc-simple 0.2.0", "ticdc-simple/current")
    assert "cell fail" in bad["class"] and _cell_counts(bad["text"])["MUST"]["fail"] == 1
    # The interrupted run of 0.4.0 is not a result: its cell says so, with no counts.
    stopped = cell("node-ticdc-simple 0.4.0", "ticdc-simple/current")
    assert "incomplete" in stopped["class"] and "MUST" not in stopped["text"]
    # The empty cells: a node version has no debezium runs.
    assert cell("node-ticdc-simple 0.1.0", "debezium/json")["text"].strip() == ""

    sample = json.loads(SAMPLE.read_text())
    want = _expected([sample], "ticdc-avro/mutant/json-compact", "ticdc-avro", lambda run: "current")["current"]
    got = _cell_counts(cell("ticdc-avro/mutant/json-compact (version unknown)", "ticdc-avro/current")["text"])
    assert got["MUST"] == {"pass": want["MUST"]["passed"], "fail": want["MUST"]["failed"]} and want["MUST"]["failed"]
    assert got["SHOULD"]["pass"] == want["SHOULD"].get("passed", 0)

    conv = json.loads(CONVERTERS.read_text())
    want_dbz = _expected([conv], "debezium/engine-postgres", "debezium", lambda run: run["options"].get("profile"))
    for profile in ("json", "avro"):
        got = _cell_counts(cell("Debezium PostgreSQL connector 3.6.3.Final", f"debezium/{profile}")["text"])
        w = want_dbz[profile]["MUST"]
        assert got["MUST"] == {"pass": w["passed"], "fail": w.get("failed", 0), "known": w["known"]}
        assert w["known"] >= 1  # the vendor baseline's known failures show as known, not as failing
    assert "cell known" in cell("Debezium PostgreSQL connector 3.6.3.Final", "debezium/json")["class"]
    # No score across encoders: no number summing encoders anywhere on the index.
    assert "score" not in (built / "index.html").read_text().lower().replace("no score", "")


def test_every_link_of_the_site_resolves_and_nothing_is_fetched(built: Path) -> None:
    pages = {p: parse(p) for p in built.rglob("*.html")}
    assert len(pages) > 50
    checked = 0
    for path, page in pages.items():
        assert page.scripts == 0, path
        for link in page.links:
            u = urlsplit(link)
            if u.scheme == "data":
                continue
            assert not u.scheme and not u.netloc, f"{path}: {link} leaves the site"
            target = (path.parent / unquote(u.path)).resolve() if u.path else path
            assert target.is_file() and target.is_relative_to(built.resolve()), f"{path}: {link} is broken"
            if u.fragment:
                ids = pages[target].ids if target.suffix == ".html" else set()
                assert unquote(u.fragment) in ids, f"{path}: {link}: no such anchor"
            checked += 1
    assert checked > 1000
    css = (built / "style.css").read_text()
    assert "url(" not in css and "@import" not in css and "@font-face" not in css


def test_badges_are_shields_endpoint_json_and_well_formed_svg(built: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(SHIELDS_ENDPOINT_SCHEMA)
    validator = jsonschema.Draft202012Validator(SHIELDS_ENDPOINT_SCHEMA)
    endpoints = sorted((built / "badges").glob("*.json"))
    assert len(endpoints) == 5  # node 0.1.0-0.3.0, the mutant, debezium (0.4.0 did not complete)
    for p in endpoints:
        b = json.loads(p.read_text())
        validator.validate(b)
        assert b["color"] in SHIELDS_COLORS
        svg = ET.parse(p.with_suffix(".svg")).getroot()
        assert svg.tag == "{http://www.w3.org/2000/svg}svg" and int(svg.get("width", "0")) > 60
        texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
        assert b["label"] in texts and b["message"] in texts
    by_name = {p.stem: json.loads(p.read_text()) for p in endpoints}
    assert by_name["node-ticdc-simple-0.2.0--ticdc-simple"]["color"] == "red"
    assert by_name["node-ticdc-simple-0.2.0--ticdc-simple"]["message"].startswith("1 of ")
    assert by_name["node-ticdc-simple-0.1.0--ticdc-simple"]["color"] == "brightgreen"
    assert "known" in by_name["Debezium-PostgreSQL-connector-3.6.3.Final--debezium"]["message"]


def test_an_encoder_page_shows_the_matrix_findings_sql_replay_and_raw_report(built: Path) -> None:
    text = (built / "enc" / "node-ticdc-simple-0.2.0--ticdc-simple.html").read_text()
    assert "ticdc-simple.value.int" in text and "data.c2 (BIGINT): wrong value" in text
    assert "9007199254740993" in text and "INSERT INTO `db1`.`t1`" in text
    assert "conformance run --protocol ticdc-simple --encoder &#x27;cmd:node" in text
    raw = [link for link in parse(built / "enc" / "node-ticdc-simple-0.2.0--ticdc-simple.html").links
           if "/raw/" in link]
    assert raw and json.loads((built / "enc" / raw[0]).resolve().read_text())["encoder"]["version"] == "0.2.0"
    check = (built / "check" / "ticdc-simple.value.int.html").read_text()
    clause = next(r["clause"] for r in json.loads((FIX / "node-0.1.0.json").read_text())["results"]
                  if r["check"] == "ticdc-simple.value.int")
    assert f"<div>{html.escape(clause, quote=True)}</div>" in check
    for v in ("0.1.0", "0.2.0", "0.3.0"):
        assert f"node-ticdc-simple {v}" in check


def test_the_trend_says_what_newly_fails_and_what_is_fixed(built: Path) -> None:
    text = (built / "trend" / "node-ticdc-simple.html").read_text()
    steps = re.split(r"<h2>", text)[1:]
    assert [re.match(r"([\d.]+) → ([\d.]+)", s).groups() for s in steps] == [("0.1.0", "0.2.0"), ("0.2.0", "0.3.0")]
    assert "regressed" in steps[0] and "new-failure" in steps[0] and "ticdc-simple.value.int" in steps[0]
    assert "no new failures" in steps[1] and ">fixed<" in steps[1] and "ticdc-simple.value.int" in steps[1]
    assert "0.4.0" not in text  # the interrupted run is in no trend


def test_reports_page_lists_trust_metadata_and_unpublished_runs(built: Path) -> None:
    text = (built / "reports.html").read_text()
    published, unpublished = text.split("id=unpublished")
    assert "node-0.4.0-interrupted.json" in unpublished and "interrupted before the end" in unpublished
    assert "node-0.4.0-interrupted.json" not in published
    node = json.loads((FIX / "node-0.1.0.json").read_text())
    for value in (node["tool"]["commit"], node["environment"]["java"], node["environment"]["spark"],
                  node["encoder"]["version"], node["started"]):
        assert value in published
    # A format 1 report: what it does not record is said to be unknown.
    sample = published.split("reports/sample/report.json")[1].split("<h3")[0]
    assert "<div>suite commit</div><div>unknown</div>" in sample and "<div>Java</div><div>unknown</div>" in sample


def test_a_site_of_incomplete_runs_only_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="none of the reports completed"):
        build_site([FIX / "node-0.4.0-interrupted.json"], tmp_path / "s")
    assert main(["site", str(FIX / "node-0.4.0-interrupted.json"), "-o", str(tmp_path / "s")]) == 2


def test_a_foreign_directory_is_never_emptied(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not empty"):
        build_site([SAMPLE], tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_building_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    build_site([FIX, SAMPLE], a, raw="gzip")
    build_site([FIX, SAMPLE], b, raw="gzip")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(a, b, [str(f) for f in files], shallow=False)
    assert not mismatch and not errors


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_the_committed_site_is_what_the_documented_command_builds(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if not SITE_DIR.is_dir():
        pytest.fail("site/ is missing: build it as docs/site.md says")
    monkeypatch.chdir(ROOT)
    assert main(["site", *SITE_INPUTS, "-o", str(tmp_path / "site"), "--raw", "gzip"]) == 0
    fresh, committed = _tree(tmp_path / "site"), _tree(SITE_DIR)
    assert sorted(fresh) == sorted(committed), "site/ is out of date: rebuild it as docs/site.md says"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"site/ is out of date ({stale[:5]}): rebuild it as docs/site.md says"
    index = (SITE_DIR / "index.html").read_text()
    for name in ("Debezium PostgreSQL connector", "node-ticdc-simple", "ticdc-avro/reference", "ticdc-simple/reference",
                 "maxscale-kafkacdc/reference", "debezium/reference"):
        assert f">{name}<" in index
