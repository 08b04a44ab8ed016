"""A fault-injecting HTTP/1.1 proxy in front of the loopback S3 server (tests/s3/server.py): S3 as a user meets it
over a bad network. Some requests fail before the store sees them, some are applied and their answer lost, some
are sent twice (a client's retry that the first attempt beat), some are answered late.

    proxy = FaultProxy(s3_server.endpoint, seed=7, rate=0.1, modes=("after",)).start()
    options = {**s3_server.options(), "s3.endpoint": proxy.endpoint}   # the table's storage options
    ...
    proxy.stop()

Fault modes (one per faulted request):

- ``before``: answer 503 SlowDown without forwarding (the store never saw it);
- ``after``: forward it (the store applies it), then lose the answer: close the connection without a response
  (``answer="close"``) or answer 503 SlowDown (``answer="503"``); the random plan picks either;
- ``twice``: forward it twice and return the second answer (a conditional PUT then answers 412, a create 409...);
- ``delay``: hold it for some milliseconds, then forward it.

Which requests fail: a fraction ``rate`` of all requests, drawn from a seeded random.Random once per request in
arrival order (under a lock), and any request that a Rule picks (method, key regex, the n-th match). A client that
sends its requests in the same order meets the same faults, so a failing run replays with its seed (the keys of
data files carry uuids, the positions of the faults do not).

Request bodies are forwarded byte for byte with their framing: Content-Length, or `Transfer-Encoding: chunked`
(aws-chunked payloads with trailers as botocore sends them) read chunk by chunk and passed on raw.
"""

from __future__ import annotations

import http.client
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

BEFORE, AFTER, TWICE, DELAY = "before", "after", "twice", "delay"
MODES = (BEFORE, AFTER, TWICE, DELAY)
CLOSE, UNAVAILABLE = "close", "503"  # how an `after` fault loses the answer

# headers of one hop only: not passed on (Expect: the proxy has read the body already, and answered 100 itself)
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade",
                         "expect"})
_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
              b"<Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>")
_SNAPSHOT = re.compile(r"/snapshot/snapshot-\d+$")


def request_kind(method: str, path: str) -> str:
    """What a request does to a table, for the counts: `snapshot PUT` (the commit's create of snapshot-N),
    `manifest PUT` (manifests, manifest lists, index manifests), `PUT` (data, hints, schemas), `GET` (reads),
    `LIST`, `HEAD`, `DELETE` (single or multi-object), `POST`."""
    parts = urlsplit(path)
    key = parts.path.lstrip("/").partition("/")[2]
    if method == "PUT":
        if _SNAPSHOT.search(parts.path):
            return "snapshot PUT"
        return "manifest PUT" if "/manifest/" in parts.path else "PUT"
    if method == "GET":
        return "LIST" if not key or "list-type" in parts.query else "GET"
    if method == "DELETE" or (method == "POST" and "delete" in parts.query.split("&")):
        return "DELETE"
    return method


@dataclass
class Rule:
    """Fault the ``nth`` (1-based) request matching ``method`` and ``key`` (a regex searched in the path) and the
    ``times - 1`` matching requests after it, with ``mode`` (``answer``: how an `after` fault loses the answer).
    ``header``: the request must carry it too (`If-None-Match`: a conditional create). A client's retry of a faulted
    request is a match of its own: ``times=1`` lets the retry through."""

    mode: str
    method: str | None = None
    key: str | None = None
    nth: int = 1
    times: int = 1
    answer: str = CLOSE
    header: str | None = None
    seen: int = 0

    def matches(self, method: str, path: str, headers: Any) -> bool:
        return ((self.method is None or method == self.method)
                and (self.key is None or re.search(self.key, urlsplit(path).path) is not None)
                and (self.header is None or self.header in headers))


@dataclass(frozen=True)
class Decision:
    mode: str | None
    answer: str = CLOSE
    delay_s: float = 0.0


