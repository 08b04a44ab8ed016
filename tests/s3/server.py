"""An S3-compatible server on loopback for the tests: moto's S3 in server mode (what s3fs's own tests use),
counting the requests it serves.

    python tests/s3/server.py [--no-conditional-writes]

prints the port it listens on, then serves until killed. `GET /_requests` returns the requests served
since the last `DELETE /_requests` as ["METHOD /bucket/key?query", ...]. `--no-conditional-writes` drops
If-None-Match headers, as a store without conditional writes does.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

REQUESTS_PATH = "/_requests"  # not a valid bucket name, so never an S3 path


class CountingApp:
    def __init__(self, app, conditional_writes: bool) -> None:
        self.app = app
        self.conditional_writes = conditional_writes
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self.conditional_lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == REQUESTS_PATH:
            with self.lock:
                body = json.dumps(self.requests).encode()
                if environ["REQUEST_METHOD"] == "DELETE":
                    self.requests = []
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        query = environ.get("QUERY_STRING", "")
        with self.lock:
            self.requests.append(f"{environ['REQUEST_METHOD']} {path}{'?' + query if query else ''}")
        if not self.conditional_writes:
            environ.pop("HTTP_IF_NONE_MATCH", None)
        elif environ.get("HTTP_IF_NONE_MATCH") and environ["REQUEST_METHOD"] == "PUT":
            # moto checks the condition, then stores: two conditional PUTs of one key served at once by this
            # threaded server could both pass, which S3 never lets happen. One at a time, as S3 decides them.
            with self.conditional_lock:
                return list(self.app(environ, start_response))
        return self.app(environ, start_response)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-conditional-writes", action="store_true")
    args = parser.parse_args()
    app = CountingApp(DomainDispatcherApplication(create_backend_app), not args.no_conditional_writes)
    server = make_server("127.0.0.1", args.port, app, threaded=True)
    print(server.server_port, flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
