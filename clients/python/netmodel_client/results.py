# generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
"""The data the server answers (schema/openrpc.json: components.schemas and each
method's result), as it sends it: TypedDicts for type hints, and METHOD_RESULTS,
what each method answers."""

from typing import Any, Dict, List, Literal, NotRequired, Optional, TypedDict, Union


# The id of a request, as clients send it: an integer or a string. Compared by type and
# value (7 and "7" are different ids), within one connection.
RequestID = Union[int, str]

# The `error` member of a JSON-RPC response, with the `data` each code carries.
ErrorObject = TypedDict(
    "ErrorObject",
    {
        "code": int,
        "message": str,
        "data": NotRequired[Any],
    },
)

# The kind of an entity (artist, profile, gene, …). Kinds are defined by the backend; the
# local backend accepts any.
EntityKind = str

# An entity's id within its kind: a non-empty string of at most 256 bytes of UTF-8. (JSON
# Schema's maxLength counts characters, so it can only say 256 here; the server counts
# bytes and answers a longer id with -32602.) An id is its bytes: it is never normalized,
# and two ids are one entity only when their UTF-8 bytes are equal (café written with
# U+00E9 and with e + U+0301 are two entities, as they are to the API). Ids are data,
# never path syntax: on the rest backend an id that would fill a path segment as exactly
# `.` or `..` is refused with -32602 (`data.path` `/id`) before anything changes or is
# sent; every other id reaches the server percent-encoded as the one segment it is
# (docs/backends.md, "The REST backend").
EntityID = str

# Which object of the backend an entity is.
EntityRef = TypedDict(
    "EntityRef",
    {
        "kind": EntityKind,
        "id": EntityID,
    },
)

EntityStateError = TypedDict(
    "EntityStateError",
    {
        "code": int,
        "message": str,
        "retryable": bool,
    },
)

# An entity's follow state, as every follow method returns it and every `stateChanged`
# carries it. Full, never a delta.
EntityState = TypedDict(
    "EntityState",
    {
        "kind": EntityKind,
        "id": EntityID,
        "following": Optional[bool],
        "confirmed": Optional[bool],
        "pending": bool,
        "requested": NotRequired[Literal[True]],
        "error": Optional[EntityStateError],
        "attributes": Optional[Dict[str, Any]],
        "version": int,
        "stale": NotRequired[Literal[True]],
        "ageMs": NotRequired[int],
    },
)

# {type: entity, kind, id}: one entity; {type: entity, kind}: every entity of a kind;
# {type: entity}: every entity. An id needs a kind.
EntityTopic = TypedDict(
    "EntityTopic",
    {
        "type": Literal["entity"],
        "kind": NotRequired[EntityKind],
        "id": NotRequired[EntityID],
    },
)

# A list's name: on the local backend `following/<kind>` (what is followed, ordered by id,
# 50 a page); on the rest backend the lists its configuration describes under `lists`
# (e.g. `followedArtists`).
ListName = str

# One list with its params: the snapshot carries its ListState (a list never loaded starts
# loading, as an entity never fetched is fetched), and every change of it (a page, a
# refresh, a follow of one of its items) is pushed as a ListState. An unknown list is
# -32004; a missing param the list needs is -32602.
ListTopic = TypedDict(
    "ListTopic",
    {
        "type": Literal["list"],
        "list": ListName,
        "params": NotRequired[Dict[str, Optional[Union[str, float, bool]]]],
    },
)

# {type: stats}: the server's own figures (the `stats` method's result), pushed as a
# `statsChanged` notification (see `x-notifications`) at most once a second, only while
# the subscription lasts and only when they changed; the first push comes right after the
# subscribe reply (the snapshot has nothing for this topic). Takes no other member. What
# `netmodel top` shows.
StatsTopic = TypedDict(
    "StatsTopic",
    {
        "type": Literal["stats"],
    },
)

# {type: mutations}: each outcome the ledger records (see `getMutations`), pushed as a
# `mutationOutcome` notification: confirmed, requested, refused, rolledBack, superseded
# and waiting (not the acceptance: the reply says it). Two outcomes of one entry in one
# turn send the later. The snapshot has nothing for this topic: read what came before with
# `getMutations`. Takes no other member.
MutationsTopic = TypedDict(
    "MutationsTopic",
    {
        "type": Literal["mutations"],
    },
)

