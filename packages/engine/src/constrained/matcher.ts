// A byte-level matcher for the grammar graph (nodes.ts): a pushdown automaton
// run on every alternative at once. A state is a set of stacks; each stack is
// an immutable linked list of frames (where in which node), whose top is a
// frame that consumes bytes (a literal, a string, a number, a space, free
// text), or the empty stack: the text so far is complete. Stacks are shared
// between states, so a byte inside a JSON string returns the very same stack.

import { numberAccepting, numberCanGrow, numberStep, S_IN, stringMin, stringStep } from "./json-lexers.js";
import {
  type GNode,
  type LazyNode,
  type LitNode,
  type NumNode,
  type ObjNode,
  type RepNode,
  repRestMin,
  type StrNode,
  settledObjRestMin,
} from "./nodes.js";
import type { Steps } from "./steps.js";

let nextFrameId = 1;

/** Where in a node the text is; `a` and `b` are the node's own counters. Frames are interned per (node, a, b). */
export interface Frame {
  readonly id: number;
  readonly node: GNode;
  readonly a: number;
  readonly b: number;
  /** Fewest bytes that finish this frame. */
  readonly min: number;
}

/** One stack: top frame, then the frames below it; null is the empty stack. */
export interface Cell {
  readonly frame: Frame;
  readonly next: Cell | null;
  /** Fewest bytes that empty the whole stack. */
  readonly min: number;
  key: string | null;
}

/** A set of stacks, deduplicated; null stands for the empty stack (complete text). */
export type State = (Cell | null)[];

const frameTables = new WeakMap<GNode, Frame[]>();

function frame(node: GNode, a: number, b = 0): Frame {
  let table = frameTables.get(node);
  if (!table) {
    table = [];
    frameTables.set(node, table);
  }
  const slot = a * 2 + b;
  let f = table[slot];
  if (!f) {
    f = { id: nextFrameId++, node, a, b, min: frameMin(node, a, b) };
    table[slot] = f;
  }
  return f;
}

function push(f: Frame, next: Cell | null): Cell {
  return { frame: f, next, min: f.min + (next?.min ?? 0), key: null };
}

function cellKey(cell: Cell | null): string {
  if (cell === null) return "";
  if (cell.key === null) cell.key = `${cell.frame.id},${cellKey(cell.next)}`;
  return cell.key;
}

// ---------------------------------------------------------------- lazy triggers

const kmpTables = new WeakMap<LazyNode, Int32Array>();

/** KMP automaton over the trigger: [matched * 256 + byte] → matched after the byte. */
function kmp(node: LazyNode): Int32Array {
  let table = kmpTables.get(node);
  if (table) return table;
  const t = node.trigger;
  table = new Int32Array(t.length * 256);
  const fail = new Int32Array(t.length + 1);
  for (let i = 1, k = 0; i < t.length; i++) {
    while (k > 0 && t[i] !== t[k]) k = fail[k];
    if (t[i] === t[k]) k++;
    fail[i + 1] = k;
  }
  for (let m = 0; m < t.length; m++) {
    for (let b = 0; b < 256; b++) {
      let k = m;
      while (k > 0 && t[k] !== b) k = fail[k];
      table[m * 256 + b] = t[k] === b ? k + 1 : 0;
    }
  }
  kmpTables.set(node, table);
  return table;
}

// ---------------------------------------------------------------- frames

function frameMin(node: GNode, a: number, b: number): number {
  switch (node.kind) {
    case "lit":
      return node.bytes.length - a;
    case "seq": {
      let sum = 0;
      for (let i = a; i < node.items.length; i++) sum += node.items[i].min;
      return sum;
    }
    case "alt":
      return node.min;
    case "rep":
      return repRestMin(node, a);
    case "obj":
      return settledObjRestMin(node, a, b === 1);
    case "str":
      return stringMin(a);
    case "num":
      return numberAccepting(a) ? 0 : 1;
    case "ws":
    case "lazy":
      return 0;
  }
}

/** Adds to `out` every stack reachable from `cell` without consuming a byte whose top consumes bytes (or the empty stack). */
function expand(cell: Cell | null, out: State): void {
  if (cell === null) {
    out.push(null);
    return;
  }
  const { frame: f, next } = cell;
  const node = f.node;
  switch (node.kind) {
    case "lit":
      if (f.a === node.bytes.length) expand(next, out);
      else out.push(cell);
      return;
    case "seq": {
      if (f.a === node.items.length) {
        expand(next, out);
        return;
      }
      const rest = f.a + 1 === node.items.length ? next : push(frame(node, f.a + 1), next);
      expand(push(frame(node.items[f.a], 0), rest), out);
      return;
    }
    case "alt":
      for (const option of node.options) expand(push(frame(option, 0), next), out);
      return;
    case "rep":
      expandRepeat(node, f.a, next, out);
      return;
    case "obj":
      expandObject(node, f.a, f.b === 1, next, out);
      return;
    case "num":
      if (numberCanGrow(f.a, node.integer)) out.push(cell);
      if (numberAccepting(f.a)) expand(next, out);
      return;
    case "str":
      out.push(cell);
      return;
    case "ws":
    case "lazy":
      out.push(cell);
      expand(next, out); // both may end here
      return;
  }
}