@dataclass
class FaultProxy:
    """The proxy (see the module's docstring). ``upstream``: the S3 server's endpoint; ``rate`` of the requests get
    a fault, its mode drawn from ``modes``; ``rules`` pick requests by what they are; ``delay_ms``: the range of a
    delay. Counts: ``requests``, ``by_kind`` (requests per request_kind), ``faults`` (per mode, `after` also per
    answer as `after/close`, `after/503`), ``faults_by_kind`` ((mode, kind) pairs) and ``log`` (request number,
    mode, method, path of each fault)."""

    upstream: str
    seed: int = 0
    rate: float = 0.0
    modes: Sequence[str] = MODES
    rules: list[Rule] = field(default_factory=list)
    delay_ms: tuple[float, float] = (5.0, 150.0)
    requests: int = 0
    by_kind: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    faults_by_kind: Counter = field(default_factory=Counter)
    log: list[tuple[int, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = set(self.modes) - set(MODES)
        if unknown:
            raise ValueError(f"unknown fault modes {sorted(unknown)}; known: {MODES}")
        self.enabled = True
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        target = urlsplit(self.upstream)
        self._target = (target.hostname or "127.0.0.1", target.port or 80)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> FaultProxy:
        """Serve on a free loopback port, in a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.proxy = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="s3-fault-proxy", daemon=True)
        self._thread.start()
        return self

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start() the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and drop the clients' open connections (their handler threads end with them)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for s in list(self._sockets):
                _shut(s)
        self._server = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No faults (random or by rule) while inside: set-up and checks that must not be disturbed."""
        self.enabled = False
        try:
            yield
        finally:
            self.enabled = True

    # ---------------------------------------------------------------- the plan
    def decide(self, method: str, path: str, headers: Any) -> Decision:
        """Count the request and decide its fault (None: forward it as it is)."""
        kind = request_kind(method, path)
        with self._lock:
            self.requests += 1
            self.by_kind[kind] += 1
            if not self.enabled or path.startswith("/_requests"):
                return Decision(None)
            mode, answer = None, CLOSE
            for rule in self.rules:
                if rule.matches(method, path, headers):
                    rule.seen += 1
                    if rule.nth <= rule.seen < rule.nth + rule.times:
                        mode, answer = rule.mode, rule.answer
                        break
            # one draw per request whatever the rules did, so that a rule does not shift the random plan
            if self._rng.random() < self.rate and mode is None:
                mode = self._rng.choice(list(self.modes))
                answer = self._rng.choice((CLOSE, UNAVAILABLE))
            if mode is None:
                return Decision(None)
            delay = self._rng.uniform(*self.delay_ms) / 1000 if mode == DELAY else 0.0
            self.faults[mode] += 1
            if mode == AFTER:
                self.faults[f"{AFTER}/{answer}"] += 1
            self.faults_by_kind[(mode, kind)] += 1
            self.log.append((self.requests, mode if mode != AFTER else f"{AFTER}/{answer}", method, path))
            return Decision(mode, answer, delay)

    def summary(self) -> str:
        """The counts, for a report."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items()))
        modes = ", ".join(f"{m} {n}" for m, n in sorted(self.faults.items()))
        by_kind = "; ".join(f"{m} on {k}: {n}" for (m, k), n in sorted(self.faults_by_kind.items()))
        return f"{self.requests} requests ({kinds}); faults: {modes or 'none'}; {by_kind}"

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            (self._sockets.add if add else self._sockets.discard)(sock)


class _Handler(BaseHTTPRequestHandler):
    """One client connection (keep-alive: many requests), with its own connection to the store."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms wait for a delayed ACK
    server: Any

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None
        self.server.proxy._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._upstream is not None:
                self._upstream.close()
            self.server.proxy._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # thousands of requests: the counts say what happened

    def _proxy(self) -> None:
        body = self._read_body()
        proxy: FaultProxy = self.server.proxy
        decision = proxy.decide(self.command, self.path, self.headers)
        if decision.mode == BEFORE:
            self._send(503, "Slow Down", [("Content-Type", "application/xml")], _SLOW_DOWN)
            return
        if decision.mode == DELAY:
            time.sleep(decision.delay_s)
        try:
            answer = self._forward(body)
            if decision.mode == TWICE:
                answer = self._forward(body)
        except OSError:
            self._send(502, "Bad Gateway", [("Content-Type", "text/plain")], b"the S3 server did not answer")
            return
        if decision.mode == AFTER:
            if decision.answer == UNAVAILABLE:
                self._send(503, "Slow Down", [("Content-Type", "application/xml")], _SLOW_DOWN)
            else:
                self.close_connection = True  # no answer at all: the client sees the connection closed
            return
        self._send(*answer)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _proxy

    def _read_body(self) -> bytes:
        """The request's body as it came (chunked framing and trailers included)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = bytearray()
            while True:
                line = self.rfile.readline(65537)
                raw += line
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers (aws-chunked checksums), up to the empty line
                        trailer = self.rfile.readline(65537)
                        raw += trailer
                        if trailer in (b"\r\n", b"\n", b""):
                            return bytes(raw)
                raw += self.rfile.read(size + 2)  # the chunk and its CRLF
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send the request to the store; (status, reason, headers, body) of its answer."""
        for attempt in range(2):
            reused = self._upstream is not None
            if self._upstream is None:
                fresh = http.client.HTTPConnection(*self.server.proxy._target, timeout=60)
                fresh.connect()
                fresh.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as for the client's side
                self._upstream = fresh
            conn = self._upstream
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in _HOP_BY_HOP:
                        conn.putheader(name, value)
                conn.endheaders(body or None)
                response = conn.getresponse()
                data = response.read()
                if response.will_close:
                    conn.close()
                    self._upstream = None
                return response.status, response.reason, response.getheaders(), data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                self._upstream = None
                # a kept-alive connection the store closed meanwhile: the request never reached it, so send it
                # once more on a new one (never a request a fresh connection carried: that could apply it twice)
                if not reused or attempt:
                    raise
        raise AssertionError("unreachable")

    def _send(self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response_only(status, reason)
        for name, value in headers:
            lower = name.lower()
            if lower in _HOP_BY_HOP or lower == "transfer-encoding" or (lower == "content-length"
                                                                        and self.command != "HEAD"):
                continue
            self.send_header(name, value)
        # the body is whole: a length (a HEAD keeps the store's, the object's size)
        if self.command != "HEAD" and status not in (204, 304) and status >= 200:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD" and data:
            self.wfile.write(data)
        self.wfile.flush()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
