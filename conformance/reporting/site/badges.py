"""Badges per encoder × protocol: a shields.io endpoint JSON (for
`https://img.shields.io/endpoint?url=…`) and a self-contained SVG that needs no service.

The endpoint's fields are shields.io's documented ones (schemaVersion 1, label, message, color);
the SVG follows shields' "flat" look, its text widths estimated from Verdana 11px advance widths
(no font is loaded: the viewer's Verdana, or a sans-serif fallback, draws it).
"""

from __future__ import annotations

import html
from typing import Any

from .data import Counts

#: shields' named colours, as hex for the SVG.
COLORS = {"brightgreen": "#4c1", "green": "#97ca00", "yellow": "#dfb317", "orange": "#fe7d37", "red": "#e05d44",
          "blue": "#007ec6", "lightgrey": "#9f9f9f", "purple": "#8250df"}


def badge(protocol: str, c: Counts | None) -> dict[str, Any]:
    """The endpoint JSON: what the encoder's runs of `protocol` say, MUST first. None: only
    incomplete runs (nothing published)."""
    label = f"{protocol} conformance"
    if c is None:
        return {"schemaVersion": 1, "label": label, "message": "incomplete", "color": "lightgrey"}
    must_total = sum(c.get("MUST", s) for s in ("passed", "failed", "known", "errored"))
    failing = c.get("MUST", "failed") + c.get("MUST", "errored")
    known = sum(c.get(lv, "known") for lv in ("MUST", "SHOULD"))
    should_failed = c.get("SHOULD", "failed")
    if any(c.get(lv, "errored") for lv in ("MUST", "SHOULD", "INFO")):
        message, color = f"{failing} of {must_total} MUST failing or errored", "purple"
    elif failing:
        message, color = f"{failing} of {must_total} MUST failing", "red"
    else:
        message = f"MUST {must_total - c.get('MUST', 'known')}/{must_total} pass"
        color = "brightgreen"
        if should_failed:
            message += f", {should_failed} SHOULD failing"
            color = "yellow"
        if known:
            message += f", {known} known"
            color = "green" if color == "brightgreen" else color
    return {"schemaVersion": 1, "label": label, "message": message, "color": color}


# Verdana 11px advance widths (px) of printable ASCII, as shields' own width table has them
# (rounded); other characters count as a wide letter.
_WIDE = 7.6
_WIDTHS = dict(zip(
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
    [3.9, 4.7, 5.6, 9.2, 7.0, 12.0, 8.1, 3.3, 5.0, 5.0, 7.0, 9.2, 4.0, 5.0, 4.0, 5.0,
     7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 5.0, 5.0, 9.2, 9.2, 9.2, 6.0, 11.0,
     7.5, 7.6, 7.7, 8.5, 7.0, 6.3, 8.5, 8.3, 4.6, 5.0, 7.6, 6.1, 9.4, 8.2, 8.7, 6.6, 8.7, 7.7, 7.5, 6.8,
     8.1, 7.5, 10.9, 7.5, 6.8, 7.5, 5.0, 5.0, 5.0, 9.2, 7.0, 7.0,
     6.6, 6.8, 5.7, 6.8, 6.6, 3.9, 6.8, 7.0, 3.0, 3.8, 6.5, 3.0, 10.7, 7.0, 6.7, 6.8, 6.8, 4.7, 5.7, 4.3,
     7.0, 6.5, 9.0, 6.5, 6.5, 5.8, 7.0, 5.0, 7.0, 9.2], strict=True))


def text_width(text: str) -> float:
    return sum(_WIDTHS.get(ch, _WIDE) for ch in text)


def svg(b: dict[str, Any]) -> str:
    """The badge as a standalone SVG (shields' flat style): label on grey, message on its colour."""
    label, message = str(b["label"]), str(b["message"])
    color = COLORS.get(str(b.get("color")), str(b.get("color") or COLORS["lightgrey"]))
    lw, mw = round(text_width(label)) + 10, round(text_width(message)) + 10
    w = lw + mw
    e = html.escape
    title = e(f"{label}: {message}")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" aria-label="{title}">'
            f"<title>{title}</title>"
            '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
            '<stop offset="1" stop-opacity=".1"/></linearGradient>'
            f'<clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath>'
            f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>'
            f'<rect x="{lw}" width="{mw}" height="20" fill="{e(color)}"/>'
            f'<rect width="{w}" height="20" fill="url(#s)"/></g>'
            '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
            'text-rendering="geometricPrecision" font-size="11">'
            f'<text x="{lw / 2:.1f}" y="15" fill="#010101" fill-opacity=".3">{e(label)}</text>'
            f'<text x="{lw / 2:.1f}" y="14">{e(label)}</text>'
            f'<text x="{lw + mw / 2:.1f}" y="15" fill="#010101" fill-opacity=".3">{e(message)}</text>'
            f'<text x="{lw + mw / 2:.1f}" y="14">{e(message)}</text></g></svg>\n')
