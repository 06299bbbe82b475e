// Types of netmodel-client. What the server answers is typed by lib/results.d.ts and the
// protocol table by lib/protocol.d.ts, both generated from schema/openrpc.json by
// scripts/gen-protocol; the client's own API is written here.

import { EventEmitter } from 'node:events';
import { ChildProcess, StdioNull, StdioPipe } from 'node:child_process';
import { Stream } from 'node:stream';
import { ClientErrorCodes, ErrorCodes } from './lib/protocol.js';

// -- data (components.schemas) -------------------------------------------------------

// What the server answers is typed by lib/results.d.ts, generated from
// schema/openrpc.json by scripts/gen-protocol: every member it sends, none it does not.
// These are those types, with what the client adds (needsCredentials, ListParams).
import type * as Results from './lib/results.js';
export type { Results };
/** What each method answers, by method name: `MethodResults['stats']` is `Stats`. */
export type MethodResults = Results.MethodResults;

/** `^[a-z][a-z0-9_-]{0,63}$`: artist, profile, gene, … */
export type EntityKind = Results.EntityKind;
/** A non-empty string of at most 256 bytes of UTF-8. */
export type EntityID = Results.EntityID;
export type RequestID = Results.RequestID;
export type EntityRef = Results.EntityRef;

/** The last failure kept in a state: `code` is an application error (-32001…-32004). */
export type StateError = Results.EntityStateError;

/** An entity's follow state: full, never a delta. Keep the highest `version` per entity. */
export interface EntityState extends Results.EntityState {
  /**
   * The intent waits for credentials: `pending` with the -32003 error (the backend
   * answered 401/403); the server sends it again after `configure({ authToken })`.
   * Computed by the client (not enumerable, not in the JSON).
   */
  readonly needsCredentials?: boolean;
}

/** A list's name as the backend configuration defines it (local backend: `following/<kind>`). */
export type ListName = Results.ListName;
/** Values for a list's `{param}` placeholders; part of the list's identity (compared by value). */
export type ListParams = Record<string, string | number | boolean | null>;

/** Names one list: by `list` and `params` (absent params are `{}`). */
export interface ListRef {
  list: ListName;
  params?: ListParams;
}

/**
 * An item of a list, joined with the entity store: `following` is the entity's shown
 * state now (it moves with every follow, in every list that holds the entity).
 */
export type ListItem = Results.ListItem;

/** A run of items with one section title: `items[start ..< start + count]`. */
export type ListSection = Results.ListSection;

/** `idle` (never asked for), `loading` (a page or refresh on its way; items kept), `loaded`, `failure`. */
export type ListStatus = Results.ListState['state'];

/** A stateful list: full, never a delta. Keep the highest `version` per list + params. */
export interface ListState extends Results.ListState {
  /** The params the list was asked with (keys sorted). */
  params: ListParams;
}

/** What `stateChanged` notifications and subscribe snapshots carry: `'list' in state` tells them apart. */
export type AnyState = EntityState | ListState;

/** Which page `fetchList` loads: the first (default), the next one, or the first again (pull to refresh). */
export type ListPage = 'first' | 'next' | 'refresh';

/** `{type: "entity"}`, `{type: "entity", kind}` or `{type: "entity", kind, id}`. */
export type EntityTopic = Results.EntityTopic;

/** One list with its params: an unknown list is -32004 (UnknownKindOrList). */
export interface ListTopic extends Results.ListTopic {
  params?: ListParams;
}

/** The server's figures (`Stats`), as 'stats' events of the subscription and the client: one right after subscribing, then at most one a second while they change. */
export type StatsTopic = Results.StatsTopic;

export type Topic = EntityTopic | ListTopic | StatsTopic;
/** A Topic, or a shorthand: "entity", "entity:KIND", "entity:KIND/ID", "list:NAME", "stats". */
export type TopicSpec = Topic | string;
/** Topics whose notifications are EntityStates only. */
export type EntityTopicSpec = EntityTopic | 'entity' | `entity:${string}`;
/** Topics whose notifications are ListStates only. */
export type ListTopicSpec = ListTopic | `list:${string}`;

