// generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
// The data the server answers (components.schemas and each method's result), as it
// sends it: clients/node/index.d.ts builds its types on these.

/**
 * The id of a request, as clients send it: an integer or a string. Compared by type and value (7
 * and "7" are different ids), within one connection.
 */
export type RequestID = number | string;

/** The `error` member of a JSON-RPC response, with the `data` each code carries. */
export interface ErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * The kind of an entity (artist, profile, gene, …). Kinds are defined by the backend; the local
 * backend accepts any.
 */
export type EntityKind = string;

/**
 * An entity's id within its kind: a non-empty string of at most 256 bytes of UTF-8. (JSON Schema's
 * maxLength counts characters, so it can only say 256 here; the server counts bytes and answers a
 * longer id with -32602.) An id is its bytes: it is never normalized, and two ids are one entity
 * only when their UTF-8 bytes are equal (café written with U+00E9 and with e + U+0301 are two
 * entities, as they are to the API). Ids are data, never path syntax: on the rest backend an id
 * that would fill a path segment as exactly `.` or `..` is refused with -32602 (`data.path` `/id`)
 * before anything changes or is sent; every other id reaches the server percent-encoded as the one
 * segment it is (docs/backends.md, "The REST backend").
 */
export type EntityID = string;

/** Which object of the backend an entity is. */
export interface EntityRef {
  kind: EntityKind;
  id: EntityID;
}

export interface EntityStateError {
  /**
   * The application error code of the failure: -32001 backend unavailable, -32002 backend
   * rejected, -32003 unauthorized, -32004 unknown kind.
   */
  code: number;
  message: string;
  /** Whether the failure was transient (-32001). */
  retryable: boolean;
}

/**
 * An entity's follow state, as every follow method returns it and every `stateChanged` carries it.
 * Full, never a delta.
 */
export interface EntityState {
  kind: EntityKind;
  id: EntityID;
  /**
   * What the UI should show now (optimistic: the wanted state while a mutation is pending); null
   * while nothing is known.
   */
  following: boolean | null;
  /** The last state the backend confirmed; null when never fetched. */
  confirmed: boolean | null;
  /** A mutation is in flight or queued (waiting for a retry) for this entity. */
  pending: boolean;
  /**
   * Present, and true, only while the backend holds a follow request awaiting approval (a locked
   * Mastodon account: a follow answered `requested`); absent otherwise. Not a follow: `following`
   * and `confirmed` are false, `pending` false (the intent settled as a request, not retried, out
   * of the outbox). A second follow sends nothing (the server would answer the same request); an
   * unfollow withdraws it; a read that says following (approved later) makes it a confirmed
   * follow, one that says not following clears it. A cached read (`getFollowState` within
   * `maxAgeMs`) shows the request as last read: `refresh` to learn of an approval.
   */
  requested?: true;
  /**
   * null, or the last failure of a mutation or read of this entity; kept until the next successful
   * change or fetch (while the entity's intent waits for credentials a successful fetch keeps its
   * -32003 error: the intent still waits).
   */
  error: null | EntityStateError;
  /**
   * The entity's detail object, or null. Filled when a backend answer carried it: with the rest
   * backend, a follow endpoint whose `attributes` pointer names the object in its answer (e.g.
   * Artsy's follow answers the whole artist); later also by detail endpoints (`getEntity`,
   * preload). A change of attributes is a change of state: a new version and a notification.
   */
  attributes: Record<string, unknown> | null;
  /**
   * Grows on every change of this entity's state, and never goes backwards, not even across a
   * restart of the server on the same state folder (each start begins above every version the last
   * run could have shown). One count orders every change of the server, of any entity or list (so
   * one entity's versions skip numbers): what changed after version V is what shows a version
   * above V, which a resumed `subscribe` (`since`) answers. Clients drop a state whose version is
   * lower than one they already hold. Within one loop turn the server writes state changes
   * (`stateChanged`) before replies, so a reply may carry an older version than a notification
   * that came just before it. Never above 2^53 − 1, the largest integer a JSON client reads
   * exactly: a server whose state folder's mark has reached it refuses to start (see
   * docs/operations.md, Outbox and state folder, Restarts).
   */
  version: number;
  /**
   * Present, true, on a state a restarted server brought back from its state folder (a warm start)
   * that no answer has confirmed since: `following` and `confirmed` are what the backend last
   * confirmed, `ageMs` ago, in the last run. It never spares a call (a follow equal to it is still
   * sent); a `getFollowState` without `maxAgeMs` answers it at once and reads the entity again
   * behind the answer, and a subscription to it reads it again. See docs/operations.md, A warm
   * start.
   */
  stale?: true;
  /** With `stale`: how old what the state says is, in milliseconds. */
  ageMs?: number;
}

