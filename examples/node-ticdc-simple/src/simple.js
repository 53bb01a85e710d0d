'use strict';
// TiCDC Simple, JSON encoding, as pingcap/tiflow writes it (cdc-conformance's
// spec/notes/ticdc.md §2). One instance encodes one changefeed's events, in commit order.

const zlib = require('node:zlib');
const { goMarshal, tidbJsonText, utf8Compare } = require('./json');
const { goFloat } = require('./floats');

const VERSION = 1;
const MAX_RECORD_OVERHEAD = 36; // sarama's worst-case record overhead, added by TiCDC's Message.Length()

const INTEGER_KINDS = new Set(['BOOL', 'TINYINT', 'SMALLINT', 'MEDIUMINT', 'INT', 'BIGINT']);
const TEXT_KINDS = new Set(['CHAR', 'VARCHAR', 'TINYTEXT', 'TEXT', 'MEDIUMTEXT', 'LONGTEXT']);
const BINARY_KINDS = new Set(['BINARY', 'VARBINARY', 'TINYBLOB', 'BLOB', 'MEDIUMBLOB', 'LONGBLOB']);

const MYSQL_TYPE = {
  BOOL: 'tinyint', TINYINT: 'tinyint', SMALLINT: 'smallint', MEDIUMINT: 'mediumint', INT: 'int', BIGINT: 'bigint',
  FLOAT: 'float', DOUBLE: 'double', DECIMAL: 'decimal', BIT: 'bit', CHAR: 'char', VARCHAR: 'varchar',
  TINYTEXT: 'tinytext', TEXT: 'text', MEDIUMTEXT: 'mediumtext', LONGTEXT: 'longtext', BINARY: 'binary',
  VARBINARY: 'varbinary', TINYBLOB: 'tinyblob', BLOB: 'blob', MEDIUMBLOB: 'mediumblob', LONGBLOB: 'longblob',
  DATE: 'date', DATETIME: 'datetime', TIMESTAMP: 'timestamp', TIME: 'time', YEAR: 'year', JSON: 'json',
  ENUM: 'enum', SET: 'set', VECTOR: 'vector',
};

// TiDB's default display widths (signed, unsigned) and fixed lengths.
const INT_WIDTH = { BOOL: [1, 1], TINYINT: [4, 3], SMALLINT: [6, 5], MEDIUMINT: [9, 8], INT: [11, 10], BIGINT: [20, 20] };
const FIXED_WIDTH = {
  FLOAT: 12, DOUBLE: 22, TINYTEXT: 255, TINYBLOB: 255, TEXT: 65535, BLOB: 65535, MEDIUMTEXT: 16777215,
  MEDIUMBLOB: 16777215, LONGTEXT: 4294967295, LONGBLOB: 4294967295, JSON: 4294967295, DATE: 10, YEAR: 4,
};

const DDL_TYPE = {
  create_table: 'CREATE', rename_table: 'RENAME', add_index: 'CINDEX', drop_index: 'DINDEX', drop_table: 'ERASE',
  truncate_table: 'TRUNCATE', add_column: 'ALTER', drop_column: 'ALTER', modify_column: 'ALTER',
};

const codePoints = (s) => [...s].length;

class EncoderError extends Error {}
class OptionsError extends Error {} // invalid or unsupported options (a usage error, not a finding)

// -- options ---------------------------------------------------------------------------------

function num(options, name, dflt) {
  const s = String(options[name] ?? dflt).trim();
  const v = Number(s);
  return s === '' || Number.isNaN(v) ? Number(dflt) : v;
}

function readOptions(o) {
  return {
    encoding: o['encoding-format'] ?? 'json',
    bootstrapIntervalS: num(o, 'send-bootstrap-interval-in-sec', '120'),
    bootstrapCount: Math.trunc(num(o, 'send-bootstrap-in-msg-count', '10000')),
    bootstrapAllPartitions: (o['send-bootstrap-to-all-partition'] ?? 'true').toLowerCase() === 'true',
    largeMessage: o['large-message-handle-option'] ?? 'none',
    compression: o['large-message-handle-compression'] ?? 'none',
    maxMessageBytes: Math.trunc(num(o, 'max-message-bytes', '10485760')),
    topic: o.topic ?? 'tidb_simple',
    timeZone: o['time-zone'] ?? 'UTC',
    disableRule: o['bootstrap-disable-rule'] ?? 'code',
  };
}

