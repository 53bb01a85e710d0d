"""What every protocol package provides to the harness and the CLI."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..encoders.spi import ConfigurationError, EncoderInfo


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One protocol option (a sink-URI parameter, a codec setting or a profile switch)."""

    name: str
    default: str
    choices: tuple[str, ...] | None = None  # None: free-form
    doc: str = ""
    # Part of the default matrix: `conformance run` tries every choice unless pinned.
    matrix: bool = False
    # Where the option comes from, for the docs (e.g. "sink-uri", "profile switch").
    kind: str = "sink-uri"
    # Short name used in report labels (e.g. "ext" for enable-tidb-extension).
    short: str | None = None

    def validate(self, value: str) -> str:
        v = value.strip()
        if self.choices is not None:
            lowered = {c.lower(): c for c in self.choices}
            if v.lower() not in lowered:
                raise ConfigurationError(
                    f"option {self.name}={value!r} is not one of: {', '.join(self.choices)}")
            return lowered[v.lower()]
        return v


@dataclass(frozen=True, slots=True)
class Profile:
    """A named bundle of option values describing one upstream version's behaviour."""

    name: str
    values: Mapping[str, str]
    doc: str = ""


@dataclass
class ProtocolSuite:
    name: str
    title: str
    options: tuple[OptionSpec, ...]
    profiles: tuple[Profile, ...] = ()
    spec_sources: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    # -- options ----------------------------------------------------------------------------

    def option(self, name: str) -> OptionSpec:
        for o in self.options:
            if o.name == name:
                return o
        known = ", ".join(o.name for o in self.options)
        raise ConfigurationError(f"unknown option {name!r} for protocol {self.name}; known options: {known}")

    def resolve_options(self, given: Mapping[str, str]) -> dict[str, str]:
        """Defaults, then the profile (if any), then explicit values; all validated."""
        out = {o.name: o.default for o in self.options}
        given = dict(given)
        prof_name = given.pop("profile", None)
        if prof_name is not None:
            prof = next((p for p in self.profiles if p.name == prof_name), None)
            if prof is None:
                raise ConfigurationError(
                    f"unknown profile {prof_name!r}; known: {', '.join(p.name for p in self.profiles)}")
            out.update(prof.values)
            out["profile"] = prof_name
        for k, v in given.items():
            out[k] = self.option(k).validate(v)
        self.check_combination(out)
        return out

    def check_combination(self, options: Mapping[str, str]) -> None:
        """Raise ConfigurationError for contradictory options (protocol specific)."""

    def matrix(self, pinned: Mapping[str, Sequence[str]], *, full: bool = True) -> list[dict[str, str]]:
        """Option combinations to run: matrix axes expanded unless pinned (or `full` is off);
        pinned options may list several values."""
        axes: list[tuple[str, Sequence[str]]] = []
        for name, values in pinned.items():
            if name != "profile":
                self.option(name)
            axes.append((name, values))
        if full:
            for o in self.options:
                if o.matrix and o.name not in pinned and o.choices:
                    axes.append((o.name, o.choices))
        combos = []
        for values in itertools.product(*(v for _, v in axes)):
            given = {name: value for (name, _), value in zip(axes, values, strict=True)}
            try:
                combos.append(self.resolve_options(given))
            except ConfigurationError:
                if full and not all(n in pinned for n in given):
                    continue  # an expanded axis produced an invalid combination: skip it
                raise
        return combos

    # -- to be provided by each protocol ----------------------------------------------------

    def encoders(self) -> list[EncoderInfo]:
        raise NotImplementedError

    def checks_module(self) -> str:
        raise NotImplementedError


def describe_options(options: Mapping[str, str], suite: ProtocolSuite) -> str:
    """Short label of an option combination: only what differs from the defaults."""
    short = {o.name: o.short or o.name for o in suite.options}
    diffs = [f"{short[k]}={v}" for k, v in options.items()
             if k != "profile" and any(o.name == k and o.default != v for o in suite.options)]
    if "profile" in options:
        diffs.insert(0, f"profile={options['profile']}")
    return " ".join(diffs) or "defaults"


def parse_option_args(args: Iterable[str]) -> dict[str, list[str]]:
    """`--option k=v` (repeatable; `k=v1,v2` or repeating k gives several values)."""
    out: dict[str, list[str]] = {}
    for a in args:
        if "=" not in a:
            raise ConfigurationError(f"--option needs key=value, got {a!r}")
        k, v = a.split("=", 1)
        k = k.strip()
        vals = [x for x in (s.strip() for s in v.split(",")) if x] if k not in ("topic",) else [v]
        out.setdefault(k, [])
        for x in vals or [""]:
            if x not in out[k]:
                out[k].append(x)
    return out
