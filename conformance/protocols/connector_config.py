"""A connector's own configuration as the run's options (`--connector-config FILE`).

Users of a CDC tool have its configuration already: a Kafka Connect connector's JSON (what the
REST API takes: `{"name": …, "config": {…}}`, or the `config` object alone) or a `.properties`
file. The protocols whose options are the tool's own property names (Debezium) read it as it is:
every property that is an option of the protocol becomes that option; a property the protocol
knows does not change what the encoder writes (connection, offsets, snapshot…) is left out; any
other property is reported as not modelled (the checks assume its default), never silently
dropped. Explicit `--option` values win over the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..encoders.spi import ConfigurationError


@dataclass(slots=True)
class ConnectorOptions:
    options: dict[str, str] = field(default_factory=dict)  # protocol options taken from the file
    not_modelled: list[str] = field(default_factory=list)  # properties the checks do not model


def read_connector_config(path: str | Path) -> dict[str, str]:
    """The properties of a connector configuration file: JSON (flat, or Kafka Connect's
    `{"name", "config"}`) or Java properties (`k=v` / `k: v`, `#` and `!` comments)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigurationError(f"--connector-config: cannot read {p}: {e.strerror}") from None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise ConfigurationError(f"--connector-config: {p} is not valid JSON: {e}") from None
        if isinstance(doc, dict) and isinstance(doc.get("config"), dict):
            doc = doc["config"]
        if not isinstance(doc, dict):
            raise ConfigurationError(f"--connector-config: {p} holds no JSON object of properties")
        return {str(k): _text(v) for k, v in doc.items()}
    return _properties(text)


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and i < len(lines):  # a continued line
            line = line[:-1] + lines[i].strip()
            i += 1
        cut = min((line.find(c) for c in "=:" if c in line), default=-1)
        key, value = (line[:cut], line[cut + 1:]) if cut >= 0 else (line, "")
        out[key.strip()] = value.strip()
    return out


def connector_options(config: Mapping[str, str], known: set[str], irrelevant: tuple[str, ...]) -> ConnectorOptions:
    """Split `config` into the protocol's options (`known`), properties that do not change the
    wire format (`irrelevant`: names, or prefixes ending in '.'), and the rest (not modelled)."""
    out = ConnectorOptions()
    for k, v in config.items():
        if k in known:
            out.options[k] = v
        elif not any(k == x or (x.endswith(".") and k.startswith(x)) for x in irrelevant):
            out.not_modelled.append(k)
    return out