function bootstrapsEnabled(o) {
  // The code disables bootstraps when either setting is <= 0; the docs only when both are 0.
  if (o.disableRule === 'docs') return !(o.bootstrapIntervalS === 0 && o.bootstrapCount === 0);
  return o.bootstrapIntervalS > 0 && o.bootstrapCount > 0;
}

// -- types -------------------------------------------------------------------------------------

function isBinaryCharset(t) {
  return !(TEXT_KINDS.has(t.kind) || t.kind === 'ENUM' || t.kind === 'SET');
}

function typeLength(t) {
  const k = t.kind;
  if (k in INT_WIDTH) return INT_WIDTH[k][t.unsigned ? 1 : 0];
  if (k in FIXED_WIDTH) return FIXED_WIDTH[k];
  if (k === 'DECIMAL') return Number(t.precision);
  if (['BIT', 'CHAR', 'VARCHAR', 'BINARY', 'VARBINARY'].includes(k)) return Number(t.length);
  const fsp = Number(t.fsp ?? 0n);
  if (k === 'DATETIME' || k === 'TIMESTAMP') return 19 + (fsp ? 1 + fsp : 0);
  if (k === 'TIME') return 10 + (fsp ? 1 + fsp : 0);
  if (k === 'ENUM') return Math.max(...t.elements.map(codePoints));
  if (k === 'SET') return codePoints(t.elements.join(','));
  // TiDB's flen: the dimension, or -1 (UnspecifiedLength) for a VECTOR of any dimension.
  if (k === 'VECTOR') return t.length === undefined ? -1 : Number(t.length);
  throw new EncoderError(`no length for ${k}`);
}

function decimalOf(t) {
  if (t.kind === 'DECIMAL') return Number(t.scale);
  if (t.kind === 'DATETIME' || t.kind === 'TIMESTAMP' || t.kind === 'TIME') return Number(t.fsp ?? 0n);
  return 0;
}

function dataType(t) {
  const binary = isBinaryCharset(t);
  const d = new Map([
    ['mysqlType', MYSQL_TYPE[t.kind]],
    ['charset', binary ? 'binary' : t.charset ?? null],
    ['collate', binary ? 'binary' : t.collation ?? null],
  ]);
  const len = typeLength(t);
  if (len) d.set('length', len);
  const dec = decimalOf(t);
  if (dec) d.set('decimal', dec);
  if (t.elements && t.elements.length) d.set('elements', t.elements);
  if (t.unsigned || t.kind === 'YEAR' || t.kind === 'BIT') d.set('unsigned', true);
  if (t.kind === 'YEAR') d.set('zerofill', true);
  return d;
}

// -- values --------------------------------------------------------------------------------------
// Event values (docs/subprocess-encoders.md): integers as BigInt, floats as Number, DECIMAL as
// a plain decimal string, bytes as base64, DATE "YYYY-MM-DD", DATETIME/TIMESTAMP
// "YYYY-MM-DD HH:MM:SS.ffffff", TIME "[-]HH:MM:SS.ffffff", JSON {"json": data}, ENUM the
// member's name, SET an array of member names.

function withFsp(text, fsp) {
  const dot = text.indexOf('.');
  const whole = dot < 0 ? text : text.slice(0, dot);
  const frac = dot < 0 ? '' : text.slice(dot + 1);
  return fsp ? whole + '.' + frac.padEnd(6, '0').slice(0, fsp) : whole;
}

// TiDB's MyDecimal.String(): exactly `scale` fraction digits, a 0 before the point, never -0.
function decimalText(s, scale) {
  let neg = s.startsWith('-');
  const body = neg || s.startsWith('+') ? s.slice(1) : s;
  let [whole, frac = ''] = body.split('.');
  if (frac.length > scale) {
    // Round half to even (the suite's values have exactly `scale` digits; this is for safety).
    let unscaled = BigInt(whole + frac.slice(0, scale));
    const rest = frac.slice(scale);
    const half = '5'.padEnd(rest.length, '0');
    if (rest > half || (rest === half && unscaled % 2n === 1n)) unscaled += 1n;
    const digits = unscaled.toString().padStart(scale + 1, '0');
    whole = digits.slice(0, digits.length - scale);
    frac = digits.slice(digits.length - scale);
  } else {
    frac = frac.padEnd(scale, '0');
  }
  whole = whole.replace(/^0+(?=\d)/, '') || '0';
  if (/^0*$/.test(whole + frac)) neg = false;
  return (neg ? '-' : '') + whole + (scale ? '.' + frac : '');
}

