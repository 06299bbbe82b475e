"""The soak's chaos: the demo backend and its injected faults, and the netmodel
process killed with SIGKILL and started again."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from rpcio import AsyncSession, ConnectionLost
from soaklib import log

REPO = Path(__file__).resolve().parents[2]
KINDS = ("artist", "gene", "profile")


class Demo:
    def __init__(self, work: Path):
        self.port_file = work / "demo.port"
        self.stderr = open(work / "logs" / "demo.stderr", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "examples/artsy/server.py"), "--port", "0", "--port-file",
             str(self.port_file), "--quiet"], stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.monotonic() + 10
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"soak: the demo server did not start (see {work}/logs/demo.stderr)")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text())

    def call(self, method, path, body=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = None if body is None else json.dumps(body)
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            raw = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{method} {path}: {resp.status} {raw[:200]!r}")
            return json.loads(raw) if raw else None
        finally:
            conn.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def random_rule(rng: random.Random, kinds_seen: Counter) -> dict:
    """One transient fault; the backend's state changes only where it would in the wild."""
    kind = rng.choice(KINDS)
    plural = kind + "s"
    path = rng.choice([None, f"^/api/v1/me/follow/{kind}$", f"^/api/v1/me/follow/{kind}/",
                       f"^/api/v1/me/follow/{plural}$", "^/api/v1/me/follow/"])
    rule: dict = {"path": path, "times": rng.randint(1, 4)}
    what = rng.choices(["5xx", "429", "drop", "hang", "delay", "applied-drop", "applied-5xx"],
                       weights=[25, 15, 15, 5, 20, 10, 10])[0]
    if what == "5xx":
        rule["status"] = rng.choice([500, 502, 503, 504])
    elif what == "429":
        rule.update(status=429, headers={"Retry-After": rng.choice(["0", "1", "2"])})
    elif what == "drop":
        rule["drop"] = True
    elif what == "hang":
        rule.update(hang=True, times=1)
    elif what == "delay":
        rule["delay_ms"] = rng.randint(20, 1500)
    elif what == "applied-drop":
        rule.update(drop=True, applied=True)
    else:
        rule.update(status=rng.choice([500, 503]), applied=True)
    if rng.random() < 0.2 and "delay_ms" not in rule:
        rule["delay_ms"] = rng.randint(10, 400)  # slow, and then failing
    kinds_seen[what] += 1
    return rule


class Netmodel:
    def __init__(self, args, work: Path, config: Path):
        self.args, self.work, self.config = args, work, config
        self.socket = work / "run" / "nm.sock"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self):
        self.starts += 1
        cmd = [str(self.args.bin), "serve", "--backend", "rest", "--config", str(self.config),
               f"--socket={self.socket}", "--no-stdio", "--when-exhausted", "queue",
               "--state-dir", str(self.work / "state"), "--seed", str(self.args.seed + self.starts),
               "--log-level", self.args.log_level,
               "--max-api-calls-per-second", str(self.args.api_calls_per_second)]
        env = dict(os.environ)
        env.pop("ARTSY_TOKEN", None)
        stderr = open(self.work / "logs" / f"netmodel-{self.starts}.stderr", "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                     env=env)
        stderr.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()  # SIGKILL, our own child by its pid
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                return self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode if self.proc else None


class Chaos:
    """Mixed into the soak: kills at random moments until the kills are over, and
    fault rules sent to the demo server until the soak stops."""

    async def learn_instance(self):
        deadline = time.monotonic() + 30
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.nm.socket))
                session = AsyncSession(reader, writer, "learn")
                try:
                    info = await session.request("initialize", timeout=10)
                finally:
                    session.close()
                instance = info["serverInfo"]["instance"]
                if instance not in self.instances:
                    self.instances[instance] = len(self.instances)
                return instance
            except (ConnectionLost, ConnectionError, OSError, ValueError, KeyError, TypeError, asyncio.TimeoutError):
                if self.nm.proc.poll() is not None:
                    raise SystemExit(f"soak: netmodel exited with {self.nm.proc.returncode} at start "
                                     f"(see {self.work}/logs/netmodel-{self.nm.starts}.stderr)")
                if time.monotonic() > deadline:
                    raise SystemExit("soak: netmodel did not answer within 30 s of its start")
                await asyncio.sleep(0.01)

    async def chaos(self, kill_until):
        rng = random.Random(self.args.seed * 7919 + 1)
        while not self.kills_over:
            pause = rng.expovariate(1 / self.args.kill_every)
            end = time.monotonic() + pause
            while time.monotonic() < end and not self.kill_time_over(kill_until):
                await asyncio.sleep(0.05)
            if self.kill_time_over(kill_until):
                break
            self.nm.kill()
            self.kills += 1
            await asyncio.sleep(rng.uniform(0, 0.3))
            self.nm.start()
            await self.learn_instance()
        self.final_instance = len(self.instances) - 1
        self.final_untouched = {k for k in self.entities}
        self.kills_over = True
        log(f"kills over after {self.kills}; {self.ops} operations so far")

    def kill_time_over(self, kill_until):
        if self.args.ops:
            return self.ops >= self.args.ops * self.args.kill_fraction
        return time.monotonic() >= kill_until

    async def fault_injector(self):
        rng = random.Random(self.args.seed * 104729 + 2)
        while not self.stopping:
            await asyncio.sleep(rng.expovariate(1 / self.args.fault_every))
            if self.stopping:
                break
            rule = random_rule(rng, self.faults)
            try:
                left = await asyncio.to_thread(self.demo.call, "POST", "/_control/faults", rule)
                if len(left) > 20:  # rules wait for matching requests: keep the queue short
                    await asyncio.sleep(0.5)
            except Exception as err:  # the demo server must not fail: that is a setup error
                raise SystemExit(f"soak: the demo server refused a fault rule {rule}: {err}")
