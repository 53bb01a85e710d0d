"""``with`` support for objects that hold something until :meth:`close` releases it: the Kafka
clusters, the mock cluster, the registry client and the registry dump are all used as
``with X(...) as x:``, and the same three methods stood in each."""

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
