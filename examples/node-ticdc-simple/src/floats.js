'use strict';
// Go's float formatting (strconv.FormatFloat and encoding/json), from shortest digits.

// The exact decimal value of a finite double `a` > 0: { digits, exp } meaning digits x 10^exp.
function exactDecimal(a) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, a);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let e2 = biased - 1075;
  if (biased === 0) e2 = -1074; // subnormal
  else mant |= 1n << 52n;
  if (e2 >= 0) return { digits: (mant << BigInt(e2)).toString(), exp: 0 };
  return { digits: (mant * 5n ** BigInt(-e2)).toString(), exp: e2 }; // m / 2^k = m * 5^k / 10^k
}

// `a` rounded to p significant digits, half to even (as Python's '%.{p}g' rounds), in
// toExponential's form "d.ddde+N".
function toPrecisionHalfEven(a, p) {
  const { digits, exp } = exactDecimal(a);
  let head = BigInt(digits.slice(0, p).padEnd(p, '0'));
  const rest = digits.slice(p);
  let e10 = exp + digits.length - 1;
  if (rest && /[1-9]/.test(rest)) {
    const half = '5'.padEnd(rest.length, '0');
    if (rest > half || (rest === half && head % 2n === 1n)) head += 1n;
  }
  let hs = head.toString();
  if (hs.length > p) { // 9.99 -> 10.0
    hs = hs.slice(0, p);
    e10 += 1;
  }
  return hs[0] + (p > 1 ? '.' + hs.slice(1) : '') + 'e' + (e10 < 0 ? '-' : '+') + Math.abs(e10);
}

// Shortest decimal digits that read back as `x` (a double, or a float32 when bits is 32):
// { digits: "12345", exp } meaning d.dddd x 10^exp; trailing zeros removed. For float32 the
// first precision that round-trips wins, rounded half to even: Number.toExponential rounds
// ties up, and a float32 such as 6009.78125 is a tie at 8 digits (Go and the reference
// write 6009.7812).
function shortest(x, bits) {
  const a = Math.abs(x);
  if (bits === 32) {
    for (let p = 1; p <= 9; p++) {
      const s = toPrecisionHalfEven(a, p);
      if (Math.fround(Number(s)) === a) return split(s);
    }
  }
  return split(a.toExponential()); // no argument: as many digits as needed to be unique
}

function split(s) {
  const [m, e] = s.split('e');
  let digits = m.replace('.', '').replace(/0+$/, '');
  if (digits === '') digits = '0';
  return { digits, exp: parseInt(e, 10) };
}

function positional(digits, exp) {
  if (exp >= 0) {
    const whole = digits.length > exp + 1 ? digits.slice(0, exp + 1) : digits.padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    return frac ? whole + '.' + frac : whole;
  }
  return '0.' + '0'.repeat(-exp - 1) + digits;
}

// fmt 'f': FormatFloat(x, 'f', -1, bits) (never an exponent). fmt 'json': encoding/json
// (positional for 1e-6 <= |x| < 1e21, else d.ddde±XX with `e-07` cleaned up to `e-7`).
function goFloat(x, bits, fmt) {
  if (!Number.isFinite(x)) throw new RangeError(`${x} has no JSON form`);
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const sign = x < 0 ? '-' : '';
  const a = Math.abs(x);
  const { digits, exp } = shortest(x, bits);
  if (fmt === 'f' || (a >= 1e-6 && a < 1e21)) return sign + positional(digits, exp);
  const mant = digits[0] + (digits.length > 1 ? '.' + digits.slice(1) : '');
  let es = 'e' + (exp < 0 ? '-' : '+') + String(Math.abs(exp)).padStart(2, '0');
  if (es.startsWith('e-0')) es = 'e-' + es.slice(3);
  return sign + mant + es;
}

module.exports = { goFloat, shortest };
