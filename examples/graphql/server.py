#!/usr/bin/env python3
"""A loopback imitation of Artsy's GraphQL API (metaphysics v2) for following artists and genes.

Standard library only, and no GraphQL parser: a request is recognised by the root field its
query text names (followArtist, followGene, artist, gene, artistsConnection, genesConnection),
its variables are read by fixed names, and the answer has a fixed selection whatever the query
selects. README.md cites metaphysics's schema for each field and marks what is guessed. The
control API under /_control/ counts calls, seeds follows and queues faults.
"""

import base64
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

PATHS = ("/v2", "/graphql")
# kind -> (the mutation's id field in its input, the label of Gravity-style error texts)
KINDS = {"artist": ("artistID", "Artist"), "gene": ("geneID", "Gene")}
SEED = {
    "artist": [("banksy", "Banksy"), ("andy-warhol", "Andy Warhol"), ("kaws", "KAWS"),
               ("yayoi-kusama", "Yayoi Kusama"), ("jean-michel-basquiat", "Jean-Michel Basquiat"),
               ("keith-haring", "Keith Haring"), ("cindy-sherman", "Cindy Sherman"), ("ai-weiwei", "Ai Weiwei")],
    "gene": [("pop-art", "Pop Art"), ("street-art", "Street Art"), ("minimalism", "Minimalism")],
}
SEED_FOLLOWS = {"artist": ["andy-warhol"], "gene": ["pop-art"]}
SIGNED_OUT = "You need to be signed in to perform this action"  # metaphysics follow_artist.ts


def internal_id(*parts):
    """A stable 24-hex id, shaped like the Mongo ids metaphysics answers as `internalID`."""
    return hashlib.md5(":".join(parts).encode()).hexdigest()[:24]


def cursor_of(offset):
    """graphql-relay's array-connection cursor: base64("arrayconnection:N") (a guess for metaphysics)."""
    return base64.b64encode(f"arrayconnection:{offset}".encode()).decode()


def offset_of(cursor):
    try:
        return int(base64.b64decode(cursor).decode().split(":", 1)[1]) + 1
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def gql_error(message, path=None, status=None):
    """One entry of `errors` (GraphQL spec §7.1.4), with metaphysics's extensions.httpStatusCodes."""
    error = {"message": message}
    if path:
        error["path"] = path
    if status:
        error["extensions"] = {"httpStatusCodes": [status]}
    return error


class Rule(demoserver.Rule):
    """One queued fault, checked when queued so a typo in a test fails at POST /_control/faults.

    match: a regex searched in "operationName query" (none: every GraphQL request);
    status + body: that answer instead of the real one (body default: a GraphQL error);
    errors: a 200 {"errors": errors, "data": null} instead of the real one;
    partial: the real answer (its change made) with one error added: a partial answer;
    delay_ms; times (default 1, null: for ever).
    """

    FIELDS = {"match", "status", "body", "errors", "partial", "delay_ms", "times"}

    def validate(self):
        self.match = re.compile(self.raw["match"]) if self.raw.get("match") is not None else None
        self.errors, self.partial = self.raw.get("errors"), self.raw.get("partial")
        if self.errors is not None and not (isinstance(self.errors, list) and self.errors):
            raise ValueError("errors must be a non-empty list")
        if self.partial is not None and not isinstance(self.partial, str):
            raise ValueError("partial must be the message of the added error")
        if sum(x is not None for x in (self.status, self.errors, self.partial)) != 1 and not self.delay_ms:
            raise ValueError("a rule needs one of status, errors or partial (or only delay_ms)")

    def matches(self, text):
        return self.match is None or self.match.search(text)

    def replaces(self):
        return self.status is not None or self.errors is not None

    def answer(self, uses):
        if self.errors is not None:
            return 200, {"errors": self.errors, "data": None}, None
        return super().answer(uses)

    def default_body(self):
        return {"errors": [gql_error(f"demo fault {self.status}")], "data": None}