/**
 * {type: entity, kind, id}: one entity; {type: entity, kind}: every entity of a kind; {type:
 * entity}: every entity. An id needs a kind.
 */
export interface EntityTopic {
  type: "entity";
  kind?: EntityKind;
  id?: EntityID;
}

/**
 * One list with its params: the snapshot carries its ListState (a list never loaded starts
 * loading, as an entity never fetched is fetched), and every change of it (a page, a refresh, a
 * follow of one of its items) is pushed as a ListState. An unknown list is -32004; a missing param
 * the list needs is -32602.
 */
export interface ListTopic {
  type: "list";
  list: ListName;
  /** Values for the list's `{param}` placeholders: strings, numbers or booleans. */
  params?: Record<string, string | number | boolean | null>;
}

/**
 * {type: stats}: the server's own figures (the `stats` method's result), pushed as a
 * `statsChanged` notification (see `x-notifications`) at most once a second, only while the
 * subscription lasts and only when they changed; the first push comes right after the subscribe
 * reply (the snapshot has nothing for this topic). Takes no other member. What `netmodel top`
 * shows.
 */
export interface StatsTopic {
  type: "stats";
}

/**
 * {type: mutations}: each outcome the ledger records (see `getMutations`), pushed as a
 * `mutationOutcome` notification: confirmed, requested, refused, rolledBack, superseded and
 * waiting (not the acceptance: the reply says it). Two outcomes of one entry in one turn send the
 * later. The snapshot has nothing for this topic: read what came before with `getMutations`. Takes
 * no other member.
 */
export interface MutationsTopic {
  type: "mutations";
}

/** What a subscription hears about. */
export type Topic = EntityTopic | ListTopic | StatsTopic | MutationsTopic;

export interface SubscribeResult {
  /** The subscription's name (unique in the process), used by `unsubscribe` and in `stateChanged`. */
  subscription: string;
  /**
   * Current states of what the topics name: the entities first (see the method's description),
   * then one ListState per list topic. With a resumed `since`, only those whose `version` is above
   * it.
   */
  snapshot: (EntityState | ListState)[];
  /**
   * A random id of this server process, new at every start: a client that reconnects and sees
   * another one knows the server restarted (its subscriptions are gone; versions still never go
   * backwards on the same state folder).
   */
  instance: string;
  /**
   * The version of the server's newest change when the snapshot was taken: the snapshot has every
   * change of these topics up to it. Where a view of these topics stands (`since` of a later
   * subscribe), until a `stateChanged` says a later `through`.
   */
  version: number;
  /**
   * True when the snapshot is whole (no `since`, or one this process cannot resume: see the
   * `since` param): replace what is held for these topics. False when it holds only what changed
   * after `since.version`: apply it over what is held.
   */
  reset: boolean;
}

/** The params of the `stateChanged` notification the server sends (see `x-notifications`). */
export interface StateChangedParams {
  /** The subscription the change matched. */
  subscription: string;
  /** Grows by one per notification on the connection, starting at 1. */
  seq: number;
  /** The whole new state: an EntityState for entity topics, a ListState for list topics. */
  state: EntityState | ListState;
  /**
   * Present when this notification left nothing queued for the connection: every change up to this
   * version of what the connection subscribed to has been written, this one included. Where a view
   * stands for a resumed `subscribe` (`since.version`); a `version` seen is no such mark, since
   * coalescing writes a slow reader's waiting states in the order they were first queued, not by
   * version.
   */
  through?: number;
}

export interface InitializeResultServerInfo {
  name: "netmodel";
  /** The server's version. */
  version: string;
  /**
   * A random id of this server process, new at every start: a client that reconnects and sees
   * another one knows the server restarted (its subscriptions are gone; versions still never go
   * backwards on the same state folder).
   */
  instance: string;
}