export interface SubscribeResult extends Results.SubscribeResult {
  snapshot: AnyState[];
}

export interface StateChangedParams extends Results.StateChangedParams {
  state: AnyState;
}

export type InitializeResult = Results.InitializeResult;

/** The server's figures (`stats`, the stats topic): every member the server sends, typed. */
export type Stats = Results.Stats;
/** One open connection. */
export type ConnectionStats = Results.StatsConnectionsListItem;
/** Lists held and their traffic. */
export type ListStats = Results.StatsLists;
/** setInterfaceState's work. */
export type PreloadStats = Results.StatsPreload;
/** The REST backend's HTTP traffic (`stats.backend.http`; absent on the local backend). */
export type HttpStats = Results.StatsBackendHttp;

export interface ConfigureParams {
  environment?: string;
  /** null forgets the token. */
  authToken?: string | null;
  /** Named values of the rest configuration (`{ me: '109' }` fills `{me}`); null forgets one. */
  values?: Record<string, string | null>;
}

/** Texture's interface states: near the viewport, about to show, on screen — or none of them. */
export type InterfaceState = 'none' | 'preload' | 'display' | 'visible';

// -- errors (components.errors) --------------------------------------------------------

// The codes are the shared protocol table, generated from schema/openrpc.json by
// scripts/gen-protocol (lib/protocol.d.ts): ErrorCodes (the server's) and ClientErrorCodes.
export { ClientErrorCodes, ErrorCodes };

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The `data` an error carries: `path` for -32602, `status`/`retryable`/`state` for application errors. */
export interface ErrorData {
  path?: string;
  limit?: number;
  status?: number;
  retryable?: boolean;
  /** -32001: how long the backend said to wait (a rate limit's reset), in milliseconds. */
  retryAfterMs?: number;
  state?: EntityState;
  kind?: string;
  list?: string;
  [extra: string]: unknown;
}

/** An error reply: `code`, `message` (the server's) and `data` as sent. */
export declare class RPCError extends Error {
  constructor(code: number, message: string, data?: unknown);
  readonly code: number;
  readonly data: ErrorData | undefined;
  /** For a failed `await: true` mutation: the rolled-back state in `data.state`. */
  readonly state: EntityState | undefined;
  readonly retryable: boolean | undefined;
  /** The most specific subclass for a JSON-RPC error object. */
  static from(error: { code: number; message: string; data?: unknown }): RPCError;
}
export declare class ParseError extends RPCError {}
export declare class InvalidRequest extends RPCError {}
export declare class MethodNotFound extends RPCError {}
export declare class InvalidParams extends RPCError {}
export declare class InternalError extends RPCError {}
export declare class RequestCancelled extends RPCError {}
export declare class BackendUnavailable extends RPCError {}
export declare class BackendRejected extends RPCError {}
export declare class Unauthorized extends RPCError {}
export declare class UnknownKindOrList extends RPCError {}
export declare class ServerShuttingDown extends RPCError {}

/**
 * The connection is gone. `code`: 'NETMODEL_CONNECTION_LOST' (sent; may or may not have
 * taken effect), 'NETMODEL_NOT_CONNECTED' (reconnecting; not sent), 'NETMODEL_CLOSED'.
 */
export declare class ConnectionLostError extends Error {
  readonly code: 'NETMODEL_CONNECTION_LOST' | 'NETMODEL_NOT_CONNECTED' | 'NETMODEL_CLOSED';
  /** The number every netmodel client gives this error: ConnectionLost if sent, else NotConnected. */
  readonly rpcCode: (typeof ClientErrorCodes)['ConnectionLost'] | (typeof ClientErrorCodes)['NotConnected'];
}

/** A request's timeout elapsed (the server was sent `$/cancelRequest`). */
export declare class TimeoutError extends Error {
  readonly code: 'NETMODEL_TIMEOUT';
  readonly rpcCode: (typeof ClientErrorCodes)['Timeout'];
}

/**
 * connect() refused the socket before sending anything: its folder is a symbolic link,
 * belongs to another user, or others can write it. The message says what to fix.
 */