function enumIndex(t, name) {
  const i = t.elements.indexOf(name);
  if (i < 0) throw new EncoderError(`${JSON.stringify(name)} is not a member of the ENUM`);
  return BigInt(i + 1);
}

function setBitmask(t, members) {
  let mask = 0n;
  for (const m of members) {
    const i = t.elements.indexOf(m);
    if (i < 0) throw new EncoderError(`${JSON.stringify(m)} is not a member of the SET`);
    mask |= 1n << BigInt(i);
  }
  return mask;
}

function intOf(t, v) {
  if (t.kind === 'ENUM') return enumIndex(t, v);
  if (t.kind === 'SET') return setBitmask(t, v);
  // BIGINT UNSIGNED above 2^63-1 may come wrapped to int64 (as some drivers carry it): the uint64
  // it stands for, in BigInt arithmetic (a Number has 53 bits: 2^63+1 would become 2^63).
  if (t.kind === 'BIGINT' && t.unsigned) return BigInt.asUintN(64, BigInt(v));
  return BigInt(v);
}

// A value as TiDB prints it in its own strings (defaults; DECIMAL, temporal and JSON values).
function storedText(t, v) {
  switch (t.kind) {
    case 'DECIMAL': return decimalText(v, Number(t.scale));
    case 'DATE': return v;
    case 'DATETIME': case 'TIMESTAMP': case 'TIME': return withFsp(v, Number(t.fsp ?? 0n));
    case 'JSON': return tidbJsonText(v.json);
    case 'SET': return t.elements.filter((e) => v.includes(e)).join(',');
    case 'FLOAT': return goFloat(Number(v), 32, 'f');
    case 'DOUBLE': return goFloat(Number(v), 64, 'f');
    // TiDB's VectorFloat32.String(): [e1,e2,...], each float32 in Go's shortest 'f' form.
    case 'VECTOR': return '[' + v.map((x) => goFloat(Number(x), 32, 'f')).join(',') + ']';
    default:
      if (BINARY_KINDS.has(t.kind)) return Buffer.from(v, 'base64').toString('utf8');
      return String(v);
  }
}

// encodeValue (simple/message.go): every non-NULL value is a string, except TIMESTAMP.
function jsonValue(t, v, o) {
  if (v === null) return null;
  const k = t.kind;
  if (INTEGER_KINDS.has(k) || k === 'YEAR' || k === 'BIT' || k === 'ENUM' || k === 'SET') return intOf(t, v).toString();
  if (k === 'FLOAT') return goFloat(Number(v), 32, 'f');
  if (k === 'DOUBLE') return goFloat(Number(v), 64, 'f');
  if (BINARY_KINDS.has(k)) return v; // already standard base64 with padding
  if (k === 'TIMESTAMP') {
    if (o.timeZone !== 'UTC') throw new EncoderError(`time-zone ${o.timeZone} is not supported (UTC only)`);
    return new Map([['location', o.timeZone], ['value', withFsp(v, Number(t.fsp ?? 0n))]]);
  }
  if (TEXT_KINDS.has(k)) return v;
  return storedText(t, v);
}

function defaultValue(c) {
  const d = c.default;
  if (!d || d.kind === 'none' || d.kind === 'null') return null;
  if (d.kind === 'current_timestamp') return 'CURRENT_TIMESTAMP';
  if (c.type.kind === 'BIT') return BigInt(d.value); // MustBinaryLiteralToInt: a JSON number
  return storedText(c.type, d.value);
}

// Python-like equality of two event values of one column (an UPDATE that changes a unique key
// is split into DELETE + INSERT).
function sameValue(t, a, b) {
  if (a === null || b === null) return a === b;
  if (t.kind === 'JSON') return tidbJsonText(a.json) === tidbJsonText(b.json);
  if (t.kind === 'SET') return setBitmask(t, a) === setBitmask(t, b);
  if (t.kind === 'DECIMAL') return decimalText(a, 30) === decimalText(b, 30);
  if (t.kind === 'VECTOR') return a.length === b.length && a.every((x, i) => Number(x) === Number(b[i]));
  if (typeof a === 'number' || typeof b === 'number') return Number(a) === Number(b);
  return a === b;
}

// -- tables --------------------------------------------------------------------------------------

