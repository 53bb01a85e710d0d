"""Mutants whose defect the log shows by itself (`checks/values.py`: value.integer-range): a capture
alone must catch them."""

from __future__ import annotations

from ...model.types import Kind
from .encoder import MaxScaleKafkaCDCEncoder
from .mutants import _kinds, mutant
from .tracker import RowImage


@mutant("int-unsigned-signed", "value.integer-range", shape=_kinds(Kind.INT, edge_rate=0.7))
class IntUnsignedSigned(MaxScaleKafkaCDCEncoder):
    """Writes INT UNSIGNED values >= 2^31 as the signed 32-bit integer of their bits (negative)."""

    def values(self, r: RowImage) -> dict[str, object]:
        out = super().values(r)
        for c in r.schema.columns:
            v = out.get(c.name)
            if c.unsigned and c.real_type.lower() in ("int", "integer") and isinstance(v, int) and v >= 1 << 31:
                out[c.name] = v - (1 << 32)
        return out
