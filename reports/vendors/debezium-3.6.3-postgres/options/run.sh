#!/usr/bin/env bash
# Real Debezium 3.6.3 at every option value the debezium protocol declares (issue 27): one
# `conformance run` per option, its values as the combinations (30 workloads each, the other
# options at their defaults). Needs the `[debezium]` extra and Java 17. Writes <option>/report.json
# and summary.md next to this script; prints one line per option. The vendor's baseline
# (../baseline.json: Debezium's own defects, each narrowed to the workloads that meet it) marks
# those failures known; BASELINE= (empty) runs without it.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
CLI="${CONFORMANCE:-.venv/bin/conformance}"
OUT=reports/vendors/debezium-3.6.3-postgres/options
SEED="${SEED:-vendor-27}"
EXAMPLES="${EXAMPLES:-30}"
BASELINE="${BASELINE-reports/vendors/debezium-3.6.3-postgres/baseline.json}"
run() {  # name, then the --option arguments
    local name=$1; shift
    "$CLI" run --protocol debezium --encoder debezium/engine-postgres --upstream embedded-postgres --no-spark \
        --no-matrix --examples "$EXAMPLES" --seed "$SEED" --report-dir "$OUT/$name" ${BASELINE:+--baseline "$BASELINE"} \
        "$@" > "$OUT/$name.log" 2>&1
    echo "$name: exit $? $(grep -o 'VERDICT: [A-Z]*' "$OUT/$name.log" | tail -1)"
}
run snapshot.mode --option snapshot.mode=initial,no_data,initial_only,always,when_needed
run decimal.handling.mode --option decimal.handling.mode=precise,double,string
run time.precision.mode --option time.precision.mode=adaptive,adaptive_time_microseconds,connect,isostring,microseconds,nanoseconds
run binary.handling.mode --option binary.handling.mode=bytes,base64,base64-url-safe,hex
run interval.handling.mode --option interval.handling.mode=numeric,string
run hstore.handling.mode --option hstore.handling.mode=json,map
run tombstones.on.delete --option tombstones.on.delete=true,false
run provide.transaction.metadata --option provide.transaction.metadata=false,true
run value.converter.schemas.enable --option value.converter.schemas.enable=true,false
run key.converter.schemas.enable --option key.converter.schemas.enable=true,false
run value.converter.replace.null.with.default --option value.converter.replace.null.with.default=true,false
run schema.name.adjustment.mode --option schema.name.adjustment.mode=none,avro,avro_unicode
run field.name.adjustment.mode --option field.name.adjustment.mode=none,avro,avro_unicode
run converters --option profile=json,avro
run registry-compatibility --option profile=avro --option registry-compatibility=all
