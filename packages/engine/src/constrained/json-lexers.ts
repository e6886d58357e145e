// The byte automata of JSON's scalar tokens, as the matcher (matcher.ts) steps
// them inside a frame: a string (escapes, \u digits, well-formed UTF-8) and a
// number (bounded, so that it always ends). A state is a small integer.

// ---------------------------------------------------------------- strings
// a: 0 before the opening quote, 1 inside, 2 after a backslash, 3..6 hex
// digits of \u still due (a - 2), 7..13 inside a multi-byte UTF-8 character.
const S_OPEN = 0;
export const S_IN = 1;
const S_ESC = 2;
const S_HEX1 = 3;
/** Multi-byte UTF-8: [continuation bytes still due, lowest next byte, highest next byte]. */
const UTF8_STATES: [number, number, number][] = [
  [1, 0x80, 0xbf], // 7
  [2, 0x80, 0xbf], // 8
  [2, 0xa0, 0xbf], // 9 after E0 (no overlong forms)
  [2, 0x80, 0x9f], // 10 after ED (no surrogates)
  [3, 0x80, 0xbf], // 11
  [3, 0x90, 0xbf], // 12 after F0
  [3, 0x80, 0x8f], // 13 after F4 (up to U+10FFFF)
];
const S_UTF8 = 7;
const ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));

function isHex(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
}

/** The string state after `byte` (-1: finished by the closing quote, -2: refused). */
export function stringStep(s: number, byte: number): number {
  if (s === S_IN) {
    if (byte === 0x22) return -1;
    if (byte === 0x5c) return S_ESC;
    if (byte < 0x20) return -2;
    if (byte < 0x80) return S_IN;
    if (byte >= 0xc2 && byte <= 0xdf) return S_UTF8;
    if (byte === 0xe0) return S_UTF8 + 2;
    if (byte === 0xed) return S_UTF8 + 3;
    if (byte >= 0xe1 && byte <= 0xef) return S_UTF8 + 1;
    if (byte === 0xf0) return S_UTF8 + 5;
    if (byte >= 0xf1 && byte <= 0xf3) return S_UTF8 + 4;
    if (byte === 0xf4) return S_UTF8 + 6;
    return -2;
  }
  if (s === S_OPEN) return byte === 0x22 ? S_IN : -2;
  if (s === S_ESC) return byte === 0x75 ? S_HEX1 + 3 : ESCAPES.has(byte) ? S_IN : -2;
  if (s < S_UTF8) return isHex(byte) ? (s === S_HEX1 ? S_IN : s - 1) : -2;
  const [due, lo, hi] = UTF8_STATES[s - S_UTF8];
  if (byte < lo || byte > hi) return -2;
  return due === 1 ? S_IN : S_UTF8 + (due === 2 ? 0 : 1);
}

export function stringMin(s: number): number {
  if (s === S_OPEN || s === S_ESC) return 2;
  if (s === S_IN) return 1;
  if (s < S_UTF8) return s - 1; // hex digits due, then the quote
  return UTF8_STATES[s - S_UTF8][0] + 1;
}

// ---------------------------------------------------------------- numbers
// -?(0|[1-9][0-9]{0,14})(\.[0-9]{1,16})?([eE][+-]?[0-9]{1,3})?, without fraction and exponent for integers:
// bounded so that a number always ends.
const N_START = 0;
const N_MINUS = 1;
const N_ZERO = 2;
const N_DOT = 3;
const N_EXP = 4;
const N_EXP_SIGN = 5;
const N_INT = 10; // + digits so far (1..16)
const N_FRAC = 30; // + digits (1..16)
const N_EXP_DIGITS = 50; // + digits (1..3)
const MAX_INT_DIGITS = 15;
const MAX_FRAC_DIGITS = 16;
const MAX_EXP_DIGITS = 3;

export function numberAccepting(s: number): boolean {
  return s === N_ZERO || s > N_INT;
}

/** The number state after `byte`, or -1. */
export function numberStep(s: number, byte: number, integer: boolean): number {
  const digit = byte >= 0x30 && byte <= 0x39;
  const fractionOrExponent = (b: number): number =>
    integer ? -1 : b === 0x2e ? N_DOT : b === 0x65 || b === 0x45 ? N_EXP : -1;
  if (s === N_START || s === N_MINUS) {
    if (byte === 0x2d && s === N_START) return N_MINUS;
    if (byte === 0x30) return N_ZERO;
    return digit ? N_INT + 1 : -1;
  }
  if (s === N_ZERO) return fractionOrExponent(byte);
  if (s > N_INT && s < N_FRAC) {
    if (digit) return s - N_INT < MAX_INT_DIGITS ? s + 1 : -1;
    return fractionOrExponent(byte);
  }
  if (s === N_DOT) return digit ? N_FRAC + 1 : -1;
  if (s > N_FRAC && s < N_EXP_DIGITS) {
    if (digit) return s - N_FRAC < MAX_FRAC_DIGITS ? s + 1 : -1;
    return byte === 0x65 || byte === 0x45 ? N_EXP : -1;
  }
  if (s === N_EXP) {
    if (byte === 0x2b || byte === 0x2d) return N_EXP_SIGN;
    return digit ? N_EXP_DIGITS + 1 : -1;
  }
  if (s === N_EXP_SIGN) return digit ? N_EXP_DIGITS + 1 : -1;
  if (s > N_EXP_DIGITS) return digit && s - N_EXP_DIGITS < MAX_EXP_DIGITS ? s + 1 : -1;
  return -1;
}

/** Whether any byte continues the number (a full integer part of an integer has none). */
export function numberCanGrow(s: number, integer: boolean): boolean {
  if (!numberAccepting(s)) return true;
  if (!integer && s < N_EXP_DIGITS) return true;
  if (s > N_INT && s < N_FRAC) return s - N_INT < MAX_INT_DIGITS;
  return s > N_EXP_DIGITS && s - N_EXP_DIGITS < MAX_EXP_DIGITS;
}