function columnsById(table) {
  return [...table.columns].sort((a, b) => Number(BigInt(a.column_id) - BigInt(b.column_id)));
}

function pkIsHandle(table) {
  const pk = table.indexes.find((ix) => ix.primary);
  if (!pk || pk.columns.length !== 1) return false;
  return INTEGER_KINDS.has(table.byName.get(pk.columns[0]).type.kind);
}

function indexJson(table, ix, name) {
  return new Map([
    ['name', name ?? ix.name],
    ['unique', ix.primary || ix.unique],
    ['primary', ix.primary],
    ['nullable', ix.columns.some((c) => table.byName.get(c).nullable)],
    ['columns', ix.columns],
  ]);
}

function indexes(table) {
  const handle = pkIsHandle(table);
  const out = [...table.indexes]
    .sort((a, b) => Number(BigInt(a.index_id) - BigInt(b.index_id)))
    .filter((ix) => !(ix.primary && handle))
    .map((ix) => indexJson(table, ix));
  if (handle) out.push(indexJson(table, table.indexes.find((ix) => ix.primary), 'primary'));
  return out;
}

function tableSchema(table) {
  const cols = columnsById(table).map((c) => new Map([
    ['name', c.name], ['dataType', dataType(c.type)], ['nullable', c.nullable], ['default', defaultValue(c)],
  ]));
  return new Map([
    ['schema', table.database], ['table', table.name], ['tableID', table.table_id], ['version', table.version],
    ['columns', cols], ['indexes', indexes(table)],
  ]);
}

// A virtual generated column is in no row event (TiCDC's mounter never decodes it).
const isVirtual = (c) => Boolean(c.generated) && !c.generated.stored;

function uniqueKeyColumns(table) {
  const out = new Set();
  for (const ix of table.indexes) {
    if (ix.primary || ix.unique) ix.columns.filter((c) => !isVirtual(table.byName.get(c))).forEach((c) => out.add(c));
  }
  return out;
}

// -- the encoder -----------------------------------------------------------------------------------

class SimpleEncoder {
  constructor({ options, partitions, topicPrefix }) {
    this.o = readOptions(options);
    if (this.o.encoding !== 'json') throw new OptionsError('only encoding-format=json is implemented');
    if (this.o.compression !== 'none') throw new OptionsError('only large-message-handle-compression=none is implemented');
    this.partitions = Math.max(1, partitions);
    this.topic = topicPrefix + this.o.topic;
    this.tables = new Map(); // table id -> { table, lastBootstrapS, rowsSince }, in first-seen order
    this.now = 0;
  }

  buildTs() {
    return Math.trunc(this.now * 1000);
  }

  record(payload, partition) {
    return { topic: this.topic, partition, key: null, value: payload };
  }

  broadcast(message) {
    const payload = Buffer.from(goMarshal(message), 'utf8');
    return Array.from({ length: this.partitions }, (_, p) => this.record(payload, p));
  }

  partitionOf(table) {
    return zlib.crc32(Buffer.from(table.database + table.name, 'utf8')) % this.partitions;
  }

  encode(event, now) {
    this.now = now;
    if (event.txn) {
      const out = [];
      for (const change of event.txn.changes) out.push(...this.encodeChange(change, event.txn.commit_ts));
      return out;
    }
    if (event.ddl) return this.encodeDdl(event.ddl);
    if (event.watermark !== undefined) {
      return this.broadcast(new Map([
        ['version', VERSION], ['type', 'WATERMARK'], ['commitTs', event.watermark], ['buildTs', this.buildTs()],
      ]));
    }
    throw new EncoderError('unknown event');
  }

  tick(now) {
    this.now = now;
    const out = [];
    if (!bootstrapsEnabled(this.o)) return out;
    for (const st of this.tables.values()) {
      if (now - st.lastBootstrapS >= this.o.bootstrapIntervalS || st.rowsSince >= this.o.bootstrapCount) {
        out.push(...this.bootstrap(st));
      }
    }
    return out;
  }

  // -- DDL and BOOTSTRAP ---------------------------------------------------------------------------

