#!/usr/bin/env python3
"""A fault-injecting TCP proxy on 127.0.0.1, in front of a surveyd.

Each accepted connection gets one mode, drawn by the proxy's policy:

  pass               forward both ways untouched
  drop_response      forward the whole request, wait until the server has answered completely
                     (it processed the request), then reset the client's connection without a
                     byte of the answer — the phone sees the connection die
  truncate_response  forward the request, pass half of the answer, then reset the client
  reset_mid_upload   forward the head and part of the body (a random share of Content-Length),
                     then reset both sides — the server sees the client vanish mid-body
  delay              read the whole request, hold it for a while (possibly longer than the
                     client's timeout, so a retry can overtake it), then forward it and pass the
                     answer back if the client is still there
  refuse             reset the client's connection before forwarding anything (airplane mode)
  duplicate_request  deliver the whole request to the server twice, one after the other, and
                     pass the second answer back (a network that delivers a request twice)

With --rules FILE (used by the SurveySync tests) the mode of each connection is chosen by its
request line instead, so a test puts one fault on exactly the request it means. Each line of FILE
is `MODE [sticky] PATTERN`: the first line whose PATTERN (`*` for any) occurs in the request line
decides; a line without `sticky` is used once and removed. No matching line: pass. Every
connection is logged to FILE.log as `MODE<TAB>request line`.

Used by test_faults.py; can also run standalone in front of a server you started:

  python3 Harness/fault_proxy.py --upstream 8080 --listen 9090 --weights pass=1,drop_response=1

With --cut it is another proxy, for any protocol (chaos_postgres.py puts it between surveyd and
PostgreSQL): it passes bytes both ways untouched, and on SIGUSR1 drops every connection it holds
at once (both sides; the peers see the connection die, as when a network path or a firewall's
state is lost). New connections are accepted as before. --upstream is then a TCP port or the path
of a Unix socket; each cut is logged as `cut N connections`:

  python3 Harness/fault_proxy.py --cut --upstream /tmp/pg/.s.PGSQL.5432 --listen 6432
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import struct
import sys
import threading
import time
from typing import Callable, Optional

MODES = ("pass", "drop_response", "truncate_response", "reset_mid_upload", "delay", "refuse", "duplicate_request")


def _rst(sock: Optional[socket.socket]) -> None:
    """Close with a TCP RST (SO_LINGER 0)."""
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _close(sock: Optional[socket.socket]) -> None:
    if sock is not None:
        try:
            sock.close()
        except OSError:
            pass


def _read_request(sock: socket.socket, limit_s: float = 30.0) -> tuple[bytes, int, int]:
    """Reads one request head (and returns what came with it): (bytes so far, head length, content length)."""
    sock.settimeout(limit_s)
    data = bytearray()
    while b"\r\n\r\n" not in data:
        c = sock.recv(65536)
        if not c:
            return bytes(data), -1, 0
        data += c
        if len(data) > 1 << 20:
            break
    if b"\r\n\r\n" not in data:
        return bytes(data), -1, 0
    head_len = data.index(b"\r\n\r\n") + 4
    cl = 0
    for line in bytes(data[:head_len]).decode("latin-1").split("\r\n")[1:]:
        if line.lower().startswith("content-length:"):
            try:
                cl = int(line.split(":", 1)[1].strip())
            except ValueError:
                cl = 0
    return bytes(data), head_len, cl


def _read_whole_request(sock: socket.socket) -> tuple[bytes, bool]:
    """One request head and its Content-Length body: (bytes read, complete). b"" if no head came."""
    data, head_len, cl = _read_request(sock)
    if head_len < 0:
        return b"", False
    request = bytearray(data)
    sock.settimeout(30)
    while len(request) < head_len + cl:
        c = sock.recv(min(65536, head_len + cl - len(request)))
        if not c:
            return bytes(request), False
        request += c
    return bytes(request), True


class FaultProxy:
    def __init__(self, upstream_port: int, weights: Optional[dict[str, float]] = None, seed: int = 1,
                 listen_port: int = 0, max_delay: float = 1.5, policy: Optional[Callable[[int, random.Random], str]] = None,
                 rules_file: Optional[str] = None):
        self.upstream_port = upstream_port
        self.weights = weights or {"pass": 1.0}
        self.rng = random.Random(seed)
        self.rng_lock = threading.Lock()
        self.max_delay = max_delay
        self.policy = policy
        self.rules_file = rules_file
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.counts: dict[str, int] = {m: 0 for m in MODES}
        self.client_gone = 0  # connections the client closed before its request was complete
        self.connections = 0
        self.lock = threading.Lock()
        self.active = 0
        self.active_cv = threading.Condition(self.lock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name="fault-proxy", daemon=True)

    # -- lifecycle

    def start(self) -> "FaultProxy":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        _close(self.sock)

    def drain(self, timeout: float = 30.0) -> bool:
        """Waits until no connection is being handled (delayed requests have been forwarded)."""
        deadline = time.monotonic() + timeout
        with self.active_cv:
            while self.active > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.active_cv.wait(left)
        return True

    @property
    def faults(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "pass")

    # -- internals

    def _choose(self, n: int) -> str:
        with self.rng_lock:
            if self.policy:
                return self.policy(n, self.rng)
            modes = list(self.weights)
            return self.rng.choices(modes, weights=[self.weights[m] for m in modes])[0]

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                n = self.connections
                self.active += 1
            mode = self._choose(n)
            threading.Thread(target=self._handle, args=(c, mode), daemon=True).start()

    def _gone(self) -> None:
        with self.lock:
            self.client_gone += 1

    def _count(self, mode: str) -> None:
        with self.lock:
            self.counts[mode] += 1

    def _handle(self, client: socket.socket, mode: str) -> None:
        upstream = None
        try:
            if self.rules_file:
                mode = self._mode_by_rules(client)
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
            getattr(self, "_" + mode)(client, upstream)
        except OSError:
            _rst(client)
        finally:
            _close(upstream)
            _close(client)
            with self.active_cv:
                self.active -= 1
                self.active_cv.notify_all()

    def _mode_by_rules(self, client: socket.socket) -> str:
        """Peeks at the request line (nothing is consumed) and applies the rules file."""
        client.settimeout(10)
        line = ""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                data = client.recv(4096, socket.MSG_PEEK)
            except OSError:
                break
            if not data:
                break
            if b"\r\n" in data or len(data) >= 4096:
                line = data.split(b"\r\n", 1)[0].decode("latin-1")
                break
            time.sleep(0.002)
        mode = "pass"
        with self.rng_lock:
            try:
                with open(self.rules_file, encoding="utf-8") as f:
                    rules = [r for r in f.read().splitlines() if r.strip()]
            except OSError:
                rules = []
            for i, rule in enumerate(rules):
                parts = rule.split(" ", 1)
                sticky = len(parts) > 1 and parts[1].startswith("sticky ")
                pattern = parts[1][len("sticky "):] if sticky else (parts[1] if len(parts) > 1 else "*")
                if parts[0] in MODES and (pattern == "*" or pattern in line):
                    mode = parts[0]
                    if not sticky:
                        del rules[i]
                        with open(self.rules_file + ".tmp", "w", encoding="utf-8") as f:
                            f.write("\n".join(rules) + ("\n" if rules else ""))
                        os.replace(self.rules_file + ".tmp", self.rules_file)
                    break
            with open(self.rules_file + ".log", "a", encoding="utf-8") as f:
                f.write(f"{mode}\t{line}\n")
        return mode

    def _refuse(self, client: socket.socket, upstream: socket.socket) -> None:
        self._count("refuse")
        _rst(client)

    def _duplicate_request(self, client: socket.socket, upstream: socket.socket) -> None:
        request, complete = _read_whole_request(client)
        if not complete:
            return
        self._count("duplicate_request")
        upstream.sendall(bytes(request))
        upstream.settimeout(60)
        while True:  # the first delivery's answer goes nowhere
            try:
                if not upstream.recv(65536):
                    break
            except OSError:
                break
        second = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
        try:
            second.sendall(bytes(request))
            self._pump(second, client)
            _shutdown(client)
        finally:
            _close(second)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, limit: Optional[int] = None) -> int:
        n = 0
        while limit is None or n < limit:
            try:
                c = src.recv(65536 if limit is None else min(65536, limit - n))
            except OSError:
                break
            if not c:
                break
            try:
                dst.sendall(c)
            except OSError:
                break
            n += len(c)
        return n

    def _forward_request(self, client: socket.socket, upstream: socket.socket) -> bool:
        """Forwards one complete request (head + Content-Length body). False if the client left early."""
        data, head_len, cl = _read_request(client)
        if head_len < 0:
            return False
        upstream.sendall(data)
        remaining = head_len + cl - len(data)
        if remaining > 0:
            return self._pump(client, upstream, remaining) == remaining
        return True

    def _pass(self, client: socket.socket, upstream: socket.socket) -> None:
        self._count("pass")
        t = threading.Thread(target=lambda: (self._pump(client, upstream), _shutdown(upstream)), daemon=True)
        t.start()
        self._pump(upstream, client)
        _shutdown(client)
        t.join(timeout=30)

    def _drop_response(self, client: socket.socket, upstream: socket.socket) -> None:
        if not self._forward_request(client, upstream):
            self._gone()
            return
        self._count("drop_response")
        upstream.settimeout(60)
        while True:  # let the server answer completely: the request was processed
            try:
                if not upstream.recv(65536):
                    break
            except OSError:
                break
        _rst(client)

    def _truncate_response(self, client: socket.socket, upstream: socket.socket) -> None:
        if not self._forward_request(client, upstream):
            self._gone()
            return
        upstream.settimeout(60)
        answer = bytearray()
        while True:
            try:
                c = upstream.recv(65536)
            except OSError:
                break
            if not c:
                break
            answer += c
        self._count("truncate_response")
        try:
            client.sendall(bytes(answer[: max(1, len(answer) // 2)]))
        except OSError:
            pass
        _rst(client)

    def _reset_mid_upload(self, client: socket.socket, upstream: socket.socket) -> None:
        data, head_len, cl = _read_request(client)
        if head_len < 0:
            return
        if cl < 16:
            # Nothing to cut: reset right after the head (the body never arrives).
            cut = head_len
        else:
            with self.rng_lock:
                cut = head_len + self.rng.randint(1, cl - 1)
        self._count("reset_mid_upload")
        upstream.sendall(data[:cut])
        if len(data) < cut:
            self._pump(client, upstream, cut - len(data))
        time.sleep(0.02)
        _rst(upstream)
        _rst(client)

    def _delay(self, client: socket.socket, upstream: socket.socket) -> None:
        body, _ = _read_whole_request(client)
        if not body:
            return
        self._count("delay")
        with self.rng_lock:
            d = self.rng.uniform(0.05, self.max_delay)
        time.sleep(d)
        # The client may have given up meanwhile; the request goes to the server anyway, as a
        # slow network would deliver it.
        upstream.sendall(bytes(body))
        self._pump(upstream, client)
        _shutdown(client)


def _shutdown(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def parse_weights(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        k, v = part.split("=")
        if k not in MODES:
            raise SystemExit(f"unknown mode {k}; modes: {', '.join(MODES)}")
        out[k] = float(v)
    return out


class CutProxy:
    """Passes bytes both ways between 127.0.0.1:listen_port and the upstream (a TCP port on
    127.0.0.1 or a Unix socket path); `cut()` drops every connection it holds at once."""

    def __init__(self, upstream: str, listen_port: int = 0):
        self.upstream = upstream
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs: set[tuple[socket.socket, socket.socket]] = set()
        self.connections = 0
        self.cuts = 0
        self.cut_connections = 0

    def _connect_upstream(self) -> socket.socket:
        if self.upstream.isdigit():
            u = socket.create_connection(("127.0.0.1", int(self.upstream)), timeout=10)
        else:
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            u.settimeout(10)
            u.connect(self.upstream)
        u.settimeout(None)
        return u

    def serve_forever(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(c,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        try:
            upstream = self._connect_upstream()
        except OSError:
            # The upstream is down (a restart): the peer sees the connection die, as it would
            # connecting to the upstream itself.
            _rst(client)
            return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = (client, upstream)
        with self.lock:
            self.pairs.add(pair)
            self.connections += 1
        t = threading.Thread(target=self._pump_then_close, args=(upstream, client, pair), daemon=True)
        t.start()
        self._pump_then_close(client, upstream, pair)
        t.join()

    def _pump_then_close(self, src: socket.socket, dst: socket.socket, pair) -> None:
        while True:
            try:
                c = src.recv(65536)
                if not c:
                    break
                dst.sendall(c)
            except OSError:
                break
        # One side ended: so does the other (a half-open pair would keep a backend waiting).
        for s in pair:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.lock:
            if pair in self.pairs:
                self.pairs.discard(pair)
            else:
                return
        for s in pair:
            _close(s)

    def cut(self) -> int:
        """Drops every connection held now, both sides, with a reset; returns how many."""
        with self.lock:
            pairs = list(self.pairs)
            self.pairs.clear()
            self.cuts += 1
            self.cut_connections += len(pairs)
        for pair in pairs:
            for s in pair:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
                # shutdown wakes the pump threads blocked in recv (close alone would not).
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                _close(s)
        return len(pairs)


def cut_proxy_main(upstream: str, listen: int) -> int:
    import signal
    proxy = CutProxy(upstream, listen)
    print(f"cut proxy on 127.0.0.1:{proxy.port} -> {upstream}", flush=True)

    def on_usr1(signum, frame):  # noqa: ARG001
        # In a thread of its own: a signal handler runs between two bytecodes of the main thread
        # and must not wait for the lock that thread may hold.
        threading.Thread(target=lambda: print(f"cut {proxy.cut()} connections", flush=True), daemon=True).start()

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGTERM, lambda *_: (print(f"connections {proxy.connections}, cuts {proxy.cuts}, "
                                                    f"connections cut {proxy.cut_connections}", flush=True),
                                              os._exit(0)))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    while True:
        time.sleep(3600)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstream", required=True, help="surveyd's port on 127.0.0.1 (with --cut: a port or a Unix socket path)")
    p.add_argument("--listen", type=int, default=0)
    p.add_argument("--weights", default="pass=2,drop_response=1,truncate_response=1,reset_mid_upload=1,delay=1")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rules", default=None, help="choose each connection's mode by its request line (see above)")
    p.add_argument("--cut", action="store_true", help="pass bytes untouched; SIGUSR1 drops every connection (see above)")
    a = p.parse_args()
    if a.cut:
        return cut_proxy_main(a.upstream, a.listen)
    if not a.upstream.isdigit():
        p.error("--upstream must be a port (a Unix socket only with --cut)")
    proxy = FaultProxy(int(a.upstream), parse_weights(a.weights), seed=a.seed, listen_port=a.listen, rules_file=a.rules).start()
    print(f"fault proxy on 127.0.0.1:{proxy.port} -> 127.0.0.1:{a.upstream}", flush=True)
    try:
        while True:
            time.sleep(5)
            print(f"connections {proxy.connections}, modes {proxy.counts}", flush=True)
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
