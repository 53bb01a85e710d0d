"""The errors every layer shares, so that the CLI tells users who must act without knowing
which module raised.

* `InfrastructureError`: the broker, the registry, a database server or Spark cannot be used
  (unreachable, refused, crashed). Not a finding about the encoder: the run stops with exit 2
  and says what to fix. Every provider's "unavailable" error derives from it.
* `UsageError`: bad arguments or input; the user must act (exit 2).

Findings about the implementation under test are never exceptions: they are `Failure`s in a
tally (`conformance.checks`).
"""

from __future__ import annotations

import re


class InfrastructureError(Exception):
    """Infrastructure the run needs cannot be used; the message says what and what to do.
    Messages must already be redacted (no credentials)."""


class UsageError(Exception):
    """Bad arguments or input: the user must act."""


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def exception_text(e: BaseException) -> str:
    """An exception as a finding says it (`Type: message`), without object addresses (fastavro
    names `<_io.BytesIO object at 0x7f…>`), so that the same defect reads the same in every record
    and its findings are counted as one."""
    return _ADDRESS.sub(">", f"{type(e).__name__}: {e}")