export interface InitializeResultCapabilities {
  /** Names of every method the server handles, requests and notifications. */
  methods: string[];
}

export interface InitializeResult {
  serverInfo: InitializeResultServerInfo;
  protocolVersion: "1.0";
  capabilities: InitializeResultCapabilities;
}

export interface StatsBackendHttpEndpointsValue {
  /** Calls not yet answered. */
  inFlight: number;
  /** Calls answered or failed since start. */
  finished: number;
  /** The milliseconds the finished calls took, added up. */
  latencyTotalMs: number;
  /** The milliseconds the last finished call took. */
  latencyLastMs: number;
}

/**
 * Present with the rest backend only: its HTTP traffic. `requests` counts HTTP requests (a batched
 * read of 50 ids is one), unlike `calls`, which counts per entity.
 */
export interface StatsBackendHttp {
  /** HTTP requests started. */
  requests: number;
  /** Complete answers, any status. */
  responses: number;
  /** Requests that got no complete answer: timeouts, refused or dropped connections. */
  transportErrors: number;
  /** New TCP connections; with keep-alive it stays near `maxInFlight`. */
  connectionsOpened: number;
  /** Requests started and not yet answered. */
  inFlight: number;
  /**
   * Where libcurl writes and reads now: `loop`, the models' own thread (a few requests in flight),
   * or `own`, a thread of its own (`netmodel curl`), from 8 in flight at once until none has been
   * for 20 ms (docs/operations.md, Bounds).
   */
  libcurlThread: "loop" | "own";
  /**
   * Times libcurl moved to its own thread since start: a figure that grows with every burst says
   * the API is often asked many things at once.
   */
  libcurlMoves: number;
  /** Requests per `kind.endpoint` (`artist.state`, `profile.unfollow`, ...). */
  byEndpoint: Record<string, number>;
  /**
   * Per `kind.endpoint`: calls in flight and how long they take. A call is in flight from when it
   * is handed to the HTTP client (waiting in its queue included) until it is answered or fails.
   * The mean latency of an interval is the change of `latencyTotalMs` over the change of
   * `finished`.
   */
  endpoints: Record<string, StatsBackendHttpEndpointsValue>;
}

/** Backend calls since start. */
export interface StatsBackend {
  /** Every backend call: mutations and reads (retries included). */
  calls: number;
  /** Follow/unfollow calls sent (retries included). */
  mutations: number;
  /** State reads sent. */
  reads: number;
  /** Retries scheduled after transient failures. */
  retries: number;
  /** Mutations rolled back to the confirmed state (permanent failure or retries exhausted). */
  rollbacks: number;
  /**
   * Present with the rest backend only: its HTTP traffic. `requests` counts HTTP requests (a
   * batched read of 50 ids is one), unlike `calls`, which counts per entity.
   */
  http?: StatsBackendHttp;
}

/** Notifications written: `stateChanged`, and `statsChanged` for the stats topic. */
export interface StatsNotifications {
  /** Notifications written. */
  sent: number;
  /**
   * Queued states replaced by a newer state of the same entity and subscription before they were
   * written.
   */
  coalesced: number;
  /** `statsChanged` notifications written (the `stats` topic); not counted in `sent`. */
  stats: number;
}

/**
 * The mutations ledger (`getMutations`, the `mutations` topic), where a client that was away finds
 * what became of the intents: bounded by --max-ledger-entries and --max-ledger-bytes, the oldest
 * entries dropped first.
 */
export interface StatsMutations {
  /** Entries kept now: what getMutations can return. */
  entries: number;
  /** Kept entries with no final outcome yet (pending, or waiting for credentials). */
  open: number;
  /**
   * Kept entries whose intent failed (refused or rolledBack): what a user who asked for them
   * should hear of.
   */
  failed: number;
  /** The highest seq given so far (0: none); getMutations' since counts up to it. */
  lastSeq: number;
  /**
   * Entries the bounds dropped since start: a client away since before them finds its read
   * `truncated` (getMutations).
   */
  dropped: number;
  /** The bytes of the kept entries' lines in mutations.log. */
  bytes: number;
  /** --max-ledger-entries. */
  maxEntries: number;
  /** --max-ledger-bytes. */
  maxBytes: number;
}

