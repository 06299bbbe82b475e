// Helpers for the data the server sends: keys for states, the newest-version filter,
// topic shorthands and the default socket path.

import os from 'node:os';
import path from 'node:path';
import { DefaultSocket, ErrorCodes, ListParamsDropNull, TopicShorthandsText, newerVersion } from './protocol.js';

/**
 * `$XDG_RUNTIME_DIR/netmodel/netmodel.sock`, else `/tmp/netmodel-$UID/netmodel.sock`
 * (schema/openrpc.json, x-netmodel-protocol.defaultSocket).
 */
export function defaultSocketPath(env = process.env) {
  // A relative one is ignored, as the XDG Base Directory specification says.
  if (env[DefaultSocket.env]?.startsWith('/')) return path.join(env[DefaultSocket.env], DefaultSocket.underEnv);
  return DefaultSocket.fallback.replace('{uid}', String(os.userInfo().uid));
}

/**
 * A topic object from an object or from `netmodel watch`'s shorthand: "entity",
 * "entity:KIND", "entity:KIND/ID", "list:NAME" (a list with no params), "stats"
 * (the server's figures, as 'stats' events) or "mutations" (each intent's outcome, as
 * 'mutation' events).
 */
export function topic(spec) {
  if (spec && typeof spec === 'object') return spec;
  if (typeof spec !== 'string') throw new TypeError(`topic must be an object or a string, not ${typeof spec}`);
  const colon = spec.indexOf(':');
  const head = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? '' : spec.slice(colon + 1);
  if (spec === 'stats' || spec === 'mutations') return { type: spec };
  if (head === 'list' && rest) return { type: 'list', list: rest, params: {} };
  if (head !== 'entity') {
    throw new TypeError(`unknown topic ${JSON.stringify(spec)} (want ${TopicShorthandsText})`);
  }
  const t = { type: 'entity' };
  if (rest) {
    const slash = rest.indexOf('/');
    t.kind = slash < 0 ? rest : rest.slice(0, slash);
    if (slash >= 0) t.id = rest.slice(slash + 1);
  }
  return t;
}

/** `{type: 'entity', kind?, id?}`: one entity, every entity of a kind, or every entity. */
topic.entity = function entityTopic(kind, id) {
  if (id !== undefined && kind === undefined) throw new TypeError('an entity topic with an id needs a kind');
  const t = { type: 'entity' };
  if (kind !== undefined) t.kind = kind;
  if (id !== undefined) t.id = id;
  return t;
};

/** `{type: 'list', list, params}`: one list; its params are part of its identity. */
topic.list = function listTopic(list, params = {}) {
  if (typeof list !== 'string' || !list) throw new TypeError('a list topic needs a list name');
  return { type: 'list', list, params };
};

// By code point, as the server sorts (UTF-8 bytes): `sort()` alone compares UTF-16 units,
// which puts U+1F600 before U+FF61.
const byCodePoint = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

// JSON with sorted object keys, so {a,b} and {b,a} params name the same list.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort(byCodePoint).map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * A list's params as its key: their canonical form (schema/openrpc.json,
 * x-netmodel-protocol.listParams), the server's ListState `params` text: members whose
 * value is null (or undefined) dropped, as the server drops them; keys sorted; compact.
 */
export function paramsKey(params) {
  if (!params || typeof params !== 'object') return '{}';
  const kept = {};
  for (const [k, v] of Object.entries(params)) if (!(ListParamsDropNull && (v === null || v === undefined))) kept[k] = v;
  return canonical(kept);
}

const needsCredentials = {
  get() {
    return this.pending === true && this.error?.code === ErrorCodes.Unauthorized;
  },
  enumerable: false, // not sent back, not compared: the state stays the server's JSON
};

/**
 * Gives an EntityState its `needsCredentials`: the intent waits for credentials
 * (pending with -32003: the backend answered 401/403; it is sent again after
 * `configure({ authToken })`). Anything else is left alone. Returns `state`.
 */
export function withHelpers(state) {
  if (state && typeof state === 'object' && typeof state.kind === 'string' && 'pending' in state) {
    if (!Object.hasOwn(state, 'needsCredentials')) Object.defineProperty(state, 'needsCredentials', needsCredentials);
  }
  return state;
}

/**
 * Which object a state is about: entities by (kind, id), lists by (list, params).
 * Kinds cannot contain a NUL, so joining with one is unambiguous.
 */
export function stateKey(state) {
  if (state && typeof state.list === 'string') return `list\0${state.list}\0${paramsKey(state.params)}`;
  if (state && typeof state.kind === 'string' && typeof state.id === 'string') return `entity\0${state.kind}\0${state.id}`;
  return undefined;
}

/**
 * The newest state per entity or list. `accept(state)` keeps a state and returns true
 * unless one with the same or a higher `version` is already held — the protocol says
 * to drop older states, and an equal version is the same state seen twice (a reply
 * and a notification, say).
 */
export class StateStore {
  #latest = new Map();

  accept(state) {
    const key = stateKey(state);
    if (key === undefined) return false;
    const held = this.#latest.get(key);
    if (held !== undefined && !newerVersion(state.version, held.version)) return false;
    this.#latest.set(key, state);
    return true;
  }

  /** The held state for an EntityState/ListState-shaped key object, e.g. {kind, id}. */
  get(ref) {
    return this.#latest.get(stateKey(ref));
  }

  clear() {
    this.#latest.clear();
  }

  values() {
    return [...this.#latest.values()];
  }

  get size() {
    return this.#latest.size;
  }
}

/** Refused or rolled back (a ledger entry of `getMutations` or a 'mutation' event): what a user who asked for it should hear of. */
export function mutationFailed(entry) {
  return entry?.outcome === 'refused' || entry?.outcome === 'rolledBack';
}

/** "your follow of artist/kaws failed: <the error's message>". */
export function mutationMessage(entry) {
  const what = entry.intent ? 'follow' : 'unfollow';
  return `your ${what} of ${entry.kind}/${entry.id} failed: ${entry.error?.message ?? entry.outcome}`;
}
