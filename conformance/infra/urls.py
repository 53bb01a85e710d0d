"""URL hygiene: keep credentials out of every message, repr, log line and exception.

Registry and broker URLs may carry ``user:password@`` userinfo. Anything the suite prints goes
through :func:`redact` (one URL) or :func:`redact_text` (free text that may embed URLs), so the
password can never reach a terminal, a report or a CI log.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact", "redact_text"]

#: What replaces the userinfo part of a URL.
REDACTED = "***"

# RFC 3986 scheme followed by "//" (only URLs with an authority can carry userinfo).
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)(.*)$", re.DOTALL)

# Inside free text: a scheme://, then a run without whitespace, slash, '?', '#' or '@', then '@'.
# Stopping at '/' keeps an '@' in a path or query (e.g. an e-mail address) from being treated as
# userinfo; the cost is that raw, unencoded '/' in an embedded password is only caught by
# redact(), which sees the whole URL.
_EMBEDDED = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@]*@")


def redact(url: str) -> str:
    """Return ``url`` with any userinfo (``user:pass@`` or ``user@``) replaced by ``***@``.

    Strings that are not ``scheme://`` URLs are returned unchanged. The userinfo ends at the
    *last* ``@`` before the query or fragment: a password with an unencoded ``@`` or ``/`` is
    invalid in a URL, but users type it anyway, and splitting at the first ``@`` (or at the
    first ``/``, as ``urllib.parse.urlsplit`` does) would leave part of the password visible.
    Percent-encoded credentials are removed in their encoded form, so nothing is decoded here.
    """
    match = _SCHEME.match(url)
    if match is None:
        return url
    scheme, rest = match.group(1), match.group(2)
    # The query and fragment may legitimately contain '@' (e.g. e-mail addresses).
    end = len(rest)
    for sep in ("?", "#"):
        pos = rest.find(sep)
        if pos != -1:
            end = min(end, pos)
    at = rest.rfind("@", 0, end)
    if at == -1:
        return url
    return f"{scheme}{REDACTED}{rest[at:]}"


def redact_text(text: str) -> str:
    """Redact every URL userinfo embedded anywhere in ``text`` (error messages, log lines)."""
    return _EMBEDDED.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