export interface StatsConnectionsListItem {
  /** The connection's number in this process. */
  id: number;
  /** `stdio` or `socket`. */
  transport: "stdio" | "socket";
  /** Its subscriptions open now. */
  subscriptions: number;
  /**
   * Its notifications waiting to be written (coalesced: at most one per subscription and entity,
   * list or stats).
   */
  queued: number;
  /** Bytes written for it that it has not read yet: a slow reader shows here. */
  unsentBytes: number;
}

export interface StatsConnections {
  /** Connections open now, stdio included. */
  open: number;
  /** Connections accepted since start, stdio included. */
  total: number;
  /** Each connection open now, oldest first. */
  list: StatsConnectionsListItem[];
}

export interface StatsRequests {
  /**
   * Requests (messages with a method and an id, batch elements included) received, whatever their
   * outcome.
   */
  total: number;
  /**
   * Requests per method the server knows; requests to unknown methods count only in `total` (and
   * in errors.byCode["-32601"]).
   */
  byMethod: Record<string, number>;
}

export interface StatsBytes {
  /** Protocol bytes read, framing included. */
  in: number;
  /** Protocol bytes written, framing included. */
  out: number;
}

export interface StatsErrors {
  /** Error responses written. */
  total: number;
  /** Error responses per code; keys are the codes in decimal ("-32601"). */
  byCode: Record<string, number>;
}

/** Lists held and their traffic. */
export interface StatsLists {
  /**
   * Lists in memory now: at most `--max-lists` (default 256) plus those with a subscriber or a
   * page on its way.
   */
  held: number;
  /** Pages asked of the backend. */
  pageCalls: number;
  /** fetchList calls that joined a page already on its way. */
  sharedFetches: number;
  /** Lists made out of date by a confirmed follow of a kind they depend on. */
  invalidations: number;
  /**
   * Lists dropped from memory so far: unused for `--list-idle-ms` (default 600000), or the least
   * recently used beyond `--max-lists`.
   */
  evicted?: number;
  /**
   * Loads ended with a failure because the API's pages made no progress: a next page or cursor
   * seen before in the same load, a refetch page holding only items it had, or a refetch's page
   * cap (the pages the list had, plus 2).
   */
  pagingFailures?: number;
}

/** setInterfaceState's work. */
export interface StatsPreload {
  queued: number;
  inFlight: number;
  started: number;
  /**
   * Items that left every host's range before their turn: in the preload queue, or with their
   * detail call still waiting for a connection (given up, never sent).
   */
  cancelled: number;
  /** Detail calls made by preload and getEntity (one given up before it was sent is not counted). */
  detailCalls: number;
  detailShared: number;
}

export interface Stats {
  /** Milliseconds since the process started. */
  uptimeMs: number;
  /** Backend calls since start. */
  backend: StatsBackend;
  /**
   * Work saved: reads that joined a backend read already in flight, and mutations that needed no
   * call (the wanted state was already known).
   */
  dedupeHits: number;
  /** `getFollowState` requests answered from memory. */
  cacheHits: number;
  /**
   * Entities held in memory now: at most `--max-entities` (default 100000) plus those something
   * holds (an exact subscription, a list in memory, a preload, a pending intent).
   */
  entities: number;
  /**
   * Entities dropped from memory so far: unused for `--entity-idle-ms` (default 600000), or the
   * least recently used beyond `--max-entities`. One seen again is fetched again; its versions
   * continue above every version it had.
   */
  entitiesEvicted?: number;
  /** Subscriptions open now, over all connections. */
  subscriptions: number;
  /** Notifications written: `stateChanged`, and `statsChanged` for the stats topic. */
  notifications: StatsNotifications;
  /** Unsettled intents in the outbox now (mutations not yet confirmed or rolled back). */
  outbox: number;
  /**
   * The mutations ledger (`getMutations`, the `mutations` topic), where a client that was away
   * finds what became of the intents: bounded by --max-ledger-entries and --max-ledger-bytes, the
   * oldest entries dropped first.
   */
  mutations: StatsMutations;
  /** The process's resident memory (from /proc/self/statm); 0 when unknown. */
  residentMemoryBytes: number;
  /**
   * The bytes entity details and list items hold now, as estimated at each insert and remove (each
   * entity's detail object; each list item's kind, id, attributes and section title plus 96
   * bytes); what --max-held-bytes bounds.
   */
  heldBytes: number;
  /**
   * --max-held-bytes: past it the least recently used lists and entities nothing holds are
   * evicted, and a page larger than it fails (0: no bound).
   */
  maxHeldBytes: number;
  connections: StatsConnections;
  requests: StatsRequests;
  /** Notifications (messages with a method and no id) received. */
  notificationsReceived: number;
  bytes: StatsBytes;
  errors: StatsErrors;
  /** Lists held and their traffic. */
  lists: StatsLists;
  /** setInterfaceState's work. */
  preload: StatsPreload;
  /**
   * A random id of this server process, new at every start: a client that reconnects and sees
   * another one knows the server restarted (its subscriptions are gone; versions still never go
   * backwards on the same state folder).
   */
  instance: string;
  /**
   * Intents the backend refused for want of credentials (401/403): still pending and in the
   * outbox, sent again at the next `configure {authToken}` or `configure {environment}`.
   */
  waitingForCredentials: number;
  /** Entities whose state shows `pending` now: a mutation not yet settled. */
  entitiesPending: number;
  /** Entities whose state shows an `error` now. */
  entitiesFailed: number;
}

