'use strict';
// JSON in and out, exactly.
//
// * parse(): JSON.parse loses integers above 2^53, and the suite's events are full of them
//   (commit_ts is a TiDB TSO, about 2^60; BIGINT UNSIGNED reaches 2^64-1). This parser returns
//   every integer literal as a BigInt and every number with a fraction or an exponent as a
//   Number (the suite writes floats that way: `1.0`, `-0.0`, `1e+20`). Objects have no
//   prototype, so a key such as "__proto__" is an ordinary key.
// * goMarshal(): Go's encoding/json output (what TiCDC writes): compact, HTML characters and
//   U+2028/U+2029 escaped, objects in the order of a Map (Go struct field order).
// * tidbJsonText(): TiDB's rendering of a JSON column value (BinaryJSON.String()).

const { goFloat } = require('./floats');

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

function parse(text) {
  let i = 0;
  const n = text.length;

  function ws() {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  }

  function fail(what) {
    throw new SyntaxError(`${what} at offset ${i}`);
  }

  function string() {
    // Find the closing quote, then let JSON.parse decode the escapes of this one literal.
    const start = i;
    i++;
    let escaped = false;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x5c) { escaped = true; i += 2; continue; }
      i++;
    }
    i++;
    const raw = text.slice(start + 1, i - 1);
    return escaped ? JSON.parse(text.slice(start, i)) : raw;
  }

  function value() {
    ws();
    if (i >= n) fail('unexpected end');
    const c = text[i];
    if (c === '{') {
      i++;
      const obj = Object.create(null);
      ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = string();
        ws();
        if (text[i] !== ':') fail('expected :');
        i++;
        obj[k] = value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return obj; }
        fail('expected , or }');
      }
    }
    if (c === '[') {
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return arr; }
        fail('expected , or ]');
      }
    }
    if (c === '"') return string();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('unexpected character');
    i = NUMBER.lastIndex;
    return m[1] === undefined && m[2] === undefined ? BigInt(m[0]) : Number(m[0]);
  }

  const v = value();
  ws();
  if (i !== n) fail('trailing characters');
  return v;
}

const GO_ESCAPES = {
  '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f',
  '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029',
};
const GO_SPECIAL = /["\\\n\r\t\b\f<>&\u2028\u2029\u0000-\u001f]/;

function hex4(code) {
  return '\\u' + code.toString(16).padStart(4, '0');
}

function goQuote(s) {
  if (!GO_SPECIAL.test(s)) return '"' + s + '"';
  let out = '"';
  for (const ch of s) {
    const e = GO_ESCAPES[ch];
    if (e !== undefined) out += e;
    else if (ch < ' ') out += hex4(ch.charCodeAt(0));
    else out += ch;
  }
  return out + '"';
}

function tidbQuote(s) {
  // TiDB's JSON printer: no HTML escaping, short escapes, \u00xx for other control characters.
  let out = '"';
  for (const ch of s) {
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch < ' ') out += hex4(ch.charCodeAt(0));
    else out += ch;
  }
  return out + '"';
}

// Go's marshal of what TiCDC's message holds: strings, integers (BigInt or integral Number),
// booleans, null, arrays, and Maps (ordered objects).
function goMarshal(v) {
  if (v === null || v === undefined) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isInteger(v) && !Object.is(v, -0) ? String(v) : goFloat(v, 64, 'json');
  if (typeof v === 'string') return goQuote(v);
  if (Array.isArray(v)) return '[' + v.map(goMarshal).join(',') + ']';
  if (v instanceof Map) {
    const parts = [];
    for (const [k, x] of v) parts.push(goQuote(k) + ':' + goMarshal(x));
    return '{' + parts.join(',') + '}';
  }
  throw new TypeError(`no Go JSON form for ${typeof v}`);
}

function utf8Compare(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

// TiDB's BinaryJSON.String(): MySQL spacing, object keys sorted by their UTF-8 bytes.
function tidbJsonText(v) {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return goFloat(v, 64, 'json');
  if (typeof v === 'string') return tidbQuote(v);
  if (Array.isArray(v)) return '[' + v.map(tidbJsonText).join(', ') + ']';
  const keys = Object.keys(v).sort(utf8Compare);
  return '{' + keys.map((k) => tidbQuote(k) + ': ' + tidbJsonText(v[k])).join(', ') + '}';
}

module.exports = { parse, goMarshal, goQuote, tidbJsonText, utf8Compare };
