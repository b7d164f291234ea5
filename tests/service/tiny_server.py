"""A tiny HTTP server for tests/cli/test_service.py: GET /health and POST /v1/completions.

Behaviour by flags: --delay-ms (every completion), --slow-ms (completions whose body holds
"slow"), --fail (every completion answers 500), --never-ready (/health answers 503), --die-after N
(exits with status 3 after N completions), --text (the answer's text), --pidfile (its pid)."""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--delay-ms", type=float, default=0)
p.add_argument("--slow-ms", type=float, default=0)
p.add_argument("--fail", action="store_true")
p.add_argument("--never-ready", action="store_true")
p.add_argument("--die-after", type=int, default=0)
p.add_argument("--text", default="hello")
p.add_argument("--pidfile", default="")
args = p.parse_args()
if args.pidfile:  # written whole, then renamed: a reader never sees half of it
    with open(args.pidfile + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(args.pidfile + ".tmp", args.pidfile)
done = [0]
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if args.never_ready:
            self.answer(503, {"status": "loading"})
        else:
            self.answer(200, {"status": "ok"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode()
        delay = args.delay_ms + (args.slow_ms if "slow" in body else 0)
        time.sleep(delay / 1e3)
        if args.fail:
            sys.stderr.write("tiny_server: failing on purpose\n")
            self.answer(500, {"error": {"message": "failing on purpose"}})
            return
        self.answer(200, {"choices": [{"text": args.text, "index": 0}],
                          "usage": {"completion_tokens": 4}})
        with lock:
            done[0] += 1
            if args.die_after and done[0] >= args.die_after:
                sys.stderr.write("tiny_server: dying on purpose\n")
                sys.stderr.flush()
                os._exit(3)


sys.stderr.write(f"tiny_server: listening on {args.port}\n")
sys.stderr.flush()
ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
