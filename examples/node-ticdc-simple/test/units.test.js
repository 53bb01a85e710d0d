'use strict';
// The parts of the encoder that are easy to get wrong in JavaScript: exact integers, Go's
// float formatting, TiDB's decimal and JSON texts. Run with `node --test test/`.

const test = require('node:test');
const assert = require('node:assert/strict');
const { parse, goMarshal, tidbJsonText } = require('../src/json');
const { goFloat } = require('../src/floats');
const { decimalText, jsonValue } = require('../src/simple');

test('integers above 2^53 stay exact; floats stay floats', () => {
  const v = parse('{"ts": 463267587817472001, "u": 18446744073709551615, "f": 1.0, "z": -0.0, "e": 1e+20}');
  assert.equal(v.ts, 463267587817472001n);
  assert.equal(v.u, 18446744073709551615n);
  assert.equal(typeof v.f, 'number');
  assert.ok(Object.is(v.z, -0));
  assert.equal(v.e, 1e20);
});

test('"__proto__" is an ordinary key', () => {
  const v = parse('{"__proto__": {"polluted": true}}');
  assert.deepEqual(Object.keys(v), ['__proto__']);
  assert.equal({}.polluted, undefined);
});

test('strings with escapes and surrogate pairs', () => {
  assert.equal(parse('"a\\"b\\u00e9\\ud83d\\ude00"'), 'a"bé😀');
});

test('Go floats: float32 ties round half to even, as Go and the reference write them', () => {
  assert.equal(goFloat(-6009.78125, 32, 'f'), '-6009.7812');
  assert.equal(goFloat(7151.15625, 32, 'f'), '7151.1562');
  assert.equal(goFloat(Math.fround(0.1), 32, 'f'), '0.1');
  assert.equal(goFloat(Math.fround(0.1), 64, 'f'), '0.10000000149011612');
  assert.equal(goFloat(1e21, 64, 'json'), '1e+21');
  assert.equal(goFloat(1e-7, 64, 'json'), '1e-7');
  assert.equal(goFloat(-0, 64, 'f'), '-0');
});

test('Go JSON: HTML characters and U+2028 escaped, Map order kept', () => {
  assert.equal(goMarshal(new Map([['b', '<&>\u2028'], ['a', 1n]])), '{"b":"\\u003c\\u0026\\u003e\\u2028","a":1}');
});

test('TiDB JSON text: keys by UTF-8 bytes, MySQL spacing', () => {
  assert.equal(tidbJsonText(parse('{"b": [1, 2.5], "a": null, "\uff5e": 1, "\ud83d\ude00": 2}')),
    '{"a": null, "b": [1, 2.5], "～": 1, "😀": 2}');
});

test('TiDB decimal text: exactly scale digits, never -0', () => {
  assert.equal(decimalText('-0.00', 2), '0.00');
  assert.equal(decimalText('12.5', 2), '12.50');
  assert.equal(decimalText('0.125', 2), '0.12');
  assert.equal(decimalText('0.135', 2), '0.14');
  assert.equal(decimalText('7', 0), '7');
});

test('BIGINT UNSIGNED: exact up to 2^64-1, and a value wrapped to int64 read as its uint64', () => {
  const u64 = { kind: 'BIGINT', unsigned: true };
  assert.equal(jsonValue(u64, 9223372036854775809n, {}), '9223372036854775809');
  assert.equal(jsonValue(u64, 18446744073709551615n, {}), '18446744073709551615');
  assert.equal(jsonValue(u64, -1n, {}), '18446744073709551615');
  assert.equal(jsonValue({ kind: 'BIGINT' }, -9223372036854775807n, {}), '-9223372036854775807');
});