class State(demoserver.State):
    def seed(self):
        self.catalog = {k: {slug: name for slug, name in items} for k, items in SEED.items()}
        self.follows = {}  # kind -> {slug: follow internalID}, oldest first
        self.follow_seq = 0
        for kind in KINDS:
            self.set_follows(kind, SEED_FOLLOWS.get(kind, []))
        self.stuck_cursor = False

    def stats(self):
        return {**super().stats(), "operations": dict(self.routes)}

    def set_follows(self, kind, slugs):
        """Replace a kind's followed set; `slugs` in listing order (newest first)."""
        self.follows[kind] = {}
        for slug in reversed(list(dict.fromkeys(slugs))):
            self.catalog[kind].setdefault(slug, slug.replace("-", " ").title())
            self.add_follow(kind, slug)

    def add_follow(self, kind, slug):
        self.follow_seq += 1
        self.follows[kind][slug] = internal_id("follow", kind, slug, str(self.follow_seq))

    def listing(self, kind):
        return list(reversed(self.follows[kind]))  # newest follow first

    def slug(self, kind, key):
        """The slug of an artist or gene named by slug or internalID ("The slug or ID of the Artist")."""
        if key in self.catalog[kind]:
            return key
        return next((s for s in self.catalog[kind] if internal_id(kind, s) == key), None)

    def node(self, kind, slug):
        return {"internalID": internal_id(kind, slug), "slug": slug, "name": self.catalog[kind][slug],
                "isFollowed": slug in self.follows[kind]}


