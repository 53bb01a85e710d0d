"""The GitHub Action (action.yml, .github/action/run.sh) and the workflows are valid: a linter that
works offline (check-jsonschema with its vendored GitHub schemas) accepts them and rejects a
broken action; every input reaches the step that uses it; bad inputs stop the step with exit 2
before anything runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
RUN_SH = ROOT / ".github" / "action" / "run.sh"
WORKFLOWS = [ROOT / ".github" / "workflows" / "tests.yml", ROOT / ".github" / "workflows" / "pages.yml",
             ROOT / "examples" / "encoder-repo" / ".github" / "workflows" / "conformance.yml"]
# Any download would go through this proxy and fail: the linter must use its vendored schemas.
OFFLINE = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "NO_PROXY": "", "no_proxy": ""}


def lint(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True, env=OFFLINE, timeout=60)


def test_the_action_and_the_workflows_pass_the_linter() -> None:
    done = lint("vendor.github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr
    done = lint("vendor.github-workflows", *WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation done" in done.stdout


def test_the_linter_rejects_a_broken_action(tmp_path: Path) -> None:
    """A composite step that runs a script must name its shell (the mistake a YAML parser misses)."""
    text = ACTION.read_text(encoding="utf-8")
    broken = tmp_path / "action.yml"
    broken.write_text(text.replace("      shell: bash\n      working-directory:", "      working-directory:"),
                      encoding="utf-8")
    assert broken.read_text(encoding="utf-8") != text
    done = lint("vendor.github-actions", broken)
    assert done.returncode == 1 and "is not valid" in done.stdout, done.stdout + done.stderr


def _action() -> dict:  # type: ignore[type-arg]
    from ruamel.yaml import YAML  # check-jsonschema's YAML parser (the test extra brings it)

    return YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_every_input_reaches_the_step_that_uses_it() -> None:
    action = _action()
    steps = {s.get("id"): s for s in action["runs"]["steps"]}
    env = steps["run"]["env"]
    script = RUN_SH.read_text(encoding="utf-8")
    used_elsewhere = {"python-version", "suite", "working-directory", "cache-examples-db"}
    for name in action["inputs"]:
        if name in used_elsewhere:
            assert f"inputs.{name}" in ACTION.read_text(encoding="utf-8")
            continue
        var = "INPUT_" + name.upper().replace("-", "_")
        assert env.get(var) == f"${{{{ inputs.{name} }}}}", f"input {name} is not passed as {var}"
        assert var in script, f"run.sh ignores the input {name}"
    read = set(re.findall(r"\bINPUT_[A-Z_]+\b", script))
    assert read <= set(env), f"run.sh reads variables the action never sets: {sorted(read - set(env))}"
    for output in action["outputs"].values():
        key = re.fullmatch(r"\$\{\{ steps\.run\.outputs\.([\w-]+) \}\}", output["value"])
        assert key is not None and f"echo \"{key.group(1)}=" in script


def test_the_steps_scripts_parse() -> None:
    done = subprocess.run(["bash", "-n", str(RUN_SH)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    install = next(s for s in _action()["runs"]["steps"] if s.get("id") == "install")
    done = subprocess.run(["bash", "-n"], input=install["run"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("inputs,message", [
    ({"INPUT_ENCODER": "reference"}, "the input 'protocol' is required"),
    ({"INPUT_PROTOCOL": "ticdc-simple"}, "name the encoder under test"),
    ({"INPUT_PROTOCOL": "ticdc-simple", "INPUT_ENCODER": "reference", "INPUT_ENCODER_CMD": "node x.js"},
     "not both"),
    ({"INPUT_PROTOCOL": "ticdc-simple", "INPUT_ENCODER": "reference", "INPUT_MATRIX": "maybe"},
     "expected true or false, got 'maybe'"),
], ids=["no-protocol", "no-encoder", "two-encoders", "bad-boolean"])
def test_bad_inputs_stop_the_step_before_anything_runs(tmp_path: Path, inputs: dict[str, str], message: str) -> None:
    out = tmp_path / "github_output"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
    # A suite that must not be started: the step fails on its inputs first.
    env.update(inputs, CONFORMANCE_BIN=str(tmp_path / "bin" / "not-there"), GITHUB_OUTPUT=str(out))
    done = subprocess.run(["bash", str(RUN_SH)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    assert "::error title=cdc-conformance::" in done.stdout and message in done.stdout, done.stdout + done.stderr
    assert "verdict=error" in out.read_text() and "exit-code=2" in out.read_text()


def test_the_readme_documents_every_input_and_every_plugin_key() -> None:
    from conformance.pytest_plugin import _INI

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Gating an encoder in its own repository"):]
    for name in _action()["inputs"]:
        assert f"`{name}`" in section, f"README: the action's input {name}"
    for output in _action()["outputs"]:
        assert f"`{output}`" in section, f"README: the action's output {output}"
    for key, *_ in _INI:
        assert f"`{key}`" in section, f"README: the plugin's key {key}"