  encodeDdl(d) {
    const type = DDL_TYPE[d.kind] ?? 'QUERY';
    const m = new Map([
      ['version', VERSION], ['type', type], ['sql', d.sql], ['commitTs', d.commit_ts], ['buildTs', this.buildTs()],
    ]);
    // A DROP TABLE carries the dropped table in both schemas; a CREATE has no pre-table schema.
    const table = d.table ?? (d.kind === 'drop_table' ? d.pre_table : null);
    const pre = type === 'CREATE' ? null : d.pre_table;
    if (table) m.set('tableSchema', tableSchema(table));
    if (pre) m.set('preTableSchema', tableSchema(pre));
    if (d.table) {
      const st = this.tables.get(d.table.table_id);
      if (st) st.table = d.table;
    }
    return this.broadcast(m);
  }

  bootstrap(st) {
    const m = new Map([
      ['version', VERSION], ['type', 'BOOTSTRAP'], ['commitTs', 0], ['buildTs', this.buildTs()],
      ['tableSchema', tableSchema(st.table)],
    ]);
    st.lastBootstrapS = this.now;
    st.rowsSince = 0;
    const payload = Buffer.from(goMarshal(m), 'utf8');
    const parts = this.o.bootstrapAllPartitions ? this.partitions : 1;
    return Array.from({ length: parts }, (_, p) => this.record(payload, p));
  }

  beforeRow(table) {
    // A table seen for the first time gets its BOOTSTRAP before its first row.
    let st = this.tables.get(table.table_id);
    if (st === undefined) {
      st = { table, lastBootstrapS: this.now, rowsSince: 0 };
      this.tables.set(table.table_id, st);
      if (bootstrapsEnabled(this.o)) return this.bootstrap(st);
    }
    st.table = table;
    return [];
  }

  // -- DML -------------------------------------------------------------------------------------------

  rowValues(table, row) {
    const values = table.columns
      .map((c, i) => [c, row[i]])
      .filter(([c]) => !isVirtual(c))
      .map(([c, v]) => [c.name, jsonValue(c.type, v, this.o)]);
    values.sort((a, b) => utf8Compare(a[0], b[0])); // Go sorts map keys bytewise
    return new Map(values);
  }

  encodeChange(change, commitTs) {
    const t = change.table;
    if (change.op === 'update') {
      const unique = uniqueKeyColumns(t);
      const changed = t.columns.some((c, i) => unique.has(c.name) && !sameValue(c.type, change.before[i], change.after[i]));
      if (changed) {
        return [
          ...this.encodeChange({ op: 'delete', table: t, before: change.before, after: null }, commitTs),
          ...this.encodeChange({ op: 'insert', table: t, before: null, after: change.after }, commitTs),
        ];
      }
    }
    const out = this.beforeRow(t);
    const m = new Map([
      ['version', VERSION], ['database', t.database], ['table', t.name], ['tableID', t.table_id],
      ['type', change.op.toUpperCase()], ['commitTs', commitTs], ['buildTs', this.buildTs()],
      ['schemaVersion', t.version],
    ]);
    if (change.after) m.set('data', this.rowValues(t, change.after));
    if (change.before && change.op !== 'insert') m.set('old', this.rowValues(t, change.before));
    const payload = Buffer.from(goMarshal(m), 'utf8');
    if (payload.length + MAX_RECORD_OVERHEAD > this.o.maxMessageBytes) {
      throw new EncoderError(`message of ${payload.length + MAX_RECORD_OVERHEAD} bytes exceeds max-message-bytes=` +
        `${this.o.maxMessageBytes} and large-message-handle-option is none (TiCDC reports ErrMessageTooLarge)`);
    }
    out.push(this.record(payload, this.partitionOf(t)));
    this.tables.get(t.table_id).rowsSince += 1;
    return out;
  }
}

// What this encoder honours (the subprocess protocol's capabilities.options): name -> values
// (null: any). Options it does not list work only at the protocol's default.
const SUPPORTED_OPTIONS = {
  'encoding-format': ['json'],
  'send-bootstrap-interval-in-sec': null,
  'send-bootstrap-in-msg-count': null,
  'send-bootstrap-to-all-partition': ['true', 'false'],
  'large-message-handle-option': ['none'],
  'large-message-handle-compression': ['none'],
  'max-message-bytes': null,
  topic: null,
  'time-zone': ['UTC'],
  'bootstrap-disable-rule': ['code', 'docs'],
  'avro-bit-as-string': null, // an Avro-only switch: nothing to do for JSON
};

module.exports = { SimpleEncoder, EncoderError, OptionsError, SUPPORTED_OPTIONS, decimalText, jsonValue, tableSchema };
