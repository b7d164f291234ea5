"""examples/serving's kt_serve ($KT_BUILD_DIR/kt_serve), the test server of service trials: it
starts on a free loopback port (--port 0, the port read from its "listening on" line), answers
/health once prepared, a JSON completion whose usage counts match, an SSE stream of one event
per token ending with [DONE] whose text equals the JSON completion's for the same seed (and the
usage chunk of stream_options.include_usage), the same text with dense and ffd attention,
400/404/405 with a JSON error, each fault flag (--fail-rate, --stall-ms, --die-after,
--never-ready), --max-inflight, and exit 0 on SIGTERM and SIGINT (also mid-stream). Every server
is stopped in tearDown, which checks with kill(pid, 0) that none is left. Skips (77) where
kt_serve was not built (no libmicrohttpd)."""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BUILD = os.environ.get("KT_BUILD_DIR", "")
SERVE = os.path.join(BUILD, "kt_serve")
if not BUILD or not os.path.exists(SERVE):
    print("skipping: kt_serve was not built (libmicrohttpd-dev is missing, or KT_BUILD_DIR unset)")
    sys.exit(77)

# a small model so that preparing it and every token are quick
SMALL = ["--model", "qwen2.5-0.5b", "--layers", "1", "--context", "64"]
PROMPT = "measure the kernel inside the server"


