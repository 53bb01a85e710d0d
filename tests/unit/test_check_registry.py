"""`checks.registry.CheckRegistry`: a check's gate (`gate=` with a key, `first=` without) is its
first answer, given by the registered check itself; and `protocols.kit.given`, the gate that hands
the check what it found."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.checks.registry import CheckRegistry, Failure, Level, NotApplicable, Scope
from conformance.protocols.kit import given

NOT_EVEN = NotApplicable("an odd number")


def _odd(n: int) -> NotApplicable | None:
    return NOT_EVEN if n % 2 else None


def _registry() -> tuple[CheckRegistry, list[int]]:
    checks = CheckRegistry("toy")
    ran: list[int] = []

    @checks("number.keyed", level=Level.MUST, clause="-", scope=Scope.RECORD, gate=(lambda n: n % 2, _odd))
    def keyed(n: int) -> Failure | None:
        """Even numbers below ten.

        The rest of the doc."""
        ran.append(n)
        return Failure("too big", expected="< 10", actual=n) if n >= 10 else None

    @checks("number.unkeyed", level=Level.MUST, clause="-", scope=Scope.RECORD, first=_odd)
    def unkeyed(n: int) -> Iterator[Failure]:
        """Even numbers are not zero."""
        ran.append(n)
        if n == 0:
            yield Failure("zero")

    return checks, ran


def test_a_gate_is_answered_before_the_body_runs() -> None:
    checks, ran = _registry()
    for cid in ("toy.number.keyed", "toy.number.unkeyed"):
        assert checks[cid].run(3) == [NOT_EVEN]
    assert ran == []
    assert checks["toy.number.keyed"].run(12)[0].message == "too big"
    assert [f.message for f in checks["toy.number.unkeyed"].run(0) if isinstance(f, Failure)] == ["zero"]
    assert ran == [12, 0]


def test_the_registered_check_keeps_its_name_doc_and_kind() -> None:
    checks, _ = _registry()
    keyed, unkeyed = checks["toy.number.keyed"], checks["toy.number.unkeyed"]
    assert keyed.title == "Even numbers below ten."
    assert keyed.fn.__name__ == "keyed" and unkeyed.fn.__name__ == "unkeyed"
    assert keyed.gate is _odd and unkeyed.gate is None  # only a keyed gate is planned on
    assert keyed.fn(3) == NOT_EVEN  # a plain check stays plain, a generator a generator
    assert list(unkeyed.fn(3)) == [NOT_EVEN]


def test_gate_and_first_together_are_refused() -> None:
    with pytest.raises(ValueError, match="gate or first"):
        CheckRegistry("toy")("number.both", level=Level.MUST, clause="-", scope=Scope.RECORD,
                             gate=(lambda n: n, _odd), first=_odd)


def test_given_hands_over_what_it_found() -> None:
    def halve(n: int) -> int | NotApplicable:
        return NOT_EVEN if n % 2 else n // 2

    @given(halve)
    def halves(n: int, half: int) -> Iterator[Any]:
        """Half of an even number is below five."""
        if half >= 5:
            yield Failure("big half", actual=half)

    assert list(halves(3)) == [NOT_EVEN]
    assert list(halves(4)) == []
    assert [f.actual for f in halves(12)] == [6]
    assert halves.__doc__ == "Half of an even number is below five."


def test_a_check_answers_in_every_form_a_check_may_and_in_no_other() -> None:
    """None, one finding, a list, a tuple, a generator (a Failure raised inside it ends it with the
    findings so far); anything else is a TypeError naming the check."""
    checks = CheckRegistry("toy")
    answers: dict[str, Any] = {}

    def gen() -> Iterator[Failure | NotApplicable]:
        yield Failure("one")
        raise Failure("two")

    for name, answer in [("none", None), ("one", Failure("x")), ("list", [Failure("a"), NOT_EVEN]),
                         ("tuple", (NOT_EVEN,)), ("generator", gen), ("number", 5), ("text", "no"),
                         ("junk", [Failure("a"), 3])]:
        answers[name] = answer

        @checks(f"form.{name}", level=Level.MUST, clause="-", scope=Scope.RECORD)
        def check(_ev: Any, name: str = name) -> Any:
            a = answers[name]
            return a() if callable(a) else a

    run = {s.id.split(".")[-1]: s for s in checks.specs()}
    assert run["none"].run(0) == []
    assert [f.message for f in run["one"].run(0)] == ["x"]
    assert len(run["list"].run(0)) == 2 and run["tuple"].run(0) == [NOT_EVEN]
    assert [f.message for f in run["generator"].run(0)] == ["one", "two"]
    with pytest.raises(TypeError, match="form.number"):
        run["number"].run(0)
    with pytest.raises(TypeError, match="form.text"):  # a string is iterable: its characters are no findings
        run["text"].run(0)
    with pytest.raises(TypeError, match="form.junk"):
        run["junk"].run(0)
