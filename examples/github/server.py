#!/usr/bin/env python3
"""A loopback imitation of GitHub's REST API for following users and starring repositories,
with its rate limits and fault injection.

Standard library only. Endpoints, statuses, headers and answer shapes follow GitHub's REST
documentation; README.md cites the page for each and marks what had to be guessed. The
control API under /_control/ lets tests read the server's state and request log, seed
state, switch rate limits on and queue faults.
"""

import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

DOCS = "https://docs.github.com/rest"
LIMIT = 5000  # the primary limit of a user's token, per hour
USERS = ["octocat", "torvalds", "gvanrossum", "mojombo", "defunkt", "pjhyett", "wycats", "ezmobius"]
REPOS = ["octocat/hello-world", "octocat/Spoon-Knife", "torvalds/linux", "python/cpython", "swiftlang/swift",
         "curl/curl", "akheron/jansson", "github/docs"]


def simple_user(login, number):
    """GitHub's `simple-user` object (the fields a list item carries)."""
    return {"login": login, "id": number, "node_id": f"MDQ6VXNlcj{number}", "type": "User", "site_admin": False,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
            "url": f"https://api.github.com/users/{login}", "html_url": f"https://github.com/{login}"}


def repository(full_name, number):
    owner, name = full_name.split("/")
    return {"id": number, "node_id": f"MDEwOlJlcG9zaXRvcnk{number}", "name": name, "full_name": full_name,
            "owner": simple_user(owner, 1000 + number), "private": False,
            "html_url": f"https://github.com/{full_name}", "description": f"{name} (demo data)",
            "url": f"https://api.github.com/repos/{full_name}", "stargazers_count": 100 * number}


class Rule(demoserver.Rule):
    def default_body(self):
        return {"message": demoserver.PHRASES.get(self.status, "Error"), "documentation_url": DOCS}


class State(demoserver.State):
    def seed(self):
        self.users = {login: simple_user(login, n + 1) for n, login in enumerate(USERS)}
        self.repos = {name: repository(name, n + 1) for n, name in enumerate(REPOS)}
        self.following = []  # logins, in the order followed
        self.starred = []  # full names, in the order starred
        self.primary_until = 0  # epoch seconds: the primary limit is spent until then
        self.secondary_until = 0.0  # epoch seconds: a secondary limit until then
        self.used = 0

    def snapshot(self):
        return {"following": list(self.following), "starred": list(self.starred)}


class ApiError(Exception):
    def __init__(self, status, message, headers=None):
        super().__init__(status)
        self.status, self.message, self.headers = status, message, headers or {}


