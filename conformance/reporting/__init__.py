"""Reports: the canonical JSON (versioned), and JUnit XML, HTML matrix, Markdown rendered from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import html, junit, markdown
from .model import FORMAT_VERSION, Report, Section

__all__ = ["FORMAT_VERSION", "Report", "Section", "write_json", "write_reports"]


def write_reports(report: Report, directory: str | Path) -> dict[str, Path]:
    """Write report.json, junit.xml, report.html and summary.md into `directory`."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = report.to_json()
    paths = {"json": d / "report.json", "junit": d / "junit.xml", "html": d / "report.html",
             "markdown": d / "summary.md"}
    paths["json"].write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    paths["junit"].write_text(junit.render(data), encoding="utf-8")
    paths["html"].write_text(html.render(data), encoding="utf-8")
    paths["markdown"].write_text(markdown.render(data), encoding="utf-8")
    return paths


def write_json(report: Report, path: str | Path) -> Path:
    """Write only report.json, to `path`."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return p
