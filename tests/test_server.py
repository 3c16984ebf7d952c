"""The real server (`manage.py run`: gunicorn, uvicorn workers, the embedded PostgreSQL) against
the clients an attack sends: slow, idle, malformed, oversize, chunked, and a database killed under
it.

One server for the module, in a private data folder, with 2 s header and body deadlines and a
1 MiB body limit so that each case is quick.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memoryhub.plumbing.embedded_pg import postmaster
from tests.served import ROOT, Served, private_data_dir, wait_until

LIMIT = 1024 * 1024
STREAMS_PER_KEY, STREAMS = 2, 3


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    env = {
        "MEMORYHUB_HEADER_TIMEOUT_SECONDS": "2",
        "MEMORYHUB_BODY_TIMEOUT_SECONDS": "2",
        "MEMORYHUB_MAX_REQUEST_BYTES": str(LIMIT),
        "MEMORYHUB_MCP_STREAMS_PER_KEY": str(STREAMS_PER_KEY),
        "MEMORYHUB_MCP_STREAMS": str(STREAMS),
        "MEMORYHUB_MCP_STREAM_IDLE_SECONDS": "3",
    }
    with private_data_dir() as data_dir, Served(data_dir, env=env) as server:
        yield server


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after answering

    def error(self) -> dict:
        assert self.headers.get("content-type") == "application/json", self
        body = json.loads(self.body)
        assert set(body) == {"error"} and {"code", "message", "details"} <= set(body["error"]), body
        return body["error"]


def connect(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.port), timeout=10)


def read_reply(sock: socket.socket) -> Reply:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
    }
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    sock.settimeout(2)
    try:
        closed = sock.recv(1) == b""
    except (TimeoutError, ConnectionResetError):
        closed = False
    return Reply(int(lines[0].split()[1]), headers, body, closed)


def exchange(served: Served, raw: bytes, *, pieces: int = 1) -> Reply:
    with connect(served) as sock:
        step = -(-len(raw) // pieces)
        for start in range(0, len(raw), step):
            try:
                sock.sendall(raw[start : start + step])
            except (BrokenPipeError, ConnectionResetError):
                break  # answered before all of it arrived
            if pieces > 1:
                time.sleep(0.02)
        return read_reply(sock)


def request(
    served: Served, method: str, path: str, body: bytes = b"", *, headers: str = ""
) -> bytes:
    length = (
        f"Content-Length: {len(body)}\r\n" if body and "Transfer-Encoding" not in headers else ""
    )
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {served.key}\r\n"
        f"Content-Type: application/json\r\n{length}{headers}\r\n"
    ).encode() + body


def health(served: Served) -> int:
    return exchange(
        served, b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    ).status


def still_waiting(sock: socket.socket) -> bool:
    """Nothing has come back on this connection yet (no 408, not closed)."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    finally:
        sock.settimeout(10)
    return False