class Handler(demoserver.Handler):
    server_version = "MetaphysicsDemo/1.0"
    rule_class = Rule
    state_class = State

    def bug_body(self):
        return {"errors": [gql_error("Internal Server Error (demo server bug, see its stderr)")]}

    def log_extra(self):
        return {"operation": self.route_label}

    # ---- GraphQL over HTTP ----------------------------------------------------------------

    def request_of(self, path, body):
        """(query, variables, operationName) of a GraphQL POST, or None when there is none."""
        if self.command != "POST" or path not in PATHS:
            return None
        try:
            request = json.loads(body)
            query, variables = request["query"], request.get("variables") or {}
            name = request.get("operationName") or ""
            assert isinstance(query, str) and isinstance(variables, dict) and isinstance(name, str)
        except (ValueError, KeyError, TypeError, AssertionError):
            return None
        return query, variables, name

    def route_of(self, method, path, body):
        """The root field asked for: the operation counted in stats."""
        self.gql = self.request_of(path, body)
        if self.gql is None:
            return "<unmatched>" if method != "POST" or path not in PATHS else "<invalid>"
        return self.operation(self.gql[0])

    def fault_key(self, method, path, body):
        """Faults match the operation's name and query text (an invalid request meets none)."""
        if self.gql is None:
            return None
        query, _, name = self.gql
        return (f"{name} {query}",)

    def answer(self, method, url, body):
        if self.gql is None and self.route_label == "<unmatched>":
            return 404, {"errors": [gql_error(f"no GraphQL endpoint at {method} {url.path}")]}, None
        if self.gql is None:
            return 400, {"errors": [gql_error("Must provide query string.")]}, None
        with self.state.lock:
            answer = self.execute(self.route_label, self.gql[1])
        if self.rule and self.rule.partial is not None:
            answer.setdefault("errors", []).append(gql_error(self.rule.partial, ["followArtist", "popularArtists"]))
        return 200, answer, None

    @staticmethod
    def operation(query):
        """The root field the query asks for, by name (the demo has no parser)."""
        for field in ("followArtist", "followGene", "artistsConnection", "genesConnection"):
            if re.search(rf"\b{field}\s*\(", query):
                return field
        for field in ("artist", "gene"):
            if re.search(rf"\b{field}\s*\(\s*id\s*:", query):
                return field
        return "<unknown>"

    def execute(self, operation, variables):
        st = self.state
        signed_in = st.token is None or self.headers.get("X-Access-Token") == st.token
        if operation in ("followArtist", "followGene"):
            kind = operation[len("follow"):].lower()
            if not signed_in:
                return {"data": {operation: None}, "errors": [gql_error(SIGNED_OUT, [operation])]}
            data = variables.get("input")
            key = data.get(KINDS[kind][0]) if isinstance(data, dict) else None
            slug = st.slug(kind, key) if isinstance(key, str) else None
            if slug is None:
                return {"data": {operation: None},
                        "errors": [gql_error(f"{KINDS[kind][1]} Not Found", [operation], 404)]}
            if data.get("unfollow"):
                st.follows[kind].pop(slug, None)
            elif slug not in st.follows[kind]:
                st.add_follow(kind, slug)
            return {"data": {operation: {kind: st.node(kind, slug), "clientMutationId": None}}}
        if operation in ("artist", "gene"):
            key = variables.get("id")
            slug = st.slug(operation, key) if isinstance(key, str) else None
            if slug is None:
                return {"data": {operation: None},
                        "errors": [gql_error(f"{KINDS[operation][1]} Not Found", [operation], 404)]}
            node = st.node(operation, slug)
            if not signed_in:
                node["isFollowed"] = None  # a guess: the viewer's flag needs a viewer
            return {"data": {operation: node}}
        if operation in ("artistsConnection", "genesConnection"):
            kind = operation[:-len("sConnection")]
            if not signed_in:  # a guess: `me` resolves to null without a viewer, with no error
                return {"data": {"me": None}}
            connection = self.connection_page(kind, variables)
            if connection is None:  # a guess: metaphysics's wording for a bad cursor is not documented
                return {"data": {"me": None}, "errors": [gql_error(f"not a cursor: {variables.get('after')!r}")]}
            return {"data": {"me": {"followsAndSaves": {operation: connection}}}}
        return {"data": None, "errors": [gql_error("the demo server does not know this query (see README.md)")]}

    def connection_page(self, kind, variables):
        """A Relay connection of the follows, newest first (Cursor Connections spec)."""
        st = self.state
        first = variables.get("first", 10)
        first = first if isinstance(first, int) and 1 <= first <= 100 else 10
        after = variables.get("after")
        start = 0 if st.stuck_cursor or after is None else offset_of(after)
        if start is None:
            return None
        slugs = st.listing(kind)
        page = slugs[start:start + first]
        edges = [{"cursor": cursor_of(start + n),
                  "node": {"internalID": st.follows[kind][slug], kind: st.node(kind, slug)}}
                 for n, slug in enumerate(page)]
        return {"edges": edges, "totalCount": len(slugs),
                "pageInfo": {"hasNextPage": start + len(page) < len(slugs), "hasPreviousPage": start > 0,
                             "startCursor": edges[0]["cursor"] if edges else None,
                             "endCursor": edges[-1]["cursor"] if edges else None}}

    # ---- the control API ----------------------------------------------------------------

    def control_api(self, key, data):
        st = self.state
        with st.lock:
            if key == "POST follows":
                if not isinstance(data, dict) or not set(data) <= set(KINDS) or not all(
                        isinstance(v, list) and all(isinstance(s, str) and s for s in v) for v in data.values()):
                    return self.send_json(400, {"error": "expected {kind: [slugs]} with kinds among artist, gene"})
                for kind, slugs in data.items():
                    st.set_follows(kind, slugs)
            if key in ("GET follows", "POST follows"):
                return self.send_json(200, {kind: st.listing(kind) for kind in KINDS})
            if key == "POST stuck_cursor":
                if not isinstance(data, dict) or not isinstance(data.get("on"), bool):
                    return self.send_json(400, {"error": 'expected {"on": true | false}'})
                st.stuck_cursor = data["on"]
                return self.send_json(200, {"on": st.stuck_cursor})
        return None


if __name__ == "__main__":
    demoserver.run(Handler, "Demo imitation of Artsy's GraphQL follow API (see README.md).",
                   token_env="ARTSY_DEMO_TOKEN",
                   token_help="require X-Access-Token for the viewer's data (default: $ARTSY_DEMO_TOKEN)")
