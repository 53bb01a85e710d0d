#!/usr/bin/env python3
"""Eight versions of node-ticdc-simple as a real git history, one of them a regression, for the
"Hunt a regression" walk-through in cdc-conformance's README.

    python examples/node-ticdc-simple/history/make_history.py DIR [--versions-dir VDIR]

DIR becomes a git repository whose root is the encoder (src/, test/, package.json): eight
commits tagged v1 … v8. v5 brings in a regression a JavaScript encoder can really make:
BIGINT UNSIGNED values pass through a Number (53 bits of precision), so 9223372036854775809
is written as "9223372036854775808" (ticdc-simple.value.bigint-unsigned). The other commits
change nothing the suite sees. The example as shipped (`examples/node-ticdc-simple`) is the
version after v8, the one with the fix. With --versions-dir, each tag is also checked out (a
detached `git worktree`) in VDIR/v1 … VDIR/v8, for `conformance bisect` and `conformance diff`.

The versions are made from the shipped sources: each change below is undone, newest first, to
get v1, then done again one commit at a time, so the history follows the example as it evolves
(a change whose text the example no longer holds stops the script and names it).
Standard library only; needs `git`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1]
FILES = ("README.md", "package.json", "src/floats.js", "src/json.js", "src/main.js", "src/simple.js",
         "test/units.test.js")
AUTHOR = ("Encoder Dev", "dev@example.com")
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z: the commits are dated a week apart, so their ids are fixed


@dataclass(frozen=True)
class Change:
    """In `path`, the text `before` became `after` (each exactly once in its version)."""

    path: str
    before: str
    after: str


# v2 … v8, then the fix (the example as shipped); v1 is the shipped example with all of them undone.
# v5's helper: BIGINT UNSIGNED through a JavaScript Number (the regression); the fix takes it out again.
V5_UINT64 = (
    "  if (t.kind === 'BIGINT' && t.unsigned) return uint64(v);\n"
    "  return BigInt(v);\n"
    "}\n\n"
    "// BIGINT UNSIGNED above 2^63-1 may come wrapped to int64 (as some drivers carry it): the uint64\n"
    "// it stands for.\n"
    "function uint64(v) {\n"
    "  const n = Number(v);\n"
    "  return BigInt(n < 0 ? n + 2 ** 64 : n);\n"
    "}\n"
)


VERSIONS: list[tuple[str, str, list[Change]]] = [
    ("v2", "main: say on stderr when the harness speaks another protocol version or event format", [
        Change("src/main.js", "  start(req) {\n    return {\n",
               "  start(req) {\n"
               "    if (req.version !== BigInt(PROTOCOL_VERSION)) {\n"
               "      process.stderr.write(`the harness speaks protocol version ${req.version}; this encoder speaks "
               "${PROTOCOL_VERSION}\\n`);\n"
               "    }\n"
               "    if (req.event_format !== EVENT_FORMAT || req.event_format_version !== "
               "BigInt(EVENT_FORMAT_VERSION)) {\n"
               "      process.stderr.write(`unexpected event format ${req.event_format} "
               "v${req.event_format_version}\\n`);\n"
               "    }\n"
               "    return {\n"),
    ]),
    ("v3", "json: say why it has its own parser", [
        Change("src/json.js",
               "// * parse(): an exact parser: every integer literal a BigInt, every number with a fraction\n"
               "//   or an exponent a Number. Objects have no prototype, so a key such as \"__proto__\" is an\n"
               "//   ordinary key.\n",
               "// * parse(): JSON.parse loses integers above 2^53, and the suite's events are full of them\n"
               "//   (commit_ts is a TiDB TSO, about 2^60; BIGINT UNSIGNED reaches 2^64-1). This parser returns\n"
               "//   every integer literal as a BigInt and every number with a fraction or an exponent as a\n"
               "//   Number (the suite writes floats that way: `1.0`, `-0.0`, `1e+20`). Objects have no\n"
               "//   prototype, so a key such as \"__proto__\" is an ordinary key.\n"),
    ]),
    ("v4", "test: float32 ties round half to even", [
        Change("test/units.test.js",
               "test('Go JSON:",
               "test('Go floats: float32 ties round half to even, as Go and the reference write them', () => {\n"
               "  assert.equal(goFloat(-6009.78125, 32, 'f'), '-6009.7812');\n"
               "  assert.equal(goFloat(7151.15625, 32, 'f'), '7151.1562');\n"
               "  assert.equal(goFloat(Math.fround(0.1), 32, 'f'), '0.1');\n"
               "  assert.equal(goFloat(Math.fround(0.1), 64, 'f'), '0.10000000149011612');\n"
               "  assert.equal(goFloat(1e21, 64, 'json'), '1e+21');\n"
               "  assert.equal(goFloat(1e-7, 64, 'json'), '1e-7');\n"
               "  assert.equal(goFloat(-0, 64, 'f'), '-0');\n"
               "});\n\n"
               "test('Go JSON:"),
    ]),
    # The regression: a wrapped int64 handled in Number arithmetic, 53 bits for a 64-bit value.
    ("v5", "values: BIGINT UNSIGNED sent wrapped to int64 (as some drivers carry it) is read as its uint64", [
        Change("src/simple.js",
               "  if (t.kind === 'SET') return setBitmask(t, v);\n  return BigInt(v);\n}\n",
               "  if (t.kind === 'SET') return setBitmask(t, v);\n" + V5_UINT64),
    ]),
    ("v6", "README: how to run the unit tests", [
        Change("README.md", "ties rounded half to even) |\n",
               "ties rounded half to even) |\n| `test/units.test.js` | `node --test test/` |\n"),
    ]),
    ("v7", "simple: a message too large names the error TiCDC reports", [
        Change("src/simple.js", "large-message-handle-option is none`);",
               "large-message-handle-option is none (TiCDC reports ErrMessageTooLarge)`);"),
    ]),
    ("v8", "package.json: npm test runs the unit tests", [
        Change("package.json", '  "engines": { "node": ">=20" }\n',
               '  "engines": { "node": ">=20" },\n  "scripts": {\n    "test": "node --test test/"\n  }\n'),
    ]),
    ("fix", "values: BIGINT UNSIGNED in BigInt arithmetic (v5 lost precision above 2^53)", [
        Change("src/simple.js",
               V5_UINT64,
               "  // BIGINT UNSIGNED above 2^63-1 may come wrapped to int64 (as some drivers carry it): the uint64\n"
               "  // it stands for, in BigInt arithmetic (a Number has 53 bits: 2^63+1 would become 2^63).\n"
               "  if (t.kind === 'BIGINT' && t.unsigned) return BigInt.asUintN(64, BigInt(v));\n"
               "  return BigInt(v);\n"
               "}\n"),
        Change("test/units.test.js", "const { decimalText } = require('../src/simple');",
               "const { decimalText, jsonValue } = require('../src/simple');"),
        Change("test/units.test.js", "",
               "\ntest('BIGINT UNSIGNED: exact up to 2^64-1, and a value wrapped to int64 read as its uint64', "
               "() => {\n"
               "  const u64 = { kind: 'BIGINT', unsigned: true };\n"
               "  assert.equal(jsonValue(u64, 9223372036854775809n, {}), '9223372036854775809');\n"
               "  assert.equal(jsonValue(u64, 18446744073709551615n, {}), '18446744073709551615');\n"
               "  assert.equal(jsonValue(u64, -1n, {}), '18446744073709551615');\n"
               "  assert.equal(jsonValue({ kind: 'BIGINT' }, -9223372036854775807n, {}), '-9223372036854775807');\n"
               "});\n"),
    ]),
]


class HistoryError(Exception):
    pass


def _replace(files: dict[str, str], path: str, old: str, new: str, what: str) -> None:
    """`old` → `new` in files[path]; an empty `old` appends `new` (or, undoing, removes it from the end)."""
    text = files[path]
    if old == new:
        return
    if not old:  # appended
        files[path] = text + new
        return
    if not new and text.endswith(old):  # undoing an append
        files[path] = text[: len(text) - len(old)]
        return
    if text.count(old) != 1:
        raise HistoryError(f"{what}: {path} holds {text.count(old)} copies of {old[:60]!r}, not one: the example "
                           f"changed; update {Path(__file__).name}")
    files[path] = text.replace(old, new)


def versions() -> list[tuple[str, str, dict[str, str]]]:
    """(tag, message, files) for v1 … v8, oldest first, and the fix last (the shipped sources)."""
    shipped = {p: (EXAMPLE / p).read_text(encoding="utf-8") for p in FILES}
    files = dict(shipped)
    for tag, _, changes in reversed(VERSIONS):
        for c in reversed(changes):
            _replace(files, c.path, c.after, c.before, f"undoing {tag}")
    out = [("v1", "node-ticdc-simple: a TiCDC Simple (JSON) encoder speaking the subprocess protocol",
            dict(files))]
    for tag, message, changes in VERSIONS:
        for c in changes:
            _replace(files, c.path, c.before, c.after, tag)
        out.append((tag, message, dict(files)))
    if files != shipped:
        raise HistoryError("the changes done again do not give the shipped sources back")
    return out


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "core.autocrlf=false",
                           *args], cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HistoryError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def build(dest: Path, versions_dir: Path | None = None) -> list[tuple[str, str]]:
    """The repository at `dest` (tags v1 … v8); returns (tag, commit) oldest first."""
    if shutil.which("git") is None:
        raise HistoryError("git is not on PATH")
    if dest.exists() and any(dest.iterdir()):
        raise HistoryError(f"{dest} exists and is not empty")
    history = [v for v in versions() if v[0] != "fix"]
    dest.mkdir(parents=True, exist_ok=True)
    _git(dest, "init", "-q", "-b", "main")
    out = []
    for i, (tag, message, files) in enumerate(history):
        for path, text in files.items():
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_text(text, encoding="utf-8", newline="")
        when = f"@{EPOCH + i * 7 * 86400} +0000"
        env = {**os.environ, "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": when,
               "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_COMMITTER_DATE": when}
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "-m", message, env=env)
        _git(dest, "tag", tag)
        out.append((tag, _git(dest, "rev-parse", "HEAD")))
    if versions_dir is not None:
        versions_dir.mkdir(parents=True, exist_ok=True)
        for tag, _ in out:
            _git(dest, "worktree", "add", "-q", "--detach", str(versions_dir.resolve() / tag), tag)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("dest", type=Path, help="the repository to create (a new or empty directory)")
    p.add_argument("--versions-dir", type=Path, default=None,
                   help="also check each version out here, as VERSIONS_DIR/v1 … v8")
    args = p.parse_args(argv)
    try:
        commits = build(args.dest, args.versions_dir)
    except HistoryError as e:
        print(f"make_history: {e}", file=sys.stderr)
        return 2
    for tag, commit in commits:
        print(f"{tag} {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