/**
 * A list's name: on the local backend `following/<kind>` (what is followed, ordered by id, 50 a
 * page); on the rest backend the lists its configuration describes under `lists` (e.g.
 * `followedArtists`).
 */
export type ListName = string;

/**
 * An item of a list, joined with the entity store: `following` is the entity's shown state now (it
 * moves with every follow, in every list holding the entity), else what the list's answer said;
 * `attributes` are the entity's, else the fields the list kept.
 */
export interface ListItem {
  kind: EntityKind;
  id: EntityID;
  following: boolean | null;
  attributes: Record<string, unknown> | null;
}

/**
 * A run of items with the same section title (the configuration's `sections`: the first letter of
 * a name, or a category): items[start ..< start+count].
 */
export interface ListSection {
  title: string;
  start: number;
  count: number;
}

export interface ListStateError {
  /**
   * The application error code of the failure: -32001 backend unavailable, -32002 backend
   * rejected, -32003 unauthorized, -32004 unknown kind.
   */
  code: number;
  message: string;
  /** Whether the failure was transient (-32001). */
  retryable: boolean;
}

/**
 * A list as a stateful data source. `state`: idle (never asked for), loading, loaded or failure.
 * While a next page or a refresh loads, `state` is loading and `items` keeps what was loaded; a
 * refresh replaces the items when it arrives. A failed page keeps what was loaded, sets `error`
 * and keeps `hasMore`: asking for `next` again retries it; a failure never marks the list
 * complete. `version` grows by one on every change, including a change of an item's entity.
 * `items` never holds an item twice (ids compare by bytes): a next page that repeats items already
 * shown (the list's head moved between two pages of a page- or offset-paged API) has them left
 * out, and the list is walked again from its first page as far as it reached (the log's
 * `list.shifted`); meanwhile `state` is loading and `items` keeps what was shown. Items removed at
 * the head between two pages are found the same way when the list's configuration reads the
 * answer's `total` (a total that changed) or asks offset pages with an `overlap`; otherwise they
 * cannot be seen in the pages, and a `refresh` walks from the first page. A next page holding only
 * items shown (a head that moved by exactly one page) is walked again too, not a failure. A keyset
 * cursor does not move.
 */
export interface ListState {
  list: ListName;
  /** The params the list was asked with (keys sorted). */
  params: Record<string, unknown>;
  state: "idle" | "loading" | "loaded" | "failure";
  items: ListItem[];
  sections: ListSection[];
  /** Whether `page: next` can load more. */
  hasMore: boolean;
  /** The last page's failure (`{code, message, retryable}`), or null. */
  error: null | ListStateError;
  /**
   * Never goes backwards across a restart on the same state folder, and never above 2^53 − 1 (see
   * EntityState's version). It is of the same count as entities' versions (see EntityState's
   * `version`).
   */
  version: number;
}

/** The params of the `statsChanged` notification (see `x-notifications`). */
export interface StatsParams {
  /** The subscription with the stats topic. */
  subscription: string;
  /** As in `stateChanged`: one count per connection over both notifications. */
  seq: number;
  stats: Stats;
}

