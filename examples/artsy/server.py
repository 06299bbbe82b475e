#!/usr/bin/env python3
"""A loopback imitation of Artsy's v1 follow API (artists, genes, profiles), with fault injection.

Standard library only. The endpoints, encodings, answer shapes and 404 rules follow what
Artsy's iOS app (artsy/eigen) sends and expects; ENDPOINTS.md cites the sources and marks
what had to be guessed. The control API under /_control/ lets tests count requests,
seed state and queue faults. See README.md.
"""

import hashlib
import json
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, unquote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

# kind -> (plural used by the list endpoint, label used in Gravity-style error texts)
KINDS = {"artist": ("artists", "Artist"), "gene": ("genes", "Gene"), "profile": ("profiles", "Profile")}
UNAUTHORIZED = {"error": "Unauthorized", "text": "The access token is invalid or has expired."}


def _oid(*parts):
    """A stable 24-hex id, shaped like the Mongo ids Gravity uses for `_id` and follow ids."""
    return hashlib.md5(":".join(parts).encode()).hexdigest()[:24]


def _artist(slug, name, nationality, birthday, deathday="", works=0, forsale=0):
    years = f"{birthday}-{deathday}" if deathday else f"born {birthday}"
    base = f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}"
    return {"_id": _oid("artist", slug), "id": slug, "name": name, "sortable_id": slug,
            "years": years, "birthday": birthday, "deathday": deathday, "nationality": nationality,
            "blurb": f"{name} (demo data).", "published_artworks_count": works,
            "forsale_artworks_count": forsale, "image_url": f"{base}/:version.jpg",
            "image_versions": ["square", "large"],
            "image_urls": {v: f"{base}/{v}.jpg" for v in ("square", "large")}}


def _gene(slug, name, artists=0, artworks=0):
    return {"_id": _oid("gene", slug), "id": slug, "name": name,
            "description": f"{name} (demo data).", "counts": {"artists": artists, "artworks": artworks},
            "follow_count": artists * 10, "image_versions": ["thumb", "square500"],
            "image_url": f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}/:version.jpg"}


