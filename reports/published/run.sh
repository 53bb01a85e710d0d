#!/usr/bin/env bash
# The runs the compatibility site publishes beside the committed vendor reports (issue 31): each
# protocol's reference encoder and the Node.js TiCDC Simple encoder (examples/node-ticdc-simple),
# `conformance run` with its defaults (every option combination, embedded Kafka, Spark), 30
# workloads each, one seed. Writes <name>/report.json and summary.md next to this script and
# prints one line per run. The Node encoder needs Node.js 20 or later on PATH.
#
#   reports/published/run.sh          # then: docs/site.md builds the site from them
set -uo pipefail
cd "$(dirname "$0")/../.."
CLI="${CONFORMANCE:-conformance}"
OUT=reports/published
SEED="${SEED:-site-31}"
EXAMPLES="${EXAMPLES:-30}"
run() {  # name, then the arguments
    local name=$1; shift
    local t0=$SECONDS
    $CLI run --examples "$EXAMPLES" --seed "$SEED" --report-dir "$OUT/$name" --no-examples-db "$@" \
        > "$OUT/$name.log" 2>&1
    echo "$name: exit $? in $((SECONDS - t0)) s $(grep -o 'VERDICT: [A-Z]*' "$OUT/$name.log" | tail -1)"
    rm -rf "$OUT/$name/report.html" "$OUT/$name/junit.xml" "$OUT/$name/repro" "$OUT/$name.log"
}
run reference-ticdc-avro --protocol ticdc-avro
run reference-ticdc-simple --protocol ticdc-simple
run reference-maxscale-kafkacdc --protocol maxscale-kafkacdc
run reference-debezium --protocol debezium
run node-ticdc-simple --protocol ticdc-simple --encoder "cmd:node examples/node-ticdc-simple/src/main.js"
