"""`conformance site REPORT.json… -o DIR`: the static compatibility site (`reporting/site`)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_OK, console


def add_site_parser(sub: Any) -> None:
    s = sub.add_parser("site", help="build a static compatibility site from reports (encoders × protocols, badges)",
                       description="Build a static site (plain files: no script, no font, nothing fetched; it works "
                                   "from file://) from any set of report.json files, or directories searched for "
                                   "them: encoders × protocols with MUST / SHOULD counts, a page per encoder and "
                                   "protocol with its findings and replay commands, a page per check, a trend across "
                                   "an encoder's versions, shields.io endpoint badges and SVG badges. A report of a "
                                   "run that did not complete is listed, never published as a result.")
    s.add_argument("reports", nargs="+", metavar="REPORT.json", help="report files, or directories holding them")
    s.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="where to write the site (created; a previous build there is replaced)")
    s.add_argument("--raw", choices=("json", "gzip"), default="json",
                   help="how the raw reports are offered for download (gzip: smaller, for a committed site)")


def cmd_site(args: argparse.Namespace) -> int:
    from ..reporting.site import build_site

    built = build_site(args.reports, args.out, raw=args.raw)
    console.print(f"{built.out}/index.html: {built.entries} encoder version(s), {built.published} report(s) "
                  f"published, {built.pages} page(s), {built.bytes / 1e6:.1f} MB", markup=False)
    for name, why in built.unpublished:
        console.print(f"not published (incomplete): {name}: {why}", markup=False)
    return EXIT_OK