export declare class UntrustedSocketError extends Error {
  readonly code: 'NETMODEL_UNTRUSTED_SOCKET';
}

// -- client ---------------------------------------------------------------------------

export interface RequestOptions {
  /** Milliseconds; overrides the client's default; null waits forever. */
  timeout?: number | null;
  signal?: AbortSignal;
}

export interface MutationOptions extends RequestOptions {
  /** Answer once the backend settled (rejecting with the application error on failure). */
  await?: boolean;
}

export interface ReadOptions extends RequestOptions {
  refresh?: boolean;
  maxAgeMs?: number;
}

export interface GetEntityOptions extends RequestOptions {
  /** Load the details and the follow state again even when held. */
  refresh?: boolean;
}

/** An intent of the server's ledger and what became of it. */
export type MutationEntry = Results.MutationEntry;

/** The params of `getMutations`, all optional. */
export interface GetMutationsParams {
  /** Only entries with a seq above this. */
  since?: number;
  /** At most this many, 1…1000 (server default 100). */
  limit?: number;
  kind?: EntityKind;
  /** With `kind`: only this entity's entries. */
  id?: EntityID;
}

/** Refused or rolled back: what a user who asked for it should hear of. */
export declare function mutationFailed(entry: MutationEntry): boolean;
/** "your follow of artist/kaws failed: <the error's message>". */
export declare function mutationMessage(entry: MutationEntry): string;

/** The params of `inspect`, all optional. */
export interface SyncParams {
  /** How long the server waits for intents to settle, 0…600000 ms (default 10000). */
  timeoutMs?: number;
}

export interface InspectParams {
  /** Default: all. */
  sections?: Array<'connections' | 'entities' | 'outbox' | 'lists' | 'holds'>;
  /** Only entities and intents of this kind (and, with it, this id). */
  kind?: EntityKind;
  id?: EntityID;
  /** Items per section, 1…1000 (server default 50). */
  limit?: number;
}

export interface FetchListOptions extends RequestOptions {
  params?: ListParams;
  /** Default 'first'. */
  page?: ListPage;
}

export interface SpawnOptions {
  /** Default: $NETMODEL_BIN, else `netmodel` on PATH. */
  bin?: string;
  /** Arguments after `serve`: `--state-dir DIR`, `--simulate …`, `--socket=PATH`, … */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Where the server's logs go. Default 'inherit' (through a pipe: its last lines, with its
   * exit code, are in the ConnectionLostError when it exits, e.g. "never started (exit code 1): …").
   */
  stderr?: StdioPipe | StdioNull | 'inherit' | Stream | number;
  /** Default timeout (ms) of every request. */
  timeout?: number;
}

export interface ReconnectOptions {
  initialDelayMs?: number;
  maxDelayMs?: number;
  maxAttempts?: number;
}

/** connectOrSpawn(): connect's options, and spawn's for a server started when none listens. */
export interface ConnectOrSpawnOptions extends ConnectOptions {
  bin?: string;
  /** Serve options of a spawned server (`--socket=PATH` is added); unused when one is running. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stderr?: SpawnOptions['stderr'];
}

export interface ConnectOptions {
  /** Default: defaultSocketPath(). */
  path?: string;
  timeout?: number;
  /** Default true. */
  reconnect?: boolean | ReconnectOptions;
}

/**
 * Listener types per event, looked up (rather than written `(...args: Events[E]) => void`,
 * under which TypeScript types a listener of two or more parameters as every event's).
 */
export type Listeners<Events extends { [K in keyof Events]: unknown[] }> = {
  [K in keyof Events]: (...args: Events[K]) => void;
};

export interface NetmodelClientEvents {
  stateChanged: [state: AnyState, subscription: Subscription, seq: number];
  /** A `statsChanged` push to a subscription with the stats topic. */
  statsChanged: [stats: Stats, subscription: Subscription, seq: number];
  /** A `mutationOutcome` push to a subscription with the mutations topic. */
  mutationOutcome: [entry: MutationEntry, subscription: Subscription, seq: number];
  disconnect: [error: Error | null];
  reconnect: [info: { attempt: number }];
  close: [];
  notification: [method: string, params: unknown];
  /** A line that is not JSON, an id-less error reply, or a `configure` refused on a reconnect. */
  protocolError: [error: Error];
  /** A listener (of this client or of a subscription) threw or rejected; without a listener here it is printed. */
  listenerError: [error: unknown, event: string];
}