/** The params of the `configurationChanged` notification (see `x-notifications`). */
export interface ConfigurationChangedParams {
  /** The environment now active. */
  environment: string;
  /** What changed: any of "environment", "authToken", "values". */
  changed: ("environment" | "authToken" | "values")[];
  /** The names of the values that changed. */
  values: string[];
}

/**
 * The last failure, as an EntityState's `error` shows it, with `retryAfterMs` when the API said
 * how long to wait; null: none.
 */
export interface InspectFailure {
  code: number;
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
}

export interface InspectConnectionSubscriptionsItem {
  subscription: string;
  topicCount: number;
  /**
   * The first 10 topics as `netmodel watch` writes them (`entity:artist/banksy`, `list:following`,
   * `stats`; a list's params after a space).
   */
  topics: string[];
}

export interface InspectConnection {
  /** As in `stats.connections.list`. */
  id: number;
  transport: "stdio" | "socket";
  /** `clientInfo.name` of the connection's `initialize` (at most 200 bytes); null: it sent none. */
  client: string | null;
  /** Its subscriptions in the order they were made. */
  subscriptions: InspectConnectionSubscriptionsItem[];
  /** Notifications waiting to be written to it. */
  queued: number;
  /** Bytes written but not yet taken by the peer. */
  unsentBytes: number;
}

export interface InspectEntity {
  kind: EntityKind;
  id: EntityID;
  /**
   * Why it is listed: `pending` (a mutation not settled), `reading` (a backend read under way),
   * `retrying` (a retry scheduled), `failed` (its state shows an `error`), `requested` (a follow
   * request awaiting approval), `waitingForCredentials` (refused for want of a token).
   */
  states: ("pending" | "reading" | "retrying" | "failed" | "requested" | "waitingForCredentials")[];
  following: boolean | null;
  confirmed: boolean | null;
  /** Failed calls of the mutation under way. */
  attempts: number;
  /**
   * How long ago, in milliseconds on the server's monotonic clock, the oldest of these states
   * began (its mutation, its read, its error, its request's confirmation); null: unknown.
   */
  sinceMs: number | null;
  /** The same instant on the server's wall clock (RFC 3339, UTC). */
  since: string | null;
  error: null | InspectFailure;
}

export interface InspectIntent {
  kind: EntityKind;
  id: EntityID;
  /** true: follow; false: unfollow. */
  wanted: boolean;
  /** The environment it was made in; null: the outbox names none (the local backend). */
  environment: string | null;
  /** Made in the active environment: only these are sent. */
  active: boolean;
  /** Failed calls so far in this run. */
  attempts: number;
  /**
   * How long ago it became pending in this run (null: not pending here, e.g. another
   * environment's).
   */
  sinceMs: number | null;
  /** The same instant on the wall clock. */
  since: string | null;
  error: null | InspectFailure;
}

export interface InspectList {
  list: ListName;
  params: Record<string, string>;
  phase: "idle" | "loading" | "loaded" | "failure";
  items: number;
  /** Pages loaded. */
  pages: number;
  hasMore: boolean;
  /**
   * A follow it depends on was confirmed since it loaded: fetched again when next asked for (at
   * once when subscribed).
   */
  stale: boolean;
  /** A page is being fetched. */
  loading: boolean;
  /**
   * Present once the list moved at its head while it was paged: what showed it (the items its next
   * page repeated, the total before and after, the item an overlapping page started after), and
   * whether it was walked again from the first page (the log's `list.shifted`).
   */
  shifted?: string;
  /** How long ago its last page answer (or failure) came; null: none yet. */
  fetchedMs: number | null;
  /** The same instant on the wall clock. */
  fetched: string | null;
  error: null | InspectFailure;
}

export interface InspectWaitingRequest {
  /** `METHOD url` (never a header or a body). */
  request: string;
  priority: "user" | "visible" | "display" | "preload";
  /** How long it has waited, in milliseconds. */
  sinceMs: number | null;
  /** When it started waiting, on the wall clock. */
  since: string | null;
}

export interface InspectHoldsRateLimitReason {
  /** The answer's HTTP status. */
  status: number | null;
  /**
   * The header the wait was read from (`Retry-After`, the configuration's
   * `rateLimit.resetHeader`); null: the status rule's `waitMs`.
   */
  header: string | null;
  /** That header's value as the API sent it. */
  value: string | null;
}