function expandRepeat(node: RepNode, count: number, next: Cell | null, out: State): void {
  if (count >= node.minCount) expand(next, out);
  if (count >= node.maxCount) return;
  // counts past minCount (and past the first item, which has no separator) are alike without a max: one frame (and one mask) for them
  const after =
    node.maxCount === Number.POSITIVE_INFINITY ? Math.min(count + 1, Math.max(node.minCount, 1)) : count + 1;
  let stack = push(frame(node.item, 0), push(frame(node, after), next));
  if (count > 0 && node.sep) stack = push(frame(node.sep, 0), stack);
  expand(stack, out);
}

function expandObject(node: ObjNode, k: number, any: boolean, next: Cell | null, out: State): void {
  for (let j = k; j < node.props.length; j++) {
    const prop = node.props[j];
    expand(push(frame(any ? prop.next : prop.first, 0), push(frame(node, j + 1, 1), next)), out);
    if (prop.required) return;
  }
  expand(push(frame(node.close, 0), next), out);
}

/** Feeds one byte to a stack whose top consumes bytes; adds the resulting stacks to `out`. */
function step(cell: Cell, byte: number, out: State): void {
  const { frame: f, next } = cell;
  const node = f.node;
  switch (node.kind) {
    case "lit": {
      if ((node as LitNode).bytes[f.a] !== byte) return;
      if (f.a + 1 === node.bytes.length) expand(next, out);
      else out.push(push(frame(node, f.a + 1), next));
      return;
    }
    case "str": {
      const s = stringStep(f.a, byte);
      if (s === -1) expand(next, out);
      else if (s === f.a) out.push(cell);
      else if (s >= 0) out.push(push(frame(node as StrNode, s), next));
      return;
    }
    case "num": {
      const s = numberStep(f.a, byte, (node as NumNode).integer);
      if (s >= 0) expand(push(frame(node, s), next), out);
      return;
    }
    case "ws":
      if (byte === 0x20) expand(next, out);
      return;
    case "lazy": {
      const matched = kmp(node)[f.a * 256 + byte];
      if (matched < node.trigger.length) {
        expand(matched === f.a ? cell : push(frame(node, matched), next), out); // free text may end anywhere
        return;
      }
      // the trigger is complete: from its first byte on, the text is `then`'s
      let state: State = [];
      expand(push(frame(node.then, 0), next), state);
      for (const b of node.trigger) state = advance(state, b);
      out.push(...state);
      return;
    }
    default:
      throw new Error(`matcher: a ${node.kind} frame cannot consume bytes`);
  }
}

/** The state of a grammar before any text. */
export function initialState(root: GNode): State {
  const out: State = [];
  expand(push(frame(root, 0), null), out);
  return dedupe(out);
}

/** The state after one more byte ([] when the byte is not allowed). */
export function advance(state: State, byte: number): State {
  const out: State = [];
  for (const cell of state) if (cell !== null) step(cell, byte, out);
  return out.length > 1 ? dedupe(out) : out;
}

/** Stacks advanceSteps steps between two yields (a few hundred microseconds while their frames are new). */
const PIECE_STACKS = 128;

/** advance a piece at a time, for states of thousands of stacks (a schema of as many optional properties). */
export function* advanceSteps(state: State, byte: number): Steps<State> {
  const out: State = [];
  for (let i = 0; i < state.length; i++) {
    if (i % PIECE_STACKS === PIECE_STACKS - 1) yield;
    const cell = state[i];
    if (cell !== null) step(cell, byte, out);
  }
  return out.length > 1 ? dedupe(out) : out;
}

/** The state after a token's bytes ([] when not allowed). */
export function advanceBytes(state: State, bytes: Uint8Array): State {
  let s = state;
  for (let i = 0; i < bytes.length && s.length > 0; i++) s = advance(s, bytes[i]);
  return s;
}

/** Whether the text so far is complete. */
export function canEnd(state: State): boolean {
  return state.includes(null);
}

/** Whether the text is complete and nothing may follow it. */
export function isFinal(state: State): boolean {
  return state.length > 0 && state.every((cell) => cell === null);
}

/** Fewest bytes that complete the text (Infinity for the dead state). */
export function minBytes(state: State): number {
  let min = Number.POSITIVE_INFINITY;
  for (const cell of state) min = Math.min(min, cell?.min ?? 0);
  return min;
}

/** Whether the state is inside one JSON string's content, where plain bytes change nothing. */
export function inPlainString(state: State): boolean {
  if (state.length !== 1) return false;
  const cell = state[0];
  return cell !== null && cell.frame.node.kind === "str" && cell.frame.a === S_IN;
}

/** A key equal for equal states (the same stacks in the same order). */
export function stateKey(state: State): string {
  return state.length === 1 ? cellKey(state[0]) : state.map(cellKey).join("|");
}

function dedupe(state: State): State {
  const seen = new Set<string>();
  const out: State = [];
  for (const cell of state) {
    const key = cell === null ? "" : cellKey(cell);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(cell);
    }
  }
  return out;
}
