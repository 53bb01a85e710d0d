#!/usr/bin/env bash
# The "Run cdc-conformance" step of the action (action.yml): inputs arrive as INPUT_* variables,
# the suite's command as CONFORMANCE_BIN. It runs `conformance run`, appends the Markdown summary
# to $GITHUB_STEP_SUMMARY, writes the step's outputs to $GITHUB_OUTPUT and exits with the run's
# exit code (0 pass, 1 a check failed, 2 usage, input or infrastructure error).
# tests/unit/test_action_lint.py and tests/integration/test_action_run.py run it alone.
set -uo pipefail

bin="${CONFORMANCE_BIN:-conformance}"
python="$(dirname "$bin")/python"
[ -x "$python" ] || python="python3"

fail_usage() {
  echo "::error title=cdc-conformance::$1"
  echo "exit-code=2" >> "${GITHUB_OUTPUT:-/dev/null}"
  echo "verdict=error" >> "${GITHUB_OUTPUT:-/dev/null}"
  exit 2
}

is_true() {
  case "$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" in
    true|yes|1|on) return 0 ;;
    false|no|0|off|"") return 1 ;;
    *) fail_usage "expected true or false, got '$1'" ;;
  esac
}

[ -n "${INPUT_PROTOCOL:-}" ] || fail_usage "the input 'protocol' is required (see \`conformance list\`)"
if [ -n "${INPUT_ENCODER_CMD:-}" ] && [ -n "${INPUT_ENCODER:-}" ]; then
  fail_usage "give one of the inputs 'encoder-cmd' and 'encoder', not both"
fi
if [ -z "${INPUT_ENCODER_CMD:-}" ] && [ -z "${INPUT_ENCODER:-}" ]; then
  fail_usage "name the encoder under test: the input 'encoder-cmd' (a command line) or 'encoder' (a name)"
fi

report_dir="${INPUT_REPORT_DIR:-cdc-conformance-reports}"
args=(run --protocol "$INPUT_PROTOCOL" --examples "${INPUT_EXAMPLES:-50}" --report-dir "$report_dir"
      --encoder-timeout "${INPUT_ENCODER_TIMEOUT:-30}")
if [ -n "${INPUT_ENCODER_CMD:-}" ]; then
  args+=(--encoder-cmd "$INPUT_ENCODER_CMD")
else
  args+=(--encoder "$INPUT_ENCODER")
fi
[ -z "${INPUT_SEED:-}" ] || args+=(--seed "$INPUT_SEED")
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"
  line="${line%"${line##*[![:space:]]}"}"
  [ -z "$line" ] || args+=(--option "$line")
done <<< "${INPUT_OPTIONS:-}"
is_true "${INPUT_MATRIX:-true}" || args+=(--no-matrix)
is_true "${INPUT_STRICT:-false}" && args+=(--strict)
[ -z "${INPUT_BASELINE:-}" ] || args+=(--baseline "$INPUT_BASELINE")
is_true "${INPUT_BASELINE_STRICT:-false}" && args+=(--baseline-strict)
if [ -n "${INPUT_EXAMPLES_DB:-}" ]; then
  args+=(--examples-db "$INPUT_EXAMPLES_DB")
  # The cache step saves the directory: it exists even when nothing failed yet.
  case "$(printf '%s' "$INPUT_EXAMPLES_DB" | tr '[:upper:]' '[:lower:]')" in
    off|none|no|false|0) ;;
    *) mkdir -p "$INPUT_EXAMPLES_DB" ;;
  esac
fi
kafka="${INPUT_KAFKA:-none}"
args+=(--kafka "$kafka")
if [ "$(printf '%s' "$kafka" | tr '[:upper:]' '[:lower:]')" != "none" ] && ! is_true "${INPUT_SPARK:-false}"; then
  args+=(--no-spark)
fi
if [ -n "${INPUT_ARGS:-}" ]; then
  # Split as a POSIX shell would, without running one (shlex), one argument per NUL.
  while IFS= read -r -d '' a; do
    args+=("$a")
  done < <("$python" -c 'import shlex, sys; sys.stdout.write("".join(a + "\0" for a in shlex.split(sys.argv[1])))' \
             "$INPUT_ARGS") || fail_usage "cannot split the input 'args': $INPUT_ARGS"
fi

"$bin" "${args[@]}"
code=$?

abs_dir="$(mkdir -p "$report_dir" && cd "$report_dir" && pwd)"
summary="$abs_dir/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  if [ -f "$summary" ]; then
    cat "$summary" >> "$GITHUB_STEP_SUMMARY"
  else
    echo "## cdc-conformance: **ERROR** (exit $code, no report: see the step's log)" >> "$GITHUB_STEP_SUMMARY"
  fi
fi

# The verdict and one annotation per failed check, read from the canonical report.
verdict="$("$python" - "$abs_dir/report.json" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1], encoding="utf-8"))
except (OSError, ValueError):
    print("error")
    sys.exit(0)
print(report.get("verdict", "error"))
for r in report.get("results", []):
    if r.get("outcome") in ("failed", "errored"):
        first = (r.get("failures") or [{}])[0].get("message", r.get("outcome"))
        sys.stderr.write(f"::error title=cdc-conformance {r['check']}::[{r.get('level')}] ({r.get('label')}) {first}\n")
PY
)" || verdict="error"

{
  echo "verdict=$verdict"
  echo "exit-code=$code"
  echo "report-dir=$abs_dir"
  echo "junit=$abs_dir/junit.xml"
  echo "summary=$summary"
  echo "report-json=$abs_dir/report.json"
} >> "${GITHUB_OUTPUT:-/dev/null}"

if [ "$code" -ne 0 ]; then
  echo "::error title=cdc-conformance::verdict $verdict (exit $code); reports in $abs_dir"
fi
exit "$code"
