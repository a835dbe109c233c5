#!/usr/bin/env python3
"""Careful Resume with an unmodified browser (`make interop-browser`).

Starts cr-server and cr-relay (20 Mbit/s, 300 ms RTT, one BDP of queue) on
free loopback ports, and one headless Chromium (Debian's `chromium`, driven
over WebDriver by Debian's `chromedriver`; `scripts/setup-deps.sh browser`
installs both) with QUIC forced to the relay. In that one browser process, so
with one TLS session and token cache, the page fetches a short object
(4 KiB: one round trip, no BDP token), then 2 MiB, then 2 MiB again, each over
a new connection: cr-server closes idle connections after 2 s, and each fetch
waits until the server has reported the previous connection and Chromium's
own idle timer (the same 2 s, negotiated) has run out.

Chromium keeps a NEW_TOKEN token only for a server whose session ticket it
already holds, so the short connection leaves it a token only because the
server sends an address token again after the ticket. Fails unless, from
cr-server's per-connection lines: the short connection came without a token,
the first 2 MiB presented one (the short connection's), the second 2 MiB
presented one and engaged Careful Resume (its qlog has the jump), and the
second 2 MiB was at least 1.5x faster than the first, timed in the page
(performance.now() around fetch() and reading the body: handshake to last
byte).

Needs python3 (standard library only), chromium and chromedriver; builds the
release binaries with cargo. Logs, qlogs and the browser profile go to
target/interop-browser/. Ends only the processes it started, by PID; every
wait is bounded. Not part of `make test`.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "interop-browser"
SHORT = 4096
SIZE = 2 * 1024 * 1024
RATE = "20mbit"
RTT = "300ms"
IDLE = 2.0  # seconds: cr-server's idle timeout, so connections end between fetches
FETCH_TIMEOUT = 60  # seconds, for one fetch in the page
REPORT_TIMEOUT = 30  # seconds, for the server to report a connection
MIN_SPEEDUP = 1.5

FETCH = """
const [url, done] = [arguments[0], arguments[arguments.length - 1]];
const start = performance.now();
fetch(url, {cache: 'no-store'})
  .then(r => r.arrayBuffer().then(body =>
    done({ms: performance.now() - start, bytes: body.byteLength, status: r.status})))
  .catch(e => done({error: String(e)}));
"""


def say(*words):
    print("interop-browser:", *words, file=sys.stderr, flush=True)


def die(*words):
    say(*words)
    sys.exit(1)


def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spki_sha256(pem_file):
    """base64(SHA-256(SubjectPublicKeyInfo)) of a PEM certificate, as
    Chromium's --ignore-certificate-errors-spki-list wants it."""
    pem = Path(pem_file).read_text()
    body = pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    der = base64.b64decode("".join(body.split()))

    def tlv(i):  # DER: (tag, start of the content, end)
        tag, n, i = der[i], der[i + 1], i + 2
        if n & 0x80:
            k = n & 0x7F
            n, i = int.from_bytes(der[i : i + k], "big"), i + k
        return tag, i, i + n

    _, tbs, _ = tlv(tlv(0)[1])  # Certificate -> tbsCertificate's content
    i = tbs
    if tlv(i)[0] == 0xA0:  # [0] version
        i = tlv(i)[2]
    for _ in range(5):  # serial, signature, issuer, validity, subject
        i = tlv(i)[2]
    return base64.b64encode(hashlib.sha256(der[i : tlv(i)[2]]).digest()).decode()


class Processes:
    """The processes this script started, ended by PID."""

    def __init__(self):
        self.started = []

    def start(self, args, log):
        proc = subprocess.Popen(
            args, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=ROOT
        )
        self.started.append(proc.pid)
        return proc

    def adopt(self, pid):
        self.started.append(pid)

    def end_all(self):
        for pid in reversed(self.started):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        for pid in reversed(self.started):
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        break
                except ChildProcessError:  # not our child (the browser), or reaped
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass


