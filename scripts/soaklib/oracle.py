"""The soak's oracle: what the run saw and was told, and the checks of the end
(scripts/soak's docstring lists them)."""

from __future__ import annotations

from collections import Counter, defaultdict

from soaklib.chaos import KINDS

HUGE_AGE_MS = 10**9  # getFollowState answered from memory: what the store holds


class Violations:
    def __init__(self, limit=50):
        self.items: list[str] = []
        self.by_check: Counter = Counter()
        self.limit = limit

    def add(self, check: str, message: str):
        self.by_check[check] += 1
        if len(self.items) < self.limit:
            self.items.append(f"[{check}] {message}")

    def __bool__(self):
        return bool(self.by_check)


def state_key(state):
    if "list" in state and "kind" not in state:
        return ("list", state["list"])
    return (state["kind"], state["id"])


class Oracle:
    """Mixed into the soak: it records every acknowledgement, refusal and version seen
    (``Soak.__init__`` sets the state), and checks them against the backend at the end."""

    def saw(self, instance, key, version):
        if instance is None:
            return
        span = self.seen.get((instance, key))
        if span is None:
            self.seen[(instance, key)] = [version, version]
        else:
            if version < span[0]:
                span[0] = version
            if version > span[1]:
                span[1] = version

    def acknowledged(self, session, key, value, state):
        self.acked += 1
        if state["following"] != value and not state["pending"]:
            # A reply always shows the intent (or one that replaced it: then pending or newer).
            pass
        order = (session.instance, state["version"])
        prev = self.last_ack.get(key)
        if prev is None or order > prev[:2]:
            self.last_ack[key] = (session.instance, state["version"], value, session.name)
        elif order == prev[:2] and prev[2] != value:
            self.violations.add("intents", f"{key}: two intents acknowledged at one version {order} with "
                                           f"different values ({prev[3]}: {prev[2]}, {session.name}: {value})")
        self.saw(session.instance, key, state["version"])
        self.final_untouched.discard(key)

    def not_acknowledged(self, session, key, value, why, settled_version=None):
        """`settled_version`: an awaited intent refused was processed at or before it; an
        intent whose reply was lost to a kill may have been processed at any time."""
        self.unacked += 1
        self.unacked_by_key[key].append((session.instance, value, why, settled_version))

    def acknowledged_awaited(self, session, key, value, state):
        # An awaited reply is released once the entity settled: the intent was durable and
        # acknowledged at the state's version or before. A newer intent may have replaced it
        # (then the state shows that one, and that one's own reply carries its order).
        self.acked += 1
        self.saw(session.instance, key, state["version"])
        if state["following"] == value:
            order = (session.instance, state["version"])
            prev = self.last_ack.get(key)
            if prev is None or order > prev[:2]:
                self.last_ack[key] = (session.instance, state["version"], value, session.name + " (awaited)")
        self.final_untouched.discard(key)

    def observe_notification(self, session, params):
        """A stateChanged on `session`: seq without gaps, versions growing per
        subscription and entity."""
        self.notifications += 1
        seq = params.get("seq")
        if seq != session.expected_seq:
            self.violations.add("seq", f"{session.name} (instance {session.instance}): seq {seq}, expected "
                                       f"{session.expected_seq}")
        session.expected_seq = (seq if isinstance(seq, int) else session.expected_seq) + 1
        state = params["state"]
        key = state_key(state)
        version = state["version"]
        sub = session.subs.setdefault(params["subscription"], {})
        before = sub.get(key)
        if before is not None and version <= before:
            self.violations.add("versions", f"{session.name} sub {params['subscription']} {key}: notified version "
                                            f"{version} after {before}")
        sub[key] = max(version, before or 0)
        if key[0] != "list":
            self.saw(session.instance, key, version)
        if key not in session.last_state or session.last_state[key]["version"] < version:
            session.last_state[key] = state

    async def check(self):
        session = await self.control_session()
        backend = self.demo.call("GET", "/_control/follows")
        held = {(kind, i) for kind in KINDS for i in backend.get(kind, [])}
        self.checked = 0
        self.ambiguous = []
        final: dict = {}
        for key in self.entities:
            kind, id_ = key
            st = await session.request("getFollowState", {"kind": kind, "id": id_, "maxAgeMs": HUGE_AGE_MS})
            final[key] = st
            on_backend = key in held
            self.checked += 1
            # 2. the store equals the backend
            if not (st["following"] == st["confirmed"] == on_backend) or st["pending"]:
                self.violations.add("store", f"{key}: the store shows following {st['following']}, confirmed "
                                             f"{st['confirmed']}, pending {st['pending']} (error {st['error']}); "
                                             f"the backend holds {on_backend}")
            # 1. no acknowledged intent lost
            ack = self.last_ack.get(key)
            if ack is None:
                continue
            inst, version, value, who = ack
            later = [u for u in self.unacked_by_key.get(key, []) if u[1] != value and u[0] is not None and (
                u[0] > inst or (u[0] == inst and (u[3] is None or u[3] > version)))]
            if later:
                self.ambiguous.append(key)
                continue
            if on_backend != value:
                self.violations.add("lost", f"{key}: the last acknowledged intent (instance {inst}, version "
                                            f"{version}, by {who}) was {'follow' if value else 'unfollow'}; the "
                                            f"backend holds {'following' if on_backend else 'not following'}")
        # 3. versions
        by_key = defaultdict(dict)
        for (inst, key), span in self.seen.items():
            by_key[key][inst] = span
        for key, spans in by_key.items():
            order = sorted(spans)
            for a, b in zip(order, order[1:]):
                if spans[a][1] >= spans[b][0]:
                    self.violations.add("versions", f"{key}: instance {a} showed version {spans[a][1]}, the later "
                                                    f"instance {b} showed {spans[b][0]}")
            last = self.instances_count() - 1
            if key in final and last in spans and final[key]["version"] < spans[last][1]:
                self.violations.add("versions", f"{key}: final version {final[key]['version']} is below "
                                                f"{spans[last][1]}, shown earlier by the same instance")
        session.close()

    def instances_count(self):
        return len(self.instances)