export declare class NetmodelClient extends EventEmitter {
  static spawn(options?: SpawnOptions): Promise<NetmodelClient>;
  static connect(options?: ConnectOptions): Promise<NetmodelClient>;
  /**
   * The user's server: the one listening on the socket, else one spawned here that
   * listens there too (other clients then share it). `spawned` says which.
   */
  static connectOrSpawn(options?: ConnectOrSpawnOptions): Promise<NetmodelClient>;

  /** Whether this client started its server, rather than connected to a running one. */
  readonly spawned: boolean;

  readonly process: ChildProcess | null;
  readonly socketPath: string | null;
  readonly pid: number | undefined;
  readonly connected: boolean;
  timeout: number | undefined;
  /** The server process's `instance` id, from the last initialize/subscribe/stats answer. */
  readonly instance: string | undefined;

  call(method: 'getEntity', params: EntityRef & { refresh?: boolean }, options?: RequestOptions): Promise<EntityState>;
  call(
    method: 'fetchList',
    params: { list: ListName; params?: ListParams; page?: ListPage },
    options?: RequestOptions,
  ): Promise<ListState>;
  call(
    method: 'setInterfaceState',
    params: { items: EntityRef[]; state: InterfaceState },
    options?: RequestOptions,
  ): Promise<MethodResults['setInterfaceState']>;
  call<T = unknown>(method: string, params?: unknown, options?: RequestOptions): Promise<T>;
  notify(method: string, params?: unknown): void;

  initialize(params?: Record<string, unknown>, options?: RequestOptions): Promise<InitializeResult>;
  follow(kind: EntityKind, id: EntityID, options?: MutationOptions): Promise<EntityState>;
  unfollow(kind: EntityKind, id: EntityID, options?: MutationOptions): Promise<EntityState>;
  setFollowState(kind: EntityKind, id: EntityID, following: boolean, options?: MutationOptions): Promise<EntityState>;
  getFollowState(kind: EntityKind, id: EntityID, options?: ReadOptions): Promise<EntityState>;
  /** The entity's state with `attributes`, loaded where the kind has a detail endpoint. */
  getEntity(kind: EntityKind, id: EntityID, options?: GetEntityOptions): Promise<EntityState>;
  /** A page of a list; a failed page resolves with `state: 'failure'`, an unknown list rejects (-32004). */
  fetchList(list: ListName, options?: FetchListOptions): Promise<ListState>;
  /** Which items are near or on screen, for preload; resolves with how many were accepted. */
  setInterfaceState(items: Iterable<EntityRef>, state: InterfaceState, options?: RequestOptions): Promise<number>;
  stats(options?: RequestOptions): Promise<Stats>;
  /** The items behind the counters: connections, unsettled entities, the outbox, lists, HTTP holds; each section bounded by `limit` (default 50). */
  inspect(params?: InspectParams, options?: RequestOptions): Promise<MethodResults['inspect']>;
  /** Resolves once every intent accepted before it has settled, or waits on what `timeoutMs` does not cover. */
  sync(params?: SyncParams, options?: RequestOptions): Promise<MethodResults['sync']>;
  /** The ledger of intents and their outcomes after `since`, oldest first. */
  getMutations(params?: GetMutationsParams, options?: RequestOptions): Promise<MethodResults['getMutations']>;
  /** Every refused or rolled-back intent after `since` (default 0), and the seq to pass next time. */
  failedMutations(since?: number, options?: RequestOptions): Promise<{ failed: MutationEntry[]; next: number }>;
  configure(params?: ConfigureParams, options?: RequestOptions): Promise<MethodResults['configure']>;
  /** Entity topics only: a Subscription of EntityStates (list topics only: of ListStates). */
  subscribe(topics: EntityTopicSpec | EntityTopicSpec[], options?: RequestOptions): Promise<Subscription<EntityState>>;
  subscribe(topics: ListTopicSpec | ListTopicSpec[], options?: RequestOptions): Promise<Subscription<ListState>>;
  subscribe(topics: TopicSpec | TopicSpec[], options?: RequestOptions): Promise<Subscription>;
  unsubscribe(subscription: Subscription | string, options?: RequestOptions): Promise<void>;
  /**
   * Ends the client (a spawned server: `shutdown`, then signals). Not needed for the
   * process to exit: the client holds the event loop open only while a request, an
   * iterator or a 'change' listener waits on it.
   */
  close(options?: { timeout?: number }): Promise<void>;