# What a subscription hears about.
Topic = Union[EntityTopic, ListTopic, StatsTopic, MutationsTopic]

# An item of a list, joined with the entity store: `following` is the entity's shown state
# now (it moves with every follow, in every list holding the entity), else what the list's
# answer said; `attributes` are the entity's, else the fields the list kept.
ListItem = TypedDict(
    "ListItem",
    {
        "kind": EntityKind,
        "id": EntityID,
        "following": Optional[bool],
        "attributes": Optional[Dict[str, Any]],
    },
)

# A run of items with the same section title (the configuration's `sections`: the first
# letter of a name, or a category): items[start ..< start+count].
ListSection = TypedDict(
    "ListSection",
    {
        "title": str,
        "start": int,
        "count": int,
    },
)

ListStateError = TypedDict(
    "ListStateError",
    {
        "code": int,
        "message": str,
        "retryable": bool,
    },
)

# A list as a stateful data source. `state`: idle (never asked for), loading, loaded or
# failure. While a next page or a refresh loads, `state` is loading and `items` keeps what
# was loaded; a refresh replaces the items when it arrives. A failed page keeps what was
# loaded, sets `error` and keeps `hasMore`: asking for `next` again retries it; a failure
# never marks the list complete. `version` grows by one on every change, including a
# change of an item's entity. `items` never holds an item twice (ids compare by bytes): a
# next page that repeats items already shown (the list's head moved between two pages of a
# page- or offset-paged API) has them left out, and the list is walked again from its
# first page as far as it reached (the log's `list.shifted`); meanwhile `state` is loading
# and `items` keeps what was shown. Items removed at the head between two pages are found
# the same way when the list's configuration reads the answer's `total` (a total that
# changed) or asks offset pages with an `overlap`; otherwise they cannot be seen in the
# pages, and a `refresh` walks from the first page. A next page holding only items shown
# (a head that moved by exactly one page) is walked again too, not a failure. A keyset
# cursor does not move.
ListState = TypedDict(
    "ListState",
    {
        "list": ListName,
        "params": Dict[str, Any],
        "state": Literal["idle", "loading", "loaded", "failure"],
        "items": List[ListItem],
        "sections": List[ListSection],
        "hasMore": bool,
        "error": Optional[ListStateError],
        "version": int,
    },
)

SubscribeResult = TypedDict(
    "SubscribeResult",
    {
        "subscription": str,
        "snapshot": List[Union[EntityState, ListState]],
        "instance": str,
        "version": int,
        "reset": bool,
    },
)

# The params of the `stateChanged` notification the server sends (see `x-notifications`).
StateChangedParams = TypedDict(
    "StateChangedParams",
    {
        "subscription": str,
        "seq": int,
        "state": Union[EntityState, ListState],
        "through": NotRequired[int],
    },
)

InitializeResultServerInfo = TypedDict(
    "InitializeResultServerInfo",
    {
        "name": Literal["netmodel"],
        "version": str,
        "instance": str,
    },
)

InitializeResultCapabilities = TypedDict(
    "InitializeResultCapabilities",
    {
        "methods": List[str],
    },
)

InitializeResult = TypedDict(
    "InitializeResult",
    {
        "serverInfo": InitializeResultServerInfo,
        "protocolVersion": Literal["1.0"],
        "capabilities": InitializeResultCapabilities,
    },
)

StatsBackendHttpEndpointsValue = TypedDict(
    "StatsBackendHttpEndpointsValue",
    {
        "inFlight": int,
        "finished": int,
        "latencyTotalMs": int,
        "latencyLastMs": int,
    },
)

# Present with the rest backend only: its HTTP traffic. `requests` counts HTTP requests (a
# batched read of 50 ids is one), unlike `calls`, which counts per entity.
StatsBackendHttp = TypedDict(
    "StatsBackendHttp",
    {
        "requests": int,
        "responses": int,
        "transportErrors": int,
        "connectionsOpened": int,
        "inFlight": int,
        "libcurlThread": Literal["loop", "own"],
        "libcurlMoves": int,
        "byEndpoint": Dict[str, int],
        "endpoints": Dict[str, StatsBackendHttpEndpointsValue],
    },
)