def request(port, method, path, body=None, timeout=120):
    """(status, content type, body bytes) of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, dict):
            body = json.dumps(body)
        conn.request(method, path, body=body,
                     headers={"Content-Type": "application/json"} if body is not None else {})
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read()
    finally:
        conn.close()


def complete(port, **fields):
    status, _, data = request(port, "POST", "/v1/completions", fields)
    return status, json.loads(data)


class Server:
    def __init__(self, args):
        self.log = tempfile.NamedTemporaryFile(prefix="kt_serve_", suffix=".log", delete=False)
        self.proc = subprocess.Popen([SERVE, "--port", "0"] + SMALL + args, stdout=self.log,
                                     stderr=self.log, start_new_session=True)
        self.pid = self.proc.pid
        self.port = None

    def stderr(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_line(self, text, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            log = self.stderr()
            if text in log:
                return log
            if self.proc.poll() is not None:
                raise AssertionError(f"kt_serve exited {self.proc.returncode}: {log}")
            time.sleep(0.05)
        raise AssertionError(f"no '{text}' from kt_serve in {timeout} s: {self.stderr()}")

    def wait_listening(self):
        log = self.wait_line("kt_serve: listening on 127.0.0.1:")
        line = [ln for ln in log.splitlines() if "listening on" in ln][0]
        self.port = int(line.rsplit(":", 1)[1])
        return self.port

    def wait_ready(self, timeout=120):
        self.wait_listening()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            status, _, body = request(self.port, "GET", "/health")
            if status == 200:
                return json.loads(body)
            if self.proc.poll() is not None:
                raise AssertionError(f"kt_serve exited {self.proc.returncode}: {self.stderr()}")
            time.sleep(0.05)
        raise AssertionError(f"kt_serve not ready in {timeout} s: {self.stderr()}")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode

    def cleanup(self):
        self.stop(signal.SIGKILL)
        self.log.close()
        os.unlink(self.log.name)


def stream(port, timeout=120, on_event=None, **fields):
    """The data payloads of an SSE completion, in order ('[DONE]' included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(dict(fields, stream=True)),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200, (r.status, r.read())
        assert r.getheader("Content-Type") == "text/event-stream"
        events = []
        while True:
            line = r.readline()
            if not line:
                return events
            line = line.decode().rstrip("\n")
            if line.startswith("data: "):
                events.append(line[len("data: "):])
                if on_event:
                    on_event(events)
    finally:
        conn.close()


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.cleanup()
        for s in self.servers:
            with self.assertRaises(ProcessLookupError):
                os.kill(s.pid, 0)

    def start(self, *args):
        s = Server(list(args))
        self.servers.append(s)
        return s

    def test_completion_and_stream(self):
        s = self.start()
        self.assertEqual({"status": "ok"}, s.wait_ready())
        status, doc = complete(s.port, prompt=PROMPT, max_tokens=7, seed=11)
        self.assertEqual(200, status, doc)
        self.assertEqual("text_completion", doc["object"])
        self.assertEqual("qwen2.5-0.5b", doc["model"])
        self.assertTrue(doc["id"])
        choice = doc["choices"][0]
        self.assertEqual(("length", 0), (choice["finish_reason"], choice["index"]))
        self.assertEqual(7, len(choice["text"].split()))
        self.assertEqual({"prompt_tokens": 6, "completion_tokens": 7, "total_tokens": 13},
                         doc["usage"])
        # the same request again: the same text (deterministic in prompt and seed)
        self.assertEqual(choice["text"], complete(s.port, prompt=PROMPT, max_tokens=7,
                                                  seed=11)[1]["choices"][0]["text"])
        events = stream(s.port, prompt=PROMPT, max_tokens=7, seed=11)
        self.assertEqual("[DONE]", events[-1])
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertEqual(7, len(chunks))
        self.assertEqual(choice["text"], "".join(c["choices"][0]["text"] for c in chunks))
        self.assertEqual([None] * 6 + ["length"],
                         [c["choices"][0]["finish_reason"] for c in chunks])
        self.assertEqual({"text_completion"}, {c["object"] for c in chunks})
        self.assertEqual(1, len({c["id"] for c in chunks}))
        # stream_options.include_usage: one more chunk, with no choices and the usage
        events = stream(s.port, prompt=PROMPT, max_tokens=3, seed=11,
                        stream_options={"include_usage": True})
        self.assertEqual(5, len(events))
        self.assertEqual("[DONE]", events[-1])
        last = json.loads(events[-2])
        self.assertEqual([], last["choices"])
        self.assertEqual({"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9},
                         last["usage"])
        self.assertNotIn("usage", json.loads(events[-3]))
        # another seed, another text (the sampler follows the seed)
        texts = {complete(s.port, prompt=PROMPT, max_tokens=7, seed=k)[1]["choices"][0]["text"]
                 for k in range(4)}
        self.assertGreater(len(texts), 1)
        self.assertEqual(0, s.stop())
        self.assertIn("stopped by signal 15", s.stderr())

    def test_dense_and_ffd_agree(self):
        dense, ffd = self.start("--attention", "dense"), self.start("--attention", "ffd")
        dense.wait_ready()
        ffd.wait_ready()
        for seed in (1, 2):
            a = complete(dense.port, prompt="hello server", max_tokens=8, seed=seed)[1]
            b = complete(ffd.port, prompt="hello server", max_tokens=8, seed=seed)[1]
            self.assertEqual(a["choices"][0]["text"], b["choices"][0]["text"])

    def test_errors(self):
        s = self.start()
        s.wait_ready()
        cases = [
            ("POST", "/v1/completions", "{not json", 400, "not valid JSON"),
            ("POST", "/v1/completions", "[1, 2]", 400, "JSON object"),
            ("POST", "/v1/completions", {"max_tokens": "many"}, 400, "max_tokens"),
            ("POST", "/v1/completions", {"max_tokens": 0}, 400, "max_tokens"),
            ("POST", "/v1/completions", {"prompt": 5}, 400, "prompt"),
            ("POST", "/v1/completions", {"stream": "yes"}, 400, "stream"),
            ("POST", "/v1/completions", {"stream_options": 1}, 400, "stream_options"),
            # 60 prompt words + 10 tokens over a context of 64
            ("POST", "/v1/completions", {"prompt": "w " * 60, "max_tokens": 10}, 400, "context"),
            ("GET", "/nope", None, 404, "no route"),
            ("GET", "/v1/completions", None, 405, "use POST"),
            ("POST", "/health", "{}", 405, "use GET"),
        ]
        for method, path, body, code, text in cases:
            with self.subTest(method=method, path=path, body=body):
                status, ctype, data = request(s.port, method, path, body)
                self.assertEqual(code, status, data)
                self.assertEqual("application/json", ctype)
                err = json.loads(data)["error"]
                self.assertIn(text, err["message"])
                self.assertEqual(code, err["code"])
        # at the limit exactly: 54 + 10 = 64 tokens
        status, doc = complete(s.port, prompt="w " * 54, max_tokens=10)
        self.assertEqual((200, 64), (status, doc["usage"]["total_tokens"]))

    def test_fail_rate(self):
        s = self.start("--fail-rate", "0.5", "--seed", "3")
        s.wait_ready()
        codes = [complete(s.port, prompt="x", max_tokens=1) for _ in range(24)]
        statuses = [c[0] for c in codes]
        self.assertEqual({200, 500}, set(statuses))
        self.assertIn("fail-rate", [c[1] for c in codes if c[0] == 500][0]["error"]["message"])
        self.assertEqual(200, request(s.port, "GET", "/health")[0])
        # seeded: a second server with the same seed fails the same requests
        t = self.start("--fail-rate", "0.5", "--seed", "3")
        t.wait_ready()
        self.assertEqual(statuses, [complete(t.port, prompt="x", max_tokens=1)[0]
                                    for _ in range(24)])

    def test_stall_and_max_inflight(self):
        stall_ms = 3000
        s = self.start("--stall-ms", str(stall_ms), "--max-inflight", "1")
        s.wait_ready()
        for _ in range(9):
            self.assertEqual(200, complete(s.port, prompt="x", max_tokens=1)[0])
        tenth = {}

        def send():
            # again while a probe below holds the slot for a moment (503 over --max-inflight)
            while True:
                t0 = time.monotonic()
                status, doc = complete(s.port, prompt="x", max_tokens=1)
                tenth["status"], tenth["s"] = status, time.monotonic() - t0
                if status != 503 or "max-inflight" not in doc["error"]["message"]:
                    return

        th = threading.Thread(target=send)
        th.start()
        # while the 10th stalls it holds the one slot: the others are refused with 503. The
        # probes are bad JSON (400 when a slot is free), so that none of them is numbered (and
        # stalls) in place of the 10th.
        refused = False
        while th.is_alive() and not refused:
            status, _, data = request(s.port, "POST", "/v1/completions", "{probe")
            refused = status == 503 and b"max-inflight" in data
            if not refused:
                self.assertEqual(400, status, data)
                time.sleep(0.02)
        th.join()
        self.assertTrue(refused)
        self.assertEqual(200, tenth["status"])
        self.assertGreaterEqual(tenth["s"], stall_ms / 1000 * 0.95)  # a lower bound only

    def test_die_after(self):
        s = self.start("--die-after", "2")
        s.wait_ready()
        self.assertEqual(200, complete(s.port, prompt="x", max_tokens=2)[0])
        self.assertEqual(2, len(stream(s.port, prompt="x", max_tokens=1)))
        self.assertEqual(3, s.proc.wait(60))
        self.assertIn("--die-after 2", s.stderr())

    def test_never_ready(self):
        s = self.start("--never-ready")
        s.wait_listening()
        s.wait_line("--never-ready: /health stays 503")
        status, _, body = request(s.port, "GET", "/health")
        self.assertEqual(503, status)
        self.assertNotEqual("ok", json.loads(body)["status"])
        self.assertEqual(503, complete(s.port, prompt="x")[0])
        self.assertEqual(0, s.stop())

    def test_signals_stop_it(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig=sig):
                s = self.start()
                s.wait_ready()
                self.assertEqual(0, s.stop(sig))

    def test_sigterm_mid_stream(self):
        s = self.start("--context", "4096", "--layers", "2")
        s.wait_ready()

        def on_event(events):
            if len(events) == 1:
                s.proc.send_signal(signal.SIGTERM)

        try:
            events = stream(s.port, prompt="x", max_tokens=4000, on_event=on_event)
        except (http.client.HTTPException, ConnectionError):
            events = []
        self.assertNotIn("[DONE]", events)
        self.assertEqual(0, s.proc.wait(60))

    def test_bad_flags(self):
        for args, code in (([], 2), (["--port", "0", "--attention", "sparse"], 2),
                           (["--port", "0", "--model", "no-such-model"], 2),
                           (["--port", "0", "--host", "localhost"], 2)):
            with self.subTest(args=args):
                p = subprocess.run([SERVE] + args, capture_output=True, text=True, timeout=60)
                self.assertEqual(code, p.returncode, p.stderr)
                self.assertIn("kt_serve:", p.stderr)


if __name__ == "__main__":
    unittest.main()
