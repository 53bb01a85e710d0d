"""`conformance site REPORT.json… -o DIR`: a static compatibility site built from reports.

    index.html                 encoders × protocols / option profiles, MUST and SHOULD counts, date
    enc/<encoder>--<protocol>.html   checks × option combinations, findings, shrunk SQL, replay
    check/<check>.html         one check across encoders, with its clause
    checks.html                every check
    trend/<encoder>.html       what newly fails or is fixed between consecutive versions (compare)
    badges/<encoder>--<protocol>.json / .svg   shields.io endpoint JSON, and an SVG of its own
    reports.html               every report's trust metadata; raw/ the reports themselves
    style.css

Plain files: no script, no font, nothing fetched; it reads the same from `file://`. A report
of a run that did not complete is never published as a result: it is listed as such, and its
encoder's cell says "incomplete" where no complete report stands for it. Building is
deterministic (the same reports give the same bytes), so a committed site can be checked.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ..compare import Comparison, compare
from . import badges, pages
from .data import Entry, Site, counts, load, merged_report, slug
from .style import CSS

__all__ = ["Built", "build_site"]

RAW_FORMATS = ("json", "gzip")
_MARKER = ".cdc-conformance-site"


@dataclass(frozen=True)
class Built:
    out: Path
    pages: int
    published: int
    unpublished: list[tuple[str, str]]  # (report, why)
    entries: int
    bytes: int


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _raw(site: Site, out: Path, raw: str) -> dict[str, str]:
    """Copy every report into raw/ (gzip: compressed, with no time stamp: the same bytes each
    build); returns report name -> its path in the site."""
    names = {}
    for s in site.sources:
        data = s.path.read_bytes()
        if raw == "gzip":
            rel = f"raw/{s.slug}.json.gz"
            (out / "raw").mkdir(parents=True, exist_ok=True)
            with (out / rel).open("wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
                gz.write(data)
        else:
            rel = f"raw/{s.slug}.json"
            (out / "raw").mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        names[s.name] = rel
    return names


def _trends(site: Site) -> dict[str, list[tuple[Entry, Entry, str, Comparison]]]:
    out: dict[str, list[tuple[Entry, Entry, str, Comparison]]] = {}
    for name in sorted({e.name for e in site.entries}):
        versions = site.versions(name)
        if len(versions) < 2:
            continue
        steps = []
        for old, new in zip(versions, versions[1:], strict=False):
            for protocol in sorted(set(old.protocols()) & set(new.protocols())):
                steps.append((old, new, protocol, compare(merged_report(old, protocol), merged_report(new, protocol),
                                                          old_name=f"{name} {old.version}",
                                                          new_name=f"{name} {new.version}")))
        out[name] = steps
    return out


def _clear(out: Path) -> None:
    """Empty a directory a previous build wrote (it holds our marker); refuse any other non-empty one."""
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError(f"-o {out} is a file, not a directory")
    if any(out.iterdir()):
        if not (out / _MARKER).exists():
            raise UsageError(f"-o {out} is not empty and was not written by `conformance site`: give an empty or new "
                             "directory")
        for child in out.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()


def build_site(inputs: Sequence[str | Path], out: str | Path, *, raw: str = "json") -> Built:
    """Read the reports (files, or directories searched for reports) and write the site into `out`."""
    if raw not in RAW_FORMATS:
        raise UsageError(f"raw format {raw!r}: one of {', '.join(RAW_FORMATS)}")
    site = load(inputs)
    if not site.published():
        raise UsageError("none of the reports completed: there is nothing to publish ("
                         + "; ".join(f"{s.name}: {s.incomplete}" for s in site.sources) + ")")
    dest = Path(out)
    _clear(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / _MARKER).write_text("written by `conformance site`; rebuilt (emptied) by it\n", encoding="utf-8")
    _write(dest / "style.css", CSS.lstrip())
    raw_name = _raw(site, dest, raw)
    written = 1
    _write(dest / "index.html", pages.index(site))
    _write(dest / "checks.html", pages.checks_index(site))
    _write(dest / "reports.html", pages.reports_page(site, raw_name))
    written += 2
    for entry in site.entries:
        for protocol in entry.protocols():
            _write(dest / pages.enc_page(entry, protocol), pages.encoder_page(site, entry, protocol, raw_name))
            b = badges.badge(protocol, counts(entry.runs_of(protocol)))
            _write(dest / f"{pages.badge_base(entry, protocol)}.json", json.dumps(b, ensure_ascii=False) + "\n")
            _write(dest / f"{pages.badge_base(entry, protocol)}.svg", badges.svg(b))
            written += 1
    for cid, meta in site.checks().items():
        _write(dest / pages.check_page(cid), pages.check_detail(site, cid, meta))
        written += 1
    for name, steps in _trends(site).items():
        _write(dest / pages.trend_page(name), pages.trend(site, name, steps))
        written += 1
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    return Built(dest, written, len(site.published()), [(s.name, s.incomplete or "") for s in site.unpublished()],
                 len(site.entries), size)


# Exposed for tests and other tools that read the site's file names.
badge_path = pages.badge_base
encoder_page_path = pages.enc_page
check_page_path = pages.check_page
slugify = slug
