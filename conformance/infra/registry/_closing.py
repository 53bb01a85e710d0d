"""``with`` support for objects that hold something until :meth:`close` releases it.

The client and the dump are used as ``with RegistryClient(url) as client:``; the same three
methods stood in each such class. (``conformance/infra/kafka.py`` and ``mockcluster.py`` repeat
them too; this mixin can move up to ``conformance/infra`` to serve them as well.)
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class ClosesOnExit:
    """Mixin: ``with obj as x`` binds ``obj`` itself and calls ``obj.close()`` however the block ends."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