# Backend calls since start.
StatsBackend = TypedDict(
    "StatsBackend",
    {
        "calls": int,
        "mutations": int,
        "reads": int,
        "retries": int,
        "rollbacks": int,
        "http": NotRequired[StatsBackendHttp],
    },
)

# Notifications written: `stateChanged`, and `statsChanged` for the stats topic.
StatsNotifications = TypedDict(
    "StatsNotifications",
    {
        "sent": int,
        "coalesced": int,
        "stats": int,
    },
)

# The mutations ledger (`getMutations`, the `mutations` topic), where a client that was
# away finds what became of the intents: bounded by --max-ledger-entries and
# --max-ledger-bytes, the oldest entries dropped first.
StatsMutations = TypedDict(
    "StatsMutations",
    {
        "entries": int,
        "open": int,
        "failed": int,
        "lastSeq": int,
        "dropped": int,
        "bytes": int,
        "maxEntries": int,
        "maxBytes": int,
    },
)

StatsConnectionsListItem = TypedDict(
    "StatsConnectionsListItem",
    {
        "id": int,
        "transport": Literal["stdio", "socket"],
        "subscriptions": int,
        "queued": int,
        "unsentBytes": int,
    },
)

StatsConnections = TypedDict(
    "StatsConnections",
    {
        "open": int,
        "total": int,
        "list": List[StatsConnectionsListItem],
    },
)

StatsRequests = TypedDict(
    "StatsRequests",
    {
        "total": int,
        "byMethod": Dict[str, int],
    },
)

StatsBytes = TypedDict(
    "StatsBytes",
    {
        "in": int,
        "out": int,
    },
)

StatsErrors = TypedDict(
    "StatsErrors",
    {
        "total": int,
        "byCode": Dict[str, int],
    },
)

# Lists held and their traffic.
StatsLists = TypedDict(
    "StatsLists",
    {
        "held": int,
        "pageCalls": int,
        "sharedFetches": int,
        "invalidations": int,
        "evicted": NotRequired[int],
        "pagingFailures": NotRequired[int],
    },
)

# setInterfaceState's work.
StatsPreload = TypedDict(
    "StatsPreload",
    {
        "queued": int,
        "inFlight": int,
        "started": int,
        "cancelled": int,
        "detailCalls": int,
        "detailShared": int,
    },
)

Stats = TypedDict(
    "Stats",
    {
        "uptimeMs": int,
        "backend": StatsBackend,
        "dedupeHits": int,
        "cacheHits": int,
        "entities": int,
        "entitiesEvicted": NotRequired[int],
        "subscriptions": int,
        "notifications": StatsNotifications,
        "outbox": int,
        "mutations": StatsMutations,
        "residentMemoryBytes": int,
        "heldBytes": int,
        "maxHeldBytes": int,
        "connections": StatsConnections,
        "requests": StatsRequests,
        "notificationsReceived": int,
        "bytes": StatsBytes,
        "errors": StatsErrors,
        "lists": StatsLists,
        "preload": StatsPreload,
        "instance": str,
        "waitingForCredentials": int,
        "entitiesPending": int,
        "entitiesFailed": int,
    },
)

# The params of the `statsChanged` notification (see `x-notifications`).
StatsParams = TypedDict(
    "StatsParams",
    {
        "subscription": str,
        "seq": int,
        "stats": Stats,
    },
)

# The params of the `configurationChanged` notification (see `x-notifications`).
ConfigurationChangedParams = TypedDict(
    "ConfigurationChangedParams",
    {
        "environment": str,
        "changed": List[Literal["environment", "authToken", "values"]],
        "values": List[str],
    },
)

# The last failure, as an EntityState's `error` shows it, with `retryAfterMs` when the API
# said how long to wait; null: none.
InspectFailure = TypedDict(
    "InspectFailure",
    {
        "code": int,
        "message": str,
        "retryable": bool,
        "retryAfterMs": NotRequired[int],
    },
)