  on<E extends keyof NetmodelClientEvents>(event: E, listener: Listeners<NetmodelClientEvents>[E]): this;
  once<E extends keyof NetmodelClientEvents>(event: E, listener: Listeners<NetmodelClientEvents>[E]): this;
  off<E extends keyof NetmodelClientEvents>(event: E, listener: Listeners<NetmodelClientEvents>[E]): this;
}

export interface SubscriptionEvents<S extends AnyState = AnyState> {
  change: [state: S, seq: number];
  /** A `statsChanged` push (a subscription with the stats topic): one right after subscribing, then at most one a second while the figures change. */
  stats: [stats: Stats, seq: number];
  /** A `mutationOutcome` push (a subscription with the mutations topic): one per outcome. */
  mutation: [entry: MutationEntry, seq: number];
  end: [error: Error | null];
}

/** `S`: what its topics deliver — EntityState, ListState, or both (AnyState). */
export declare class Subscription<S extends AnyState = AnyState> extends EventEmitter implements AsyncIterable<S> {
  /** The server's name for it; a new one after each reconnect. */
  readonly id: string;
  readonly topics: Topic[];
  /** The states `subscribe` answered with; also the first 'change' events and iterated states. */
  readonly snapshot: S[];
  readonly lastSeq: number;
  /** The server process's `instance` id when last subscribed. */
  readonly instance: string | undefined;
  /** The version up to which this view has every change; a reconnect resumes from it (`since`). */
  readonly resumeVersion: number | undefined;
  readonly closed: boolean;
  /** The newest figures of a stats topic (null before the first). */
  readonly stats: Stats | null;
  /** The newest state held per entity or list. */
  readonly states: S[];
  state(kind: EntityKind, id: EntityID): EntityState | undefined;
  list(list: ListName, params?: ListParams): ListState | undefined;
  unsubscribe(): Promise<void>;
  /**
   * unsubscribe(), resolving also when there is no connection to tell. The same is
   * `[Symbol.asyncDispose]()` (not typed here, for TypeScript < 5.2): `await using sub = …`.
   */
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterator<S>;

  on<E extends keyof SubscriptionEvents<S>>(event: E, listener: Listeners<SubscriptionEvents<S>>[E]): this;
  once<E extends keyof SubscriptionEvents<S>>(event: E, listener: Listeners<SubscriptionEvents<S>>[E]): this;
  off<E extends keyof SubscriptionEvents<S>>(event: E, listener: Listeners<SubscriptionEvents<S>>[E]): this;
}

// -- helpers --------------------------------------------------------------------------

export declare function defaultSocketPath(env?: NodeJS.ProcessEnv): string;
export declare function topic(spec: TopicSpec): Topic;
export declare namespace topic {
  /** `{type: 'entity', kind?, id?}`: one entity, every entity of a kind, or every entity. */
  function entity(kind?: EntityKind, id?: EntityID): EntityTopic;
  /** `{type: 'list', list, params}` (params default `{}`). */
  function list(list: ListName, params?: ListParams): ListTopic & { params: ListParams };
}
/** Which object a state is about: entities by (kind, id), lists by (list, params). */
export declare function stateKey(state: Partial<EntityRef> & { list?: string; params?: object }): string | undefined;

/** The newest state per entity or list; `accept` drops one whose version is not newer. */
export declare class StateStore {
  accept(state: AnyState): boolean;
  get(ref: EntityRef): EntityState | undefined;
  get(ref: ListRef): ListState | undefined;
  clear(): void;
  values(): AnyState[];
  readonly size: number;
}
