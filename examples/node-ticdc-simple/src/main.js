#!/usr/bin/env node
'use strict';
// The subprocess encoder protocol, version 1 (cdc-conformance docs/subprocess-encoders.md):
// one JSON request per line on stdin, one JSON reply per line on stdout; logs go to stderr.

const readline = require('node:readline');
const { parse } = require('./json');
const { SimpleEncoder, EncoderError, OptionsError, SUPPORTED_OPTIONS } = require('./simple');
const pkg = require('../package.json');

const PROTOCOL_VERSION = 1;
const EVENT_FORMAT = 'cdc-conformance/workload';
const EVENT_FORMAT_VERSION = 1;

let encoder = null;
let tables = new Map(); // table ref -> table version (with byName), as sent with the events

function reply(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

function fail(id, kind, message, detail) {
  const error = { kind, message };
  if (detail) error.detail = detail;
  reply({ id, error });
}

function learnTable(t) {
  t.byName = new Map(t.columns.map((c) => [c.name, c]));
  tables.set(t.ref, t);
}

function table(ref) {
  if (ref === null || ref === undefined) return null;
  const t = tables.get(ref);
  if (!t) throw new EncoderError(`unknown table reference ${ref}`);
  return t;
}

// Table references in the event -> the table versions themselves.
function resolve(event) {
  if (event.txn) {
    for (const c of event.txn.changes) c.table = table(c.table);
  } else if (event.ddl) {
    event.ddl.table = table(event.ddl.table);
    event.ddl.pre_table = table(event.ddl.pre_table);
  }
  return event;
}

function base64(buf) {
  return buf === null ? null : buf.toString('base64');
}

function records(list) {
  return list.map((r) => ({ topic: r.topic, partition: r.partition, key: base64(r.key), value: base64(r.value) }));
}

const handlers = {
  start(req) {
    if (req.version !== BigInt(PROTOCOL_VERSION)) {
      process.stderr.write(`the harness speaks protocol version ${req.version}; this encoder speaks ${PROTOCOL_VERSION}\n`);
    }
    if (req.event_format !== EVENT_FORMAT || req.event_format_version !== BigInt(EVENT_FORMAT_VERSION)) {
      process.stderr.write(`unexpected event format ${req.event_format} v${req.event_format_version}\n`);
    }
    return {
      version: PROTOCOL_VERSION,
      implementation: { name: pkg.name, version: pkg.version, language: `javascript (node ${process.version})` },
      protocol: 'ticdc-simple',
      capabilities: { options: SUPPORTED_OPTIONS, registers_schemas: false, needs_ticks: true },
    };
  },
  open(req) {
    tables = new Map();
    encoder = new SimpleEncoder({
      options: req.options, partitions: Number(req.partitions), topicPrefix: req.topic_prefix,
    });
    return { ok: true };
  },
  encode(req) {
    for (const t of req.tables) learnTable(t);
    const now = Number(req.now);
    const out = encoder.encode(resolve(req.event), now);
    if (req.tick === true) out.push(...encoder.tick(now)); // the tick after the event, in the same reply
    return { records: records(out) };
  },
  tick(req) {
    return { records: records(encoder.tick(Number(req.now))) };
  },
  close() {
    encoder = null;
    return { ok: true };
  },
};

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = parse(line);
  } catch (e) {
    process.stderr.write(`not a JSON request: ${e.message}\n`);
    process.exit(2);
  }
  const id = Number(req.id);
  const handler = handlers[req.cmd];
  if (!handler) return fail(id, 'encoder', `unknown command ${JSON.stringify(req.cmd)}`);
  if (req.cmd !== 'start' && req.cmd !== 'open' && req.cmd !== 'close' && encoder === null) {
    return fail(id, 'encoder', `${req.cmd} before open`);
  }
  try {
    reply({ id, ...handler(req) });
  } catch (e) {
    fail(id, e instanceof OptionsError ? 'options' : 'encoder', e.message, e.stack);
  }
});
rl.on('close', () => process.exit(0));