export interface InspectHoldsRateLimit {
  /** Milliseconds left, on the server's monotonic clock. */
  untilMs: number;
  /** When it ends, on the wall clock (RFC 3339, UTC). */
  until: string;
  reason: InspectHoldsRateLimitReason;
}

/**
 * Calls waiting for a connection, the rate limit or the hold, oldest first: `total` found, the
 * first `limit` of them in `list`, `omitted` = total − listed.
 */
export interface InspectHoldsWaiting {
  total: number;
  omitted: number;
  list: InspectWaitingRequest[];
}

/** What keeps the backend's HTTP calls from going out. */
export interface InspectHolds {
  /** The base URL calls go to (the active environment's). */
  api: string;
  environment: string;
  /**
   * The API said to send nothing until a time (a 429, or a status its rule means `retry`): every
   * call waits until then. null: no hold.
   */
  rateLimit: null | InspectHoldsRateLimit;
  /** Calls under way. */
  inFlight: number;
  /** The configuration's `maxInFlight`. */
  maxConnections: number;
  /**
   * Calls waiting for a connection, the rate limit or the hold, oldest first: `total` found, the
   * first `limit` of them in `list`, `omitted` = total − listed.
   */
  waiting: InspectHoldsWaiting;
}

/**
 * Open connections, oldest first: `total` found, the first `limit` of them in `list`, `omitted` =
 * total − listed.
 */
export interface InspectResultConnections {
  total: number;
  omitted: number;
  list: InspectConnection[];
}

/**
 * Entities that are pending, being read, retrying, failed, requested or waiting for credentials,
 * of `kind` (and `id`) when given; oldest `since` first: `total` found, the first `limit` of them
 * in `list`, `omitted` = total − listed.
 */
export interface InspectResultEntities {
  total: number;
  omitted: number;
  list: InspectEntity[];
}

/**
 * Unsettled intents of every environment (of `kind` when given), in the order they were last
 * changed; without a state folder, the pending mutations: `total` found, the first `limit` of them
 * in `list`, `omitted` = total − listed.
 */
export interface InspectResultOutbox {
  total: number;
  omitted: number;
  list: InspectIntent[];
}

/**
 * Lists in memory, by name then params: `total` found, the first `limit` of them in `list`,
 * `omitted` = total − listed.
 */
export interface InspectResultLists {
  total: number;
  omitted: number;
  list: InspectList[];
}

/**
 * The items behind `stats`' counters. Only the sections asked for are present. Each list is
 * bounded by `limit` and says how many it left out.
 */
export interface InspectResult {
  /** As `stats.instance`. */
  instance: string;
  /** As `stats.uptimeMs`. */
  uptimeMs: number;
  /**
   * The server's wall clock when it answered (RFC 3339, UTC): every `since`/`until` is this moment
   * minus/plus its `…Ms`.
   */
  now: string;
  /** The most items listed per section. */
  limit: number;
  /**
   * Open connections, oldest first: `total` found, the first `limit` of them in `list`, `omitted`
   * = total − listed.
   */
  connections?: InspectResultConnections;
  /**
   * Entities that are pending, being read, retrying, failed, requested or waiting for credentials,
   * of `kind` (and `id`) when given; oldest `since` first: `total` found, the first `limit` of
   * them in `list`, `omitted` = total − listed.
   */
  entities?: InspectResultEntities;
  /**
   * Unsettled intents of every environment (of `kind` when given), in the order they were last
   * changed; without a state folder, the pending mutations: `total` found, the first `limit` of
   * them in `list`, `omitted` = total − listed.
   */
  outbox?: InspectResultOutbox;
  /**
   * Lists in memory, by name then params: `total` found, the first `limit` of them in `list`,
   * `omitted` = total − listed.
   */
  lists?: InspectResultLists;
  /** null: the backend does not use HTTP. */
  holds?: null | InspectHolds;
}

export interface SyncResultSettledItem {
  kind: EntityKind;
  id: EntityID;
  /**
   * How the intent ended: `confirmed` the backend did it; `requested` a follow request awaits
   * approval; `refused` the API refused it (the state shows what it last confirmed, and the
   * error); `rolledBack` given up on (retries spent, a wait beyond `retry.maxWaitMs`, another
   * environment): the state shows what it last confirmed, and the error.
   */
  outcome: "confirmed" | "requested" | "refused" | "rolledBack";
  state: EntityState;
}

