// The compiled form of a grammar: a graph of nodes over UTF-8 bytes (cycles
// allowed: a recursive $ref is an "alt" node whose option is filled in later).
// The matcher (matcher.ts) walks it one byte at a time.
import type { Steps } from "./steps.js";

export interface LitNode {
  kind: "lit";
  bytes: Uint8Array;
  min: number;
}
export interface SeqNode {
  kind: "seq";
  items: GNode[];
  min: number;
}
export interface AltNode {
  kind: "alt";
  options: GNode[];
  min: number;
}
export interface RepNode {
  kind: "rep";
  item: GNode;
  sep: GNode | null;
  minCount: number;
  maxCount: number; // Infinity when unbounded
  min: number;
}
/** A JSON string, quotes included. */
export interface StrNode {
  kind: "str";
  min: number;
}
/** A JSON number (integer: no fraction, no exponent). */
export interface NumNode {
  kind: "num";
  integer: boolean;
  min: number;
}
/** An object's members after `{` and its closing `}`: declared properties in order, the optional ones skippable. */
export interface ObjNode {
  kind: "obj";
  /** first: the member as the object's first (`"key": value`); next: after another one (`, "key": value`). */
  props: { first: GNode; next: GNode; required: boolean }[];
  close: LitNode;
  min: number;
}
/** At most one optional space (after `:` and `,`). */
export interface WsNode {
  kind: "ws";
  min: number;
}
/** Free text until `trigger`; from there on the text matches `then`. */
export interface LazyNode {
  kind: "lazy";
  trigger: Uint8Array;
  then: GNode;
  min: number;
}

export type GNode = LitNode | SeqNode | AltNode | RepNode | StrNode | NumNode | ObjNode | WsNode | LazyNode;

const encoder = new TextEncoder();

export const lit = (text: string): LitNode => ({ kind: "lit", bytes: encoder.encode(text), min: 0 });
export const seq = (items: GNode[]): SeqNode => ({ kind: "seq", items, min: 0 });
export const alt = (options: GNode[]): AltNode => ({ kind: "alt", options, min: 0 });
export const rep = (item: GNode, sep: GNode | null, minCount: number, maxCount: number): RepNode => ({
  kind: "rep",
  item,
  sep,
  minCount,
  maxCount,
  min: 0,
});
export const str = (): StrNode => ({ kind: "str", min: 0 });
export const num = (integer: boolean): NumNode => ({ kind: "num", integer, min: 0 });
export const ws = (): WsNode => ({ kind: "ws", min: 0 });
export const lazy = (trigger: string, then: GNode): LazyNode => ({
  kind: "lazy",
  trigger: encoder.encode(trigger),
  then,
  min: 0,
});
export function obj(props: { key: string; value: GNode; required: boolean }[]): ObjNode {
  const space = ws();
  return {
    kind: "obj",
    props: props.map(({ key, value, required }) => {
      const member = [lit(JSON.stringify(key)), lit(":"), space, value];
      return { first: seq(member), next: seq([lit(","), space, ...member]), required };
    }),
    close: lit("}"),
    min: 0,
  };
}

/** Nodes computeMinLengths visits between two yields (well under a millisecond). */
const PIECE_NODES = 256;

/**
 * Fewest bytes each node can match (fixed point over the cyclic graph); Infinity where a node matches nothing finite.
 * Nodes are visited children first (depth-first post-order), so an acyclic grammar settles in one pass and
 * only the cycles $refs make take more: a schema of thousands of nested properties costs passes, not depth × passes.
 */
export function* computeMinLengths(root: GNode): Steps<void> {
  const nodes: GNode[] = [];
  const seen = new Set<GNode>([root]);
  const stack: { node: GNode; children: GNode[]; next: number }[] = [
    { node: root, children: children(root), next: 0 },
  ];
  root.min = Number.POSITIVE_INFINITY;
  for (let visits = 1; stack.length > 0; visits++) {
    if (visits % PIECE_NODES === 0) yield;
    const top = stack[stack.length - 1];
    if (top.next === top.children.length) {
      stack.pop();
      nodes.push(top.node);
      continue;
    }
    const child = top.children[top.next++];
    if (seen.has(child)) continue;
    seen.add(child);
    child.min = Number.POSITIVE_INFINITY;
    stack.push({ node: child, children: children(child), next: 0 });
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const [i, node] of nodes.entries()) {
      if (i % PIECE_NODES === PIECE_NODES - 1) yield;
      const min = minOf(node);
      if (min < node.min) {
        node.min = min;
        changed = true;
      }
    }
  }
}

function children(node: GNode): GNode[] {
  switch (node.kind) {
    case "seq":
      return node.items;
    case "alt":
      return node.options;
    case "rep":
      return node.sep ? [node.item, node.sep] : [node.item];
    case "obj":
      return [...node.props.flatMap((p) => [p.first, p.next]), node.close];
    case "lazy":
      return [node.then];
    default:
      return [];
  }
}

function minOf(node: GNode): number {
  switch (node.kind) {
    case "lit":
      return node.bytes.length;
    case "seq":
      return node.items.reduce((sum, item) => sum + item.min, 0);
    case "alt":
      return node.options.reduce((m, option) => Math.min(m, option.min), Number.POSITIVE_INFINITY);
    case "rep":
      return repRestMin(node, 0);
    case "str":
      return 2;
    case "num":
      return 1;
    case "obj":
      return objRestMin(node, 0, false);
    case "ws":
    case "lazy":
      return 0;
  }
}

/** Fewest bytes to finish a repeat that has `count` items so far. */
export function repRestMin(node: RepNode, count: number): number {
  const items = Math.max(0, node.minCount - count);
  if (items === 0) return 0;
  const seps = count === 0 ? items - 1 : items;
  return items * node.item.min + seps * (node.sep?.min ?? 0);
}

/** Fewest bytes to finish an object's members from property `k` on, the closing `}` included. */
export function objRestMin(node: ObjNode, k: number, any: boolean): number {
  let sum = 1;
  let first = !any;
  for (let j = k; j < node.props.length; j++) {
    const prop = node.props[j];
    if (!prop.required) continue;
    sum += first ? prop.first.min : prop.next.min;
    first = false;
  }
  return sum;
}

/** Per object node: the bytes of the required members from property k on, each written after a comma. */
const requiredRests = new WeakMap<ObjNode, { rest: Float64Array; nextRequired: Int32Array }>();

/**
 * objRestMin in constant time, once the grammar's minimum lengths are final
 * (the matcher's frames): an object of thousands of optional properties has
 * as many frames, and summing its properties for each would take seconds.
 */
export function settledObjRestMin(node: ObjNode, k: number, any: boolean): number {
  let table = requiredRests.get(node);
  if (!table) {
    const n = node.props.length;
    const rest = new Float64Array(n + 1);
    const nextRequired = new Int32Array(n + 1).fill(n);
    for (let j = n - 1; j >= 0; j--) {
      const prop = node.props[j];
      rest[j] = rest[j + 1] + (prop.required ? prop.next.min : 0);
      nextRequired[j] = prop.required ? j : nextRequired[j + 1];
    }
    table = { rest, nextRequired };
    requiredRests.set(node, table);
  }
  if (any) return 1 + table.rest[k];
  const first = table.nextRequired[k];
  if (first === node.props.length) return 1;
  return 1 + node.props[first].first.min + table.rest[first + 1];
}