def _profile(slug, name, owner_type):
    return {"_id": _oid("profile", slug), "id": slug, "owner_type": owner_type,
            "owner": {"id": slug, "name": name}, "follow_count": 1000,
            "default_icon_version": "square140",
            "icon": {"image_urls": {"square140": f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}/square140.png"}}}


def _synthetic(kind, slug):
    """Detail object for an id that /_control/follows introduced (test setup only)."""
    name = slug.replace("-", " ").title()
    return {"artist": lambda: _artist(slug, name, "", ""), "gene": lambda: _gene(slug, name),
            "profile": lambda: _profile(slug, name, "User")}[kind]()


SEED_CATALOG = {
    "artist": [_artist("banksy", "Banksy", "British", "1974", works=120, forsale=80),
               _artist("andy-warhol", "Andy Warhol", "American", "1928", "1987", 9000, 3000),
               _artist("kaws", "KAWS", "American", "1974", works=900, forsale=500),
               _artist("yayoi-kusama", "Yayoi Kusama", "Japanese", "1929", works=2000, forsale=900),
               _artist("jean-michel-basquiat", "Jean-Michel Basquiat", "American", "1960", "1988", 400, 60),
               _artist("keith-haring", "Keith Haring", "American", "1958", "1990", 1500, 700),
               _artist("cindy-sherman", "Cindy Sherman", "American", "1954", works=600, forsale=150),
               _artist("ai-weiwei", "Ai Weiwei", "Chinese", "1957", works=500, forsale=200)],
    "gene": [_gene("pop-art", "Pop Art", 800, 30000), _gene("street-art", "Street Art", 600, 20000),
             _gene("photography", "Photography", 9000, 200000), _gene("minimalism", "Minimalism", 700, 15000),
             _gene("abstract-art", "Abstract Art", 5000, 150000)],
    "profile": [_profile("gagosian", "Gagosian", "PartnerGallery"),
                _profile("david-zwirner", "David Zwirner", "PartnerGallery"),
                _profile("pace-gallery", "Pace Gallery", "PartnerGallery"),
                _profile("white-cube", "White Cube", "PartnerGallery"),
                _profile("the-armory-show", "The Armory Show", "Fair")],
}
SEED_FOLLOWS = {"artist": ["andy-warhol"], "gene": ["pop-art"], "profile": ["gagosian"]}


class State(demoserver.State):
    def seed(self):
        self.catalog = {k: {o["id"]: o for o in objs} for k, objs in SEED_CATALOG.items()}
        self.follows, self.follow_seq = {}, 0
        for kind in KINDS:
            self.set_follows(kind, SEED_FOLLOWS.get(kind, []))

    def set_follows(self, kind, ids):
        """Replace a kind's followed set; `ids` is in listing order (newest first)."""
        now = datetime.now(timezone.utc).replace(microsecond=0)
        self.follows[kind] = {}
        for age, slug in reversed(list(enumerate(dict.fromkeys(ids)))):
            if slug not in self.catalog[kind]:
                self.catalog[kind][slug] = _synthetic(kind, slug)
            self.add_follow(kind, slug, now - timedelta(seconds=age))

    def add_follow(self, kind, slug, when=None):
        self.follow_seq += 1  # follow ids are new for every follow, yet the same from run to run
        when = when or datetime.now(timezone.utc).replace(microsecond=0)
        self.follows[kind][slug] = {"id": _oid("follow", kind, slug, str(self.follow_seq)),
                                    "created_at": when.isoformat()}

    def follow_object(self, kind, slug):
        """The follow as Gravity answers it: its own id, with the whole followed object inside."""
        rec = self.follows[kind][slug]
        return {"id": rec["id"], kind: self.catalog[kind][slug], "created_at": rec["created_at"]}

    def listing(self, kind):
        return list(reversed(self.follows[kind]))  # newest follow first


def _template_regex(template):
    return re.compile("^" + re.escape(template).replace(re.escape("{id}"), "([^/]+)") + "$")


def build_routes():
    """(method, template, regex, handler name, kind), one row per endpoint of ENDPOINTS.md."""
    rows = []
    for kind, (plural, _) in KINDS.items():
        rows += [("POST", f"/api/v1/me/follow/{kind}", "follow", kind),
                 ("DELETE", f"/api/v1/me/follow/{kind}/{{id}}", "unfollow", kind),
                 ("GET", f"/api/v1/me/follow/{plural}", "follows", kind),
                 ("GET", f"/api/v1/{kind}/{{id}}", "detail", kind)]
    rows.append(("GET", "/api/v1/me/follow/profile/{id}", "follow_state", "profile"))
    return [(m, t, _template_regex(t), h, k) for m, t, h, k in rows]


ROUTES = build_routes()


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status, self.body = status, body


class Handler(demoserver.Handler):
    server_version = "ArtsyDemo/1.0"
    state_class = State

    def route_of(self, method, path, body):
        self.matched = next((r for r in ROUTES if r[0] == method and r[2].match(path)), None)
        return f"{method} {self.matched[1] if self.matched else '<unmatched>'}"

    def params(self, query, body):
        """Query, form and JSON body merged, as Grape (Gravity's framework) merges them."""
        merged = parse_qs(query, keep_blank_values=True)
        ctype = self.headers.get("Content-Type", "")
        if body and "json" in ctype:
            try:
                obj = json.loads(body)
            except ValueError:
                raise ApiError(400, {"error": "Invalid JSON body"})
            if isinstance(obj, dict):
                for key, value in obj.items():  # JSON scalars become the strings a form would carry
                    for v in value if isinstance(value, list) else [value]:
                        merged.setdefault(key, []).append(v if isinstance(v, str) else json.dumps(v))
        elif body:
            for key, values in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items():
                merged.setdefault(key, []).extend(values)
        return merged

    def answer(self, method, url, body):
        st, route, path = self.state, self.matched, url.path
        if st.token is not None and self.headers.get("X-Access-Token") != st.token:
            return 401, UNAUTHORIZED, None
        if route is None:
            return 404, {"error": "Not Found"}, None
        _, _, regex, name, kind = route
        slug = unquote(regex.match(path).group(1)) if regex.groups else None
        try:
            params = self.params(url.query, body)
            with st.lock:
                return getattr(self, "api_" + name)(kind, slug, params)
        except ApiError as err:
            return err.status, err.body, None

    # ---- the Artsy endpoints (called with the state lock held) ------------------------------

    def known(self, kind, slug, followed=False):
        """404 with Gravity's wording: unknown id, or (when `followed` is asked) not followed."""
        if slug not in self.state.catalog[kind]:
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Found"})
        if followed and slug not in self.state.follows[kind]:
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Followed"})

    def api_follow(self, kind, _slug, params):
        slug = (params.get(f"{kind}_id") or [""])[0]
        if not slug:
            raise ApiError(400, {"error": f"{kind}_id is missing"})
        self.known(kind, slug)
        created = slug not in self.state.follows[kind]
        if created:
            self.state.add_follow(kind, slug)
        return (201 if created else 200), self.state.follow_object(kind, slug), None

    def api_unfollow(self, kind, slug, _params):
        self.known(kind, slug, followed=True)
        obj = self.state.follow_object(kind, slug)
        del self.state.follows[kind][slug]
        return 200, obj, None

    def api_follow_state(self, kind, slug, _params):
        self.known(kind, slug, followed=True)
        return 200, self.state.follow_object(kind, slug), None

    def api_detail(self, kind, slug, _params):
        self.known(kind, slug)
        return 200, self.state.catalog[kind][slug], None

    def api_follows(self, kind, _slug, params):
        plural = KINDS[kind][0]
        ids = params.get(f"{plural}[]", []) + params.get(plural, [])
        slugs = self.state.listing(kind)
        if ids:
            wanted = set(ids)
            slugs = [s for s in slugs if s in wanted]
        try:
            page = int((params.get("page") or ["1"])[0])
            size = int((params.get("size") or ["0"])[0])
        except ValueError:
            raise ApiError(400, {"error": "page and size must be integers"})
        if page < 1 or size < 0:
            raise ApiError(400, {"error": "page must be >= 1 and size >= 0"})
        total = len(slugs)
        paged = not ids or "size" in params or "page" in params
        if paged:
            size = min(size or 10, 100)
            slugs = slugs[(page - 1) * size: page * size]
        elif not slugs:  # an id check none of whose ids is followed: 404, as eigen expects (ENDPOINTS.md)
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Followed"})
        flag = (params.get("total_count") or [""])[0].lower()
        headers = {"X-Total-Count": str(total)} if flag in ("1", "true") else None
        return 200, [self.state.follow_object(kind, s) for s in slugs], headers

    # ---- the control API (beyond demoserver's) -------------------------------------------------

    def control_api(self, key, data):
        st = self.state
        if key == "POST follows":
            if not isinstance(data, dict) or not set(data) <= set(KINDS) or not all(
                    isinstance(v, list) and all(isinstance(s, str) and s for s in v) for v in data.values()):
                return self.send_json(400, {"error": "expected {kind: [ids]} with kinds among " + ", ".join(KINDS)})
            with st.lock:
                for kind, ids in data.items():
                    st.set_follows(kind, ids)
        if key in ("GET follows", "POST follows"):
            with st.lock:
                return self.send_json(200, {kind: st.listing(kind) for kind in KINDS})
        return None


if __name__ == "__main__":
    demoserver.run(Handler, "Demo imitation of Artsy's follow API (see README.md).", token_env="ARTSY_DEMO_TOKEN",
                   token_help="require X-Access-Token on /api requests (default: $ARTSY_DEMO_TOKEN)")