InspectConnectionSubscriptionsItem = TypedDict(
    "InspectConnectionSubscriptionsItem",
    {
        "subscription": str,
        "topicCount": int,
        "topics": List[str],
    },
)

InspectConnection = TypedDict(
    "InspectConnection",
    {
        "id": int,
        "transport": Literal["stdio", "socket"],
        "client": Optional[str],
        "subscriptions": List[InspectConnectionSubscriptionsItem],
        "queued": int,
        "unsentBytes": int,
    },
)

InspectEntity = TypedDict(
    "InspectEntity",
    {
        "kind": EntityKind,
        "id": EntityID,
        "states": List[Literal["pending", "reading", "retrying", "failed", "requested", "waitingForCredentials"]],
        "following": Optional[bool],
        "confirmed": Optional[bool],
        "attempts": int,
        "sinceMs": Optional[int],
        "since": Optional[str],
        "error": Optional[InspectFailure],
    },
)

InspectIntent = TypedDict(
    "InspectIntent",
    {
        "kind": EntityKind,
        "id": EntityID,
        "wanted": bool,
        "environment": Optional[str],
        "active": bool,
        "attempts": int,
        "sinceMs": Optional[int],
        "since": Optional[str],
        "error": Optional[InspectFailure],
    },
)

InspectList = TypedDict(
    "InspectList",
    {
        "list": ListName,
        "params": Dict[str, str],
        "phase": Literal["idle", "loading", "loaded", "failure"],
        "items": int,
        "pages": int,
        "hasMore": bool,
        "stale": bool,
        "loading": bool,
        "shifted": NotRequired[str],
        "fetchedMs": Optional[int],
        "fetched": Optional[str],
        "error": Optional[InspectFailure],
    },
)

InspectWaitingRequest = TypedDict(
    "InspectWaitingRequest",
    {
        "request": str,
        "priority": Literal["user", "visible", "display", "preload"],
        "sinceMs": Optional[int],
        "since": Optional[str],
    },
)

InspectHoldsRateLimitReason = TypedDict(
    "InspectHoldsRateLimitReason",
    {
        "status": Optional[int],
        "header": Optional[str],
        "value": Optional[str],
    },
)

InspectHoldsRateLimit = TypedDict(
    "InspectHoldsRateLimit",
    {
        "untilMs": int,
        "until": str,
        "reason": InspectHoldsRateLimitReason,
    },
)

# Calls waiting for a connection, the rate limit or the hold, oldest first: `total` found,
# the first `limit` of them in `list`, `omitted` = total − listed.
InspectHoldsWaiting = TypedDict(
    "InspectHoldsWaiting",
    {
        "total": int,
        "omitted": int,
        "list": List[InspectWaitingRequest],
    },
)

# What keeps the backend's HTTP calls from going out.
InspectHolds = TypedDict(
    "InspectHolds",
    {
        "api": str,
        "environment": str,
        "rateLimit": Optional[InspectHoldsRateLimit],
        "inFlight": int,
        "maxConnections": int,
        "waiting": InspectHoldsWaiting,
    },
)

# Open connections, oldest first: `total` found, the first `limit` of them in `list`,
# `omitted` = total − listed.
InspectResultConnections = TypedDict(
    "InspectResultConnections",
    {
        "total": int,
        "omitted": int,
        "list": List[InspectConnection],
    },
)

# Entities that are pending, being read, retrying, failed, requested or waiting for
# credentials, of `kind` (and `id`) when given; oldest `since` first: `total` found, the
# first `limit` of them in `list`, `omitted` = total − listed.
InspectResultEntities = TypedDict(
    "InspectResultEntities",
    {
        "total": int,
        "omitted": int,
        "list": List[InspectEntity],
    },
)

# Unsettled intents of every environment (of `kind` when given), in the order they were
# last changed; without a state folder, the pending mutations: `total` found, the first
# `limit` of them in `list`, `omitted` = total − listed.
InspectResultOutbox = TypedDict(
    "InspectResultOutbox",
    {
        "total": int,
        "omitted": int,
        "list": List[InspectIntent],
    },
)

