"""Which names Java's Avro (1.11, in Confluent's registry 7.x and its Avro converter) accepts.

`Schema.validateName`: a letter (`Character.isLetter`: Unicode categories Lu, Ll, Lt, Lm, Lo) or
`_`, then letters, decimal digits (Nd) or `_`, each UTF-16 unit on its own, so nothing outside
the Basic Multilingual Plane passes (an emoji is two surrogates). It judges a named type's own
name and a field's name, never a namespace. Python's `avro` uses an ASCII pattern instead and
judges namespaces too: the suite follows Java, which the registries and converters users run are.
"""

from __future__ import annotations

import unicodedata

_LETTERS = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo"})


def java_valid_name(name: str) -> bool:
    if not name or any(ord(ch) > 0xFFFF for ch in name):
        return False
    if not (name[0] == "_" or unicodedata.category(name[0]) in _LETTERS):
        return False
    return all(ch == "_" or unicodedata.category(ch) in _LETTERS or unicodedata.category(ch) == "Nd"
               for ch in name[1:])