class Handler(demoserver.Handler):
    server_version = "GitHubDemo/1.0"
    rule_class = Rule
    state_class = State

    def log_extra(self):
        return {"t": self.arrived_epoch}  # wall clock: tests compare it with rate limit resets

    def bug_body(self):
        return {"message": "Internal Server Error (demo server bug, see its stderr)"}

    # ---- the API ---------------------------------------------------------------------------

    def rate_headers(self, remaining=None):
        """x-ratelimit-* on every answer (rate-limits-for-the-rest-api#checking-the-status-of-your-rate-limit)."""
        st = self.state
        reset = st.primary_until or int(time.time()) + 3600
        left = 0 if remaining == 0 else max(0, LIMIT - st.used)
        return {"x-ratelimit-limit": str(LIMIT), "x-ratelimit-remaining": str(left),
                "x-ratelimit-used": str(LIMIT - left), "x-ratelimit-reset": str(reset),
                "x-ratelimit-resource": "core"}

    def answer(self, method, url, body):
        try:
            return self.api(method, url)
        except ApiError as error:
            return error.status, {"message": error.message, "documentation_url": DOCS}, error.headers

    def api(self, method, parts):
        st, path = self.state, parts.path
        with st.lock:
            token = st.token
        auth = self.headers.get("Authorization", "")
        if token is not None:
            if not auth:
                raise ApiError(401, "Requires authentication")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() not in ("bearer", "token") or given != token:
                raise ApiError(401, "Bad credentials")
        now = time.time()
        with st.lock:
            if now < st.primary_until:
                raise ApiError(403, "API rate limit exceeded for user ID 1. (demo)", self.rate_headers(remaining=0))
            if now < st.secondary_until:
                wait = str(max(1, int(st.secondary_until - now + 0.999)))
                raise ApiError(403, "You have exceeded a secondary rate limit. Please wait a few minutes before "
                                    "you try again. (demo)", {"retry-after": wait, **self.rate_headers()})
            st.used += 1
            status, body, headers = self.route(method, path, parse_qs(parts.query))
            return status, body, {**headers, **self.rate_headers()}

    def route(self, method, path, query):
        """(status, body, headers) of one endpoint; called under the lock."""
        st = self.state
        # Segments are decoded one by one: an encoded "/" (%2F) stays inside its segment,
        # so "octocat%2Fhello-world" is one segment and no route has it (GitHub: 404).
        segments = [unquote(s) for s in path.split("/")[1:]]
        if segments[:2] == ["user", "following"] and len(segments) == 3:
            return self.toggle(method, segments[2], st.users, st.following)
        if segments[:2] == ["user", "starred"] and len(segments) == 4:
            return self.toggle(method, f"{segments[2]}/{segments[3]}", st.repos, st.starred)
        if method == "GET" and path == "/user/following":
            return self.page(query, [st.users[login] for login in st.following], path)
        if method == "GET" and path == "/user/starred":
            # sort=created, direction=desc by default: the latest star first.
            return self.page(query, [st.repos[name] for name in reversed(st.starred)], path)
        raise ApiError(404, "Not Found")

    @staticmethod
    def toggle(method, name, known, chosen):
        """PUT adds, DELETE removes (both 204, also when nothing changes), GET answers 204 or 404."""
        if name not in known:
            raise ApiError(404, "Not Found")
        if method == "GET":
            if name not in chosen:
                raise ApiError(404, "Not Found")
        elif method == "PUT":
            if name not in chosen:
                chosen.append(name)
        elif method == "DELETE":
            if name in chosen:
                chosen.remove(name)
        else:
            raise ApiError(404, "Not Found")
        return 204, None, {}

    def page(self, query, items, path):
        """One page and its Link header (using-pagination-in-the-rest-api)."""
        try:
            per_page = min(100, max(1, int(query.get("per_page", ["30"])[0])))
            number = max(1, int(query.get("page", ["1"])[0]))
        except ValueError:
            raise ApiError(422, "Validation Failed")
        last = max(1, -(-len(items) // per_page))
        base = f"http://{self.headers.get('Host')}{path}"

        def url(n):
            return f"<{base}?{urlencode({'per_page': per_page, 'page': n})}>"

        links = []
        if number > 1:
            links += [f'{url(number - 1)}; rel="prev"']
        if number < last:
            links += [f'{url(number + 1)}; rel="next"', f'{url(last)}; rel="last"']
        if number > 1:
            links += [f'{url(1)}; rel="first"']
        return 200, items[(number - 1) * per_page:number * per_page], {"Link": ", ".join(links)} if links else {}

    # ---- control (beyond demoserver's) --------------------------------------------------------

    def control_api(self, key, arg):
        st = self.state
        if key == "GET state":
            with st.lock:
                return self.send_json(200, st.snapshot())
        if key == "POST state":  # {"following": [...], "starred": [...]}: seed
            with st.lock:
                for login in arg.get("following", []):
                    st.users.setdefault(login, simple_user(login, 100 + len(st.users)))
                for name in arg.get("starred", []):
                    st.repos.setdefault(name, repository(name, 100 + len(st.repos)))
                st.following = list(arg.get("following", st.following))
                st.starred = list(arg.get("starred", st.starred))
                return self.send_json(200, st.snapshot())
        if key == "POST primary-limit":  # {"reset_in": seconds}: the limit is spent until then
            with st.lock:
                st.primary_until = int(time.time()) + int(arg["reset_in"])
                return self.send_json(200, {"reset": st.primary_until})
        if key == "POST secondary-limit":  # {"retry_after": seconds}
            with st.lock:
                st.secondary_until = time.time() + float(arg["retry_after"])
                return self.send_json(200, {"until": st.secondary_until})
        return None


if __name__ == "__main__":
    demoserver.run(Handler, "Demo imitation of GitHub's follow and star API (see README.md).", port=8788,
                   token_env="GITHUB_DEMO_TOKEN",
                   token_help="require Authorization: Bearer TOKEN (default: $GITHUB_DEMO_TOKEN; none: no auth)")