# Lists in memory, by name then params: `total` found, the first `limit` of them in
# `list`, `omitted` = total − listed.
InspectResultLists = TypedDict(
    "InspectResultLists",
    {
        "total": int,
        "omitted": int,
        "list": List[InspectList],
    },
)

# The items behind `stats`' counters. Only the sections asked for are present. Each list
# is bounded by `limit` and says how many it left out.
InspectResult = TypedDict(
    "InspectResult",
    {
        "instance": str,
        "uptimeMs": int,
        "now": str,
        "limit": int,
        "connections": NotRequired[InspectResultConnections],
        "entities": NotRequired[InspectResultEntities],
        "outbox": NotRequired[InspectResultOutbox],
        "lists": NotRequired[InspectResultLists],
        "holds": NotRequired[Optional[InspectHolds]],
    },
)

SyncResultSettledItem = TypedDict(
    "SyncResultSettledItem",
    {
        "kind": EntityKind,
        "id": EntityID,
        "outcome": Literal["confirmed", "requested", "refused", "rolledBack"],
        "state": EntityState,
    },
)

SyncResultWaitingItem = TypedDict(
    "SyncResultWaitingItem",
    {
        "kind": EntityKind,
        "id": EntityID,
        "reason": Literal["credentials", "rateLimit", "timeout"],
        "state": EntityState,
    },
)

# What `sync` waited for: the intents that settled, and those that still wait, in byte
# order of kind then id.
SyncResult = TypedDict(
    "SyncResult",
    {
        "settled": List[SyncResultSettledItem],
        "waiting": List[SyncResultWaitingItem],
    },
)

# What became of an intent: `pending` and `waiting` may still change; the others are
# final. `unknown`: it settled in a run that stopped before writing how (a power loss);
# the entity's state says where it stands.
MutationOutcome = Literal["pending", "waiting", "confirmed", "requested", "refused", "rolledBack", "superseded", "unknown"]

# Why it failed or waits, as the entity's state `error` showed it.
MutationEntryError = TypedDict(
    "MutationEntryError",
    {
        "code": int,
        "message": str,
        "retryable": bool,
    },
)

# One intent in the ledger (`getMutations`, `mutationOutcome`).
MutationEntry = TypedDict(
    "MutationEntry",
    {
        "seq": int,
        "kind": EntityKind,
        "id": EntityID,
        "intent": bool,
        "outcome": MutationOutcome,
        "acceptedAt": str,
        "settledAt": NotRequired[str],
        "attempts": int,
        "client": NotRequired[str],
        "environment": NotRequired[str],
        "error": NotRequired[MutationEntryError],
    },
)

# A page of the ledger.
GetMutationsResult = TypedDict(
    "GetMutationsResult",
    {
        "entries": List[MutationEntry],
        "next": int,
        "last": int,
        "more": bool,
        "truncated": bool,
    },
)

# The params of the `mutationOutcome` notification (see `x-notifications`).
MutationOutcomeParams = TypedDict(
    "MutationOutcomeParams",
    {
        "subscription": str,
        "seq": int,
        "entry": MutationEntry,
    },
)

UnsubscribeResult = TypedDict(
    "UnsubscribeResult",
    {
        "ok": Literal[True],
    },
)

SetInterfaceStateResult = TypedDict(
    "SetInterfaceStateResult",
    {
        "accepted": int,
    },
)

ConfigureResult = TypedDict(
    "ConfigureResult",
    {
        "environment": str,
    },
)


# What each method answers (its `result`), by method name.
METHOD_RESULTS: Dict[str, Any] = {
    "initialize": InitializeResult,
    "shutdown": None,
    "rpc.discover": Dict[str, Any],
    "stats": Stats,
    "inspect": InspectResult,
    "follow": EntityState,
    "unfollow": EntityState,
    "setFollowState": EntityState,
    "getFollowState": EntityState,
    "subscribe": SubscribeResult,
    "unsubscribe": UnsubscribeResult,
    "fetchList": ListState,
    "getEntity": EntityState,
    "setInterfaceState": SetInterfaceStateResult,
    "sync": SyncResult,
    "getMutations": GetMutationsResult,
    "configure": ConfigureResult,
}