def wait_for_line(proc, log, pattern, what):
    for _ in range(100):
        if re.search(pattern, Path(log).read_text(errors="replace"), re.M):
            return
        if proc.poll() is not None:
            die(f"{what} exited:\n{Path(log).read_text(errors='replace')}")
        time.sleep(0.1)
    die(f"{what} did not start within 10 s")


class WebDriver:
    """The few WebDriver calls needed, over HTTP to chromedriver."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as e:
            die(f"WebDriver {method} {path}: {e.code} {e.read()[:1000]!r}")

    def wait_ready(self, proc):
        for _ in range(100):
            try:
                urllib.request.urlopen(self.base + "/status", timeout=1).close()
                return
            except OSError:
                if proc.poll() is not None:
                    die("chromedriver exited")
                time.sleep(0.1)
        die("chromedriver did not start within 10 s")

    def new_session(self, binary, args):
        caps = {"browserName": "chrome", "goog:chromeOptions": {"binary": binary, "args": args}}
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, 60)
        self.session = value["sessionId"]
        self.call("POST", self.path("timeouts"), {"script": FETCH_TIMEOUT * 1000})
        return value["capabilities"].get("goog:processID")

    def path(self, what):
        return f"/session/{self.session}/{what}"

    def navigate(self, url):
        self.call("POST", self.path("url"), {"url": url})

    def fetch(self, url):
        body = {"script": FETCH, "args": [url]}
        return self.call("POST", self.path("execute/async"), body, FETCH_TIMEOUT + 10)

    def quit(self):
        if self.session:
            try:
                self.call("DELETE", f"/session/{self.session}", timeout=10)
            except (OSError, SystemExit):
                pass
            self.session = None


def field(key, line):
    m = re.search(rf"\b{key}=(\S+)", line)
    return m.group(1) if m else None


def main():
    for binary in ("chromium", "chromedriver"):
        if not shutil.which(binary):
            die(f"no {binary}: run scripts/setup-deps.sh browser (as root it installs it)")
    chromium = shutil.which("chromium")
    version = subprocess.run(
        [chromium, "--version"], capture_output=True, text=True, timeout=30
    ).stdout.strip()

    say("building cr-server and cr-relay (release)")
    cargo = os.environ.get("CARGO", "cargo")
    subprocess.run([cargo, "build", "--release", "-p", "cr-apps"], cwd=ROOT, check=True, timeout=3600)

    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "qlog").mkdir(parents=True)
    server_port, relay_port = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    server, relay = f"127.0.0.1:{server_port}", f"127.0.0.1:{relay_port}"
    origin = f"localhost:{relay_port}"
    release = ROOT / "target" / "release"
    procs = Processes()
    driver = None
    try:
        server_log = OUT / "server.log"
        server_proc = procs.start(
            [release / "cr-server", "--listen", server, "--cert", "certs/cert.pem",
             "--key", "certs/key.pem", "--token-key", OUT / "token.key",
             "--qlog-dir", OUT / "qlog", "--idle-timeout", f"{IDLE}s"],
            server_log,
        )
        wait_for_line(server_proc, server_log, "listening on", "cr-server")
        relay_log = OUT / "relay.log"
        relay_proc = procs.start(
            [release / "cr-relay", "--listen", relay, "--server", server,
             "--rate", RATE, "--rtt", RTT],
            relay_log,
        )
        wait_for_line(relay_proc, relay_log, rf"^cr-relay: {re.escape(relay)} ->", "cr-relay")
        say(f"cr-server on {server}, cr-relay on {relay} ({RATE}, rtt {RTT}); {version}")

        driver_port = free_port(socket.SOCK_STREAM)
        driver_proc = procs.start(
            ["chromedriver", f"--port={driver_port}"], OUT / "chromedriver.log"
        )
        driver = WebDriver(driver_port)
        driver.wait_ready(driver_proc)
        args = [
            "--headless=new",
            f"--user-data-dir={OUT / 'profile'}",
            "--enable-quic",
            f"--origin-to-force-quic-on={origin}",
            "--host-resolver-rules=MAP localhost 127.0.0.1",
            # The repository's self-signed test certificate, by its key.
            f"--ignore-certificate-errors-spki-list={spki_sha256(ROOT / 'certs' / 'cert.pem')}",
            # cr-server serves bytes, not pages, and no CORS headers: the
            # page is a data: URL that fetches across origins.
            "--disable-web-security",
        ]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with it
        browser_pid = driver.new_session(chromium, args)
        if browser_pid:
            procs.adopt(browser_pid)
        driver.navigate("data:text/html,<title>cr interop</title>")

        reports = lambda: [
            line for line in server_log.read_text(errors="replace").splitlines()
            if line.startswith("peer=")
        ]
        results = []
        for label, size in (("short", SHORT), ("first 2 MiB", SIZE), ("second 2 MiB", SIZE)):
            before = len(reports())
            result = driver.fetch(f"https://{origin}/{size}")
            if "error" in result or result.get("bytes") != size:
                die(f"{label}: fetch failed: {result}")
            # The connection ends on the server's idle timeout; then Chromium's.
            deadline = time.monotonic() + REPORT_TIMEOUT
            while len(reports()) <= before and time.monotonic() < deadline:
                time.sleep(0.1)
            lines = reports()[before:]
            if len(lines) != 1:
                die(f"{label}: the server reported {len(lines)} connections, not 1: {lines}")
            say(f"{label}: {size} B in {result['ms'] / 1000:.3f} s; server: {lines[0]}")
            results.append((label, result["ms"] / 1000, lines[0]))
            time.sleep(1.0)
    finally:
        if driver:
            driver.quit()
        procs.end_all()

    (_, short_s, short), (_, first_s, first), (_, resumed_s, resumed) = results
    failures = []
    if field("token", short) != "none":
        failures.append("the short connection already had a token")
    if field("token", first) != "valid":
        failures.append("the first 2 MiB presented no valid token (none kept after a short visit)")
    if field("token", resumed) != "valid":
        failures.append("the second 2 MiB presented no valid token")
    if " cr=engaged " not in resumed:
        failures.append("Careful Resume did not engage on the second 2 MiB")
    qlog = OUT / "qlog" / f"server-{field('id', resumed)}.sqlog"
    if not qlog.exists() or '"new":"unvalidated"' not in qlog.read_text(errors="replace"):
        failures.append("the second 2 MiB's qlog has no jump")
    speedup = first_s / resumed_s
    if speedup < MIN_SPEEDUP:
        failures.append(f"resumed 2 MiB only {speedup:.2f}x faster (at least {MIN_SPEEDUP}x)")

    engaged = re.search(r" cr=(engaged \([^)]*\))", resumed)
    print()
    print(f"Chromium and Careful Resume: {RATE}, rtt {RTT}, one browser process "
          f"({version}); seconds in the page, handshake to last byte")
    print(f"{'fetch':<13} {'seconds':>8}  token  on the server")
    for label, seconds, line in results:
        cr = re.search(r" cr=(.*?) requests=", line).group(1)
        print(f"{label:<13} {seconds:>7.3f}s  {field('token', line):<5}  cr={cr}")
    print(f"speed-up of the second 2 MiB: {speedup:.2f}x"
          + (f", {engaged.group(1)}" if engaged else ""))
    # The relay, the server and the browser share the machine: times
    # measured while it is busy say more about the machine than the path.
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > cpus:
        say(f"note: load average {load:.1f} on {cpus} CPUs during the run; times may be inflated")
    if failures:
        for failure in failures:
            say("FAILED:", failure)
        sys.exit(1)


if __name__ == "__main__":
    main()