def test_health_answers_while_40_clients_never_finish_their_headers(served: Served) -> None:
    stalled = []
    try:
        for _ in range(40):
            sock = connect(served)
            sock.sendall(b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            stalled.append(sock)
        # Answered while the clients are stalled: the newest of them is still waiting for its 408
        # (a server they blocked would answer only once their header deadline let them go).
        assert health(served) == 200
        assert still_waiting(stalled[-1])
        assert [health(served) for _ in range(9)] == [200] * 9
        # And the stalled ones are answered 408 by the header deadline, not held for ever.
        assert read_reply(stalled[0]).status == 408
    finally:
        for sock in stalled:
            sock.close()


def test_headers_too_slow_are_408_in_the_envelope_and_silence_is_closed(served: Served) -> None:
    with connect(served) as sock:
        sock.sendall(b"GET /api/v1/health/ HTTP/1.1\r\n")
        sock.settimeout(1)
        with pytest.raises(TimeoutError):  # held while the 2 s deadline runs, not refused at once
            sock.recv(1)
        sock.settimeout(10)
        reply = read_reply(sock)
        assert reply.status == 408 and reply.closed
        assert reply.error()["code"] == "request_timeout"
    with connect(served) as sock:  # connected, sends nothing: closed without an answer
        assert sock.recv(100) == b""


def test_an_idle_keep_alive_connection_outlives_a_clients_reuse_window(served: Served) -> None:
    # httpx reuses a connection idle up to 5 s: one the server closed at that moment failed the
    # request sent on it, so the server keeps it longer (here past the 2 s header deadline too).
    hello = b"GET /api/v1/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with connect(served) as sock:
        sock.sendall(hello)
        assert read_reply(sock).status == 200
        time.sleep(4)  # idle 6 s, with read_reply's 2 s look for a close
        sock.sendall(hello)
        reply = read_reply(sock)
        assert reply.status == 200 and not reply.closed
        # a further request's head that stops half way still meets the header deadline
        sock.sendall(b"GET /api/v1/health/ HTTP/1.1\r\n")
        sock.settimeout(10)
        reply = read_reply(sock)
        assert reply.status == 408 and reply.closed


def test_a_body_too_slow_is_408(served: Served) -> None:
    with connect(served) as sock:
        # 100 bytes announced, 29 sent.
        sock.sendall(
            request(
                served,
                "POST",
                "/api/v1/sessions/slow/events/",
                b'{"role": "user", "content": "',
                headers="Content-Length: 100\r\nTransfer-Encoding: identity\r\n",
            ).replace(b"Transfer-Encoding: identity\r\n", b"")
        )
        reply = read_reply(sock)
        assert reply.status == 408 and reply.closed
        assert reply.error()["code"] == "request_timeout"


def test_a_url_of_2000_tags_and_longer_urls_are_answered_in_the_envelope(served: Served) -> None:
    tags = ",".join(f"t{i}" for i in range(2000))  # the attack's 414 from gunicorn, in HTML
    reply = exchange(served, request(served, "GET", f"/api/v1/notes/?tags={tags}"))
    assert reply.status == 200 and json.loads(reply.body)["results"] == []
    long_tags = ",".join(f"tag{i}" for i in range(4000))  # past the URL limit
    reply = exchange(served, request(served, "GET", f"/api/v1/notes/?tags={long_tags}"))
    assert reply.status == 414 and reply.error()["code"] == "uri_too_long"
    # Past the header limit while the headers are still arriving: refused before they end.
    reply = exchange(
        served, request(served, "GET", f"/api/v1/notes/?tags={long_tags * 2}"), pieces=20
    )
    assert reply.status == 431 and reply.closed
    assert reply.error()["code"] == "headers_too_large"


def test_headers_over_the_limit_sent_at_once_are_431(served: Served) -> None:
    """40 KB of headers in one piece, past the 32 KB MAX_HEADER_BYTES
    (h11 measures only a head that is still incomplete)."""
    reply = exchange(
        served, request(served, "GET", "/api/v1/health/", headers=f"X-Big: {'a' * 40_000}\r\n")
    )
    assert reply.status == 431 and reply.closed
    assert reply.error()["code"] == "headers_too_large"
    assert reply.error()["details"] == {"limit": 32 * 1024}
    reply = exchange(
        served, request(served, "GET", "/api/v1/health/", headers=f"X-Big: {'a' * 20_000}\r\n")
    )
    assert reply.status == 200


@pytest.mark.parametrize("length", ["abc", "-1", "1, 2"])
def test_a_malformed_content_length_is_a_400_in_the_envelope(served: Served, length: str) -> None:
    raw = (
        "POST /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:"
        f" {length}\r\n\r\n{{}}"
    )
    reply = exchange(served, raw.encode())
    assert reply.status == 400 and reply.closed
    assert reply.error()["code"] == "bad_request"


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_is_read(served: Served) -> None:
    body = json.dumps({"role": "user", "content": "sent in chunks"}).encode()
    reply = exchange(
        served,
        request(
            served,
            "POST",
            "/api/v1/sessions/chunky/events/",
            chunked(body),
            headers="Transfer-Encoding: chunked\r\n",
        ),
    )
    assert reply.status == 201, reply
    assert json.loads(reply.body)["content"] == "sent in chunks"


def test_the_mcp_endpoint_answers_in_the_served_app(served: Served) -> None:
    """/mcp/ as `manage.py run` serves it (gunicorn's uvicorn workers), not only under plain
    uvicorn: the MCP session manager starts with the worker's lifespan."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    reply = exchange(
        served,
        request(
            served,
            "POST",
            "/mcp/",
            json.dumps(initialize).encode(),
            headers="Accept: application/json, text/event-stream\r\nConnection: close\r\n",
        ),
    )
    assert reply.status == 200, reply
    assert json.loads(reply.body)["result"]["serverInfo"]["name"] == "memoryhub"


def test_a_body_over_the_limit_is_413_and_the_connection_closes(served: Served) -> None:
    events = json.dumps({"events": [{"role": "user", "content": "x" * 3000}] * 400}).encode()
    assert len(events) > LIMIT
    with connect(served) as sock:  # declared: answered before the body is sent
        sock.sendall(request(served, "POST", "/api/v1/sessions/big/events/", events)[:300])
        reply = read_reply(sock)
    assert reply.status == 413 and reply.closed
    error = reply.error()
    assert error["code"] == "payload_too_large" and error["details"] == {
        "limit": LIMIT,
        "size": len(events),
    }
    # Chunked, so undeclared: refused once it grows past the limit.
    reply = exchange(
        served,
        request(
            served,
            "POST",
            "/api/v1/sessions/big/events/",
            chunked(events, 65536),
            headers="Transfer-Encoding: chunked\r\n",
        ),
    )
    assert reply.status == 413 and reply.closed
    assert reply.error()["details"]["limit"] == LIMIT
    # Nothing was stored, and the next connection is served as usual.
    reply = exchange(served, request(served, "GET", "/api/v1/sessions/big/events/"))
    assert reply.status == 404


def test_a_killed_database_is_started_again_and_requests_recover(served: Served) -> None:
    data_dir = Path(served.environment["MEMORYHUB_DATA_DIR"])
    process = postmaster(data_dir)
    assert process is not None
    process.kill()
    statuses = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = json.dumps(
            {"role": "user", "content": "after", "idempotency_key": "after-kill"}
        ).encode()
        reply = exchange(served, request(served, "POST", "/api/v1/sessions/recover/events/", body))
        statuses.append(reply.status)
        if reply.status in (200, 201):
            break
        assert reply.status == 503 and reply.error()["code"] == "database_unavailable", reply
        assert reply.headers["retry-after"]
        time.sleep(0.5)
    assert statuses[-1] in (200, 201), statuses
    assert served.process.poll() is None  # the same run, not a new one
    assert "starting it again" in served.output()
    assert (
        httpx.get(served.url + "/api/v1/health/").json()["details"]["restarted"].get("postgresql")
        == 1
    )


def test_forwarded_headers_of_a_peer_that_is_not_a_trusted_proxy_are_ignored(
    served: Served,
) -> None:
    """No MEMORYHUB_TRUSTED_PROXIES, so a client's X-Forwarded-Proto does
    not make links https, and its X-Forwarded-For does not dodge the admin login lock-out."""
    for name in ("fwd-1", "fwd-2"):
        exchange(
            served, request(served, "POST", "/api/v1/sessions/", json.dumps({"id": name}).encode())
        )
    reply = exchange(
        served,
        request(
            served,
            "GET",
            "/api/v1/sessions/?limit=1",
            headers="X-Forwarded-Proto: https\r\nX-Forwarded-For: 10.9.9.9\r\n",
        ),
    )
    assert reply.status == 200
    assert json.loads(reply.body)["next"].startswith("http://127.0.0.1/api/v1/sessions/")

    with httpx.Client(base_url=served.url, timeout=30) as client:

        def login(password: str, address: str) -> int:
            page = client.get("/admin/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            assert token, page.text[:500]
            return client.post(
                "/admin/login/?next=/admin/",
                headers={"X-Forwarded-For": address},
                data={
                    "username": "admin",
                    "password": password,
                    "csrfmiddlewaretoken": token.group(1),
                },
            ).status_code

        assert [login(f"wrong-{i}", f"10.9.9.{i}") for i in range(5)] == [200] * 4 + [429]
        assert login(served.environment["MEMORYHUB_ADMIN_PASSWORD"], "10.9.9.9") == 429


def open_stream(served: Served, key: str) -> tuple[socket.socket, int]:
    sock = connect(served)
    sock.sendall(
        f"GET /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, int(head.split(b" ", 2)[1]) if head else 0


def test_mcp_event_streams_are_bounded_per_key_and_in_all_and_idle_ones_close(
    served: Served,
) -> None:
    """GET /mcp/ opens an event stream; at most MEMORYHUB_MCP_STREAMS_PER_KEY per
    key and MEMORYHUB_MCP_STREAMS in all are held at once (429 past either), and a stream that
    carried nothing for MEMORYHUB_MCP_STREAM_IDLE_SECONDS is closed."""
    other_key = served.manage("create_api_key", "--tenant", "demo").strip().splitlines()[-1]
    opened: list[socket.socket] = []
    try:
        statuses = []
        for key in (served.key, served.key, served.key, other_key, other_key):
            sock, status = open_stream(served, key)
            opened.append(sock)
            statuses.append(status)
        assert statuses == [200, 200, 429, 200, 429]  # the third of a key; the fourth in all
        # Nothing is ever sent on them: the server ends each stream (its chunked body's last
        # chunk; the connection then stays open for keep-alive, as after a refusal).
        for sock, status in zip(opened, statuses, strict=True):
            sock.settimeout(30)
            received = b""
            while status == 200 and not received.endswith(b"0\r\n\r\n"):
                chunk = sock.recv(65536)
                assert chunk, received  # the server ended the stream before the connection
                received += chunk
        # Closed streams no longer count.
        sock, status = open_stream(served, served.key)
        opened.append(sock)
        assert status == 200
    finally:
        for sock in opened:
            sock.close()


def test_mem0s_client_in_the_served_app(served: Served) -> None:
    """mem0's unchanged MemoryClient against `manage.py run` (its routes at the root, its Token
    header)."""
    # Imported from there: mem0 is imported with its telemetry off.
    from tests.retrieval.test_mem0_compat import MemoryClient

    client = MemoryClient(api_key=served.key, host=served.url)
    try:
        memory_id = client.add("Served to mem0's client.", user_id="ann", infer=False)["results"][
            0
        ]["id"]
        assert client.get(memory_id)["memory"] == "Served to mem0's client."
        assert [
            r["id"] for r in client.search("mem0's client", filters={"user_id": "ann"})["results"]
        ] == [memory_id]
    finally:
        client.client.close()


def test_a_killed_web_worker_is_respawned_and_counted(served: Served) -> None:
    import psutil

    [master] = [
        c
        for c in psutil.Process(served.process.pid).children()
        if "gunicorn" in " ".join(c.cmdline())
    ]
    [worker] = master.children()
    worker.kill()

    def counted() -> bool:
        try:
            return (
                httpx.get(served.url + "/api/v1/health/")
                .json()["details"]["restarted"]
                .get("web workers")
                == 1
            )
        except httpx.HTTPError:
            return False

    assert wait_until(counted, 60), served.output()[-3000:]
    assert master.is_running() and served.process.poll() is None


def test_run_supervises_without_django_and_web_workers_share_the_masters_pages(
    served: Served,
) -> None:
    """`run` hands over to a supervisor that never imports Django (it held ~98 MB PSS for nothing),
    and the web workers are forked from a master that loaded the app: most of a worker's pages
    are the master's (each held its own copy: ~170 of its 225 MB were its own)."""
    import psutil

    from memoryhub.plumbing.installation import _runs

    run = psutil.Process(served.process.pid)
    assert "memoryhub.plumbing.serving" in " ".join(run.cmdline())
    # still `manage.py run` of this checkout to `manage.py mcp`, which looks for its database
    assert _runs(run.as_dict(["cmdline", "cwd"]), (ROOT / "manage.py").resolve())
    assert run.memory_info().rss < 60 * 1024 * 1024  # Django and the apps alone are ~90 MB
    [master] = [c for c in run.children() if "gunicorn" in " ".join(c.cmdline())]
    for worker in master.children():
        memory = worker.memory_full_info()
        assert memory.uss < memory.rss / 2, memory