export interface SyncResultWaitingItem {
  kind: EntityKind;
  id: EntityID;
  /**
   * Why it still waits: `credentials` nothing is sent until `configure` gives a token (the state's
   * -32003 error says why); `rateLimit` the API holds every request past the timeout (`inspect`
   * holds says until when; an intent waiting to be sent again is listed at once, one already sent
   * at the timeout); `timeout` still under way (sent, or to be retried) when `timeoutMs` passed.
   */
  reason: "credentials" | "rateLimit" | "timeout";
  state: EntityState;
}

/**
 * What `sync` waited for: the intents that settled, and those that still wait, in byte order of
 * kind then id.
 */
export interface SyncResult {
  settled: SyncResultSettledItem[];
  waiting: SyncResultWaitingItem[];
}

/**
 * What became of an intent: `pending` and `waiting` may still change; the others are final.
 * `unknown`: it settled in a run that stopped before writing how (a power loss); the entity's
 * state says where it stands.
 */
export type MutationOutcome = "pending" | "waiting" | "confirmed" | "requested" | "refused" | "rolledBack" | "superseded" | "unknown";

/** Why it failed or waits, as the entity's state `error` showed it. */
export interface MutationEntryError {
  /** -32001 backend unavailable, -32002 backend rejected, -32003 unauthorized, -32004 unknown kind. */
  code: number;
  message: string;
  retryable: boolean;
}

/** One intent in the ledger (`getMutations`, `mutationOutcome`). */
export interface MutationEntry {
  /** Its number in the state folder's ledger: rising by one per intent, never reused. */
  seq: number;
  kind: EntityKind;
  id: EntityID;
  /** true: a follow; false: an unfollow. */
  intent: boolean;
  outcome: MutationOutcome;
  /** When the server accepted it (RFC 3339, UTC, milliseconds). */
  acceptedAt: string;
  /** When it reached a final outcome; absent while pending or waiting. */
  settledAt?: string;
  /**
   * Calls to the backend made for it (counted in memory: calls of a run that stopped before its
   * next line are not).
   */
  attempts: number;
  /** The `clientInfo.name` of the connection that asked, when it gave one in `initialize`. */
  client?: string;
  /** The environment it was made in (the REST backend). */
  environment?: string;
  /** Why it failed or waits, as the entity's state `error` showed it. */
  error?: MutationEntryError;
}

/** A page of the ledger. */
export interface GetMutationsResult {
  /** Entries after `since` (of `kind` and `id` when given), oldest first. */
  entries: MutationEntry[];
  /** What to pass as `since` for the rest: the last entry's seq when `more`, else `last`. */
  next: number;
  /** The highest seq the ledger gave (0: none yet). */
  last: number;
  /** `limit` cut the page: ask again with `since: next`. */
  more: boolean;
  /** Entries after `since` were dropped by the bounds before they could be read. */
  truncated: boolean;
}

/** The params of the `mutationOutcome` notification (see `x-notifications`). */
export interface MutationOutcomeParams {
  /** The subscription with the mutations topic. */
  subscription: string;
  /** As in `stateChanged`: one count per connection over every notification. */
  seq: number;
  entry: MutationEntry;
}

export interface UnsubscribeResult {
  ok: true;
}

export interface SetInterfaceStateResult {
  accepted: number;
}

export interface ConfigureResult {
  /** The environment now in use. */
  environment: string;
}

/** What each method answers (its `result`), by method name. */
export interface MethodResults {
  initialize: InitializeResult;
  shutdown: null;
  "rpc.discover": Record<string, unknown>;
  stats: Stats;
  inspect: InspectResult;
  follow: EntityState;
  unfollow: EntityState;
  setFollowState: EntityState;
  getFollowState: EntityState;
  subscribe: SubscribeResult;
  unsubscribe: UnsubscribeResult;
  fetchList: ListState;
  getEntity: EntityState;
  setInterfaceState: SetInterfaceStateResult;
  sync: SyncResult;
  getMutations: GetMutationsResult;
  configure: ConfigureResult;
}
