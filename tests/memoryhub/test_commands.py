"""Management commands: create_api_key and the testable pieces of `run`."""

from __future__ import annotations

import http.server
import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from accounts.models import ApiKey, Tenant, Workspace
from memoryhub.management.commands.run import DEMO_TENANT
from memoryhub.management.commands.run import Command as RunCommand
from memoryhub.plumbing.serving import wait_until_serving
from tests.base import make_client

pytestmark = pytest.mark.django_db


def create_api_key(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# --- create_api_key --------------------------------------------------------------------------


def test_create_api_key_creates_the_tenant_and_prints_the_key_last() -> None:
    out, err = create_api_key("--tenant", "Acme")
    raw = out.strip().splitlines()[-1]
    assert raw.startswith("mh_") and " " not in raw
    tenant = Tenant.objects.get(name="Acme")
    key = ApiKey.objects.get(tenant=tenant)
    # Not admin unless asked for: an admin key registers webhooks.
    assert key.matches(raw) and key.scopes == ["read", "write"] and key.workspace is None
    assert "Created tenant" in err
    response = make_client(raw).post("/api/v1/sessions/", {"id": "s1"}, format="json")
    assert response.status_code == 201


def test_create_api_key_gives_the_admin_scope_only_when_asked() -> None:
    raw = create_api_key("--tenant", "Acme")[0].strip().splitlines()[-1]
    assert make_client(raw).get("/api/v1/webhooks/").status_code == 403
    raw = (
        create_api_key("--tenant", "Acme", "--scopes", "read,write,admin")[0]
        .strip()
        .splitlines()[-1]
    )
    assert make_client(raw).get("/api/v1/webhooks/").status_code == 200


def test_create_api_key_for_an_existing_tenant_with_scopes_and_workspace() -> None:
    create_api_key("--tenant", "Acme")
    out, err = create_api_key("--tenant", "Acme", "--scopes", "read", "--workspace", "research")
    raw = out.strip().splitlines()[-1]
    assert Tenant.objects.filter(name="Acme").count() == 1
    assert "Created tenant" not in err
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw))
    assert key.scopes == ["read"] and key.workspace == Workspace.objects.get(name="research")
    client = make_client(raw)
    assert client.get("/api/v1/sessions/").status_code == 200
    assert client.post("/api/v1/sessions/", {}, format="json").status_code == 403


def test_create_api_key_scope_list_with_spaces() -> None:
    out, _ = create_api_key("--tenant", "Acme", "--scopes", "read, write")
    raw = out.strip().splitlines()[-1]
    assert ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).scopes == ["read", "write"]


@pytest.mark.parametrize("scopes", ["root", "read,bogus", ","])
def test_create_api_key_refuses_unknown_scopes(scopes: str) -> None:
    with pytest.raises(CommandError):
        create_api_key("--tenant", "Acme", "--scopes", scopes)
    assert not ApiKey.objects.exists()
    assert not Tenant.objects.filter(name="Acme").exists()


def test_create_api_key_needs_a_tenant() -> None:
    with pytest.raises(CommandError):
        create_api_key()
    for blank in ("", "   ", "x" * 101):
        with pytest.raises(CommandError):
            create_api_key("--tenant", blank)
    assert not Tenant.objects.exists()


def test_create_api_key_in_a_subprocess_prints_only_the_key_on_stdout_last_line(tmp_path) -> None:
    """The real command line, as a user runs it (same test database settings)."""
    from django.conf import settings

    env = {
        "DATABASE_URL": _test_database_url(settings),
        "SECRET_KEY": "x",
        "MEMORYHUB_DATA_DIR": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "LOG_LEVEL": "WARNING",
    }
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "create_api_key",
            "--tenant",
            "cli-tenant",
            "--scopes",
            "read,write",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("mh_") and len(last.split()) == 1
    # The subprocess committed in the test database, outside this test's transaction.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM accounts_apikey WHERE prefix = %s", [ApiKey.parse_prefix(last)])
        assert cursor.rowcount == 1
        cursor.execute(
            "DELETE FROM accounts_channel WHERE tenant_id IN "
            "(SELECT id FROM accounts_tenant WHERE name = 'cli-tenant')"
        )
        cursor.execute(
            "DELETE FROM accounts_workspace WHERE tenant_id IN "
            "(SELECT id FROM accounts_tenant WHERE name = 'cli-tenant')"
        )
        cursor.execute("DELETE FROM accounts_tenant WHERE name = 'cli-tenant'")


def _test_database_url(settings) -> str:  # type: ignore[no-untyped-def]
    db = settings.DATABASES["default"]
    host = db.get("HOST") or ""
    user = db.get("USER") or "postgres"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    if host.startswith("/"):
        return f"postgresql://{user}@{port}/{db['NAME']}?host={host}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgresql://{user}{password}@{host}{port}/{db['NAME']}"


# --- run: the parts that do not serve --------------------------------------------------------


def test_run_honours_host_port_and_web_workers_from_the_environment(settings) -> None:
    # The settings HOST, PORT and WEB_WORKERS read (their defaults: tests/test_settings_table.py).
    settings.HOST, settings.PORT, settings.WEB_WORKERS = "0.0.0.0", 9123, 3
    options = RunCommand().create_parser("manage.py", "run").parse_args([])
    assert (options.host, options.port, options.web_workers) == ("0.0.0.0", 9123, 3)
    settings.HOST, settings.PORT, settings.WEB_WORKERS = "127.0.0.1", 8000, 2
    options = RunCommand().create_parser("manage.py", "run").parse_args([])
    assert (options.host, options.port, options.web_workers) == ("127.0.0.1", 8000, 2)


def test_bootstrap_creates_the_demo_tenant_admin_and_key_once(settings) -> None:
    settings.MEMORYHUB_ADMIN_USER = "boss"
    settings.MEMORYHUB_ADMIN_PASSWORD = "correct-horse-battery"
    command = RunCommand(stdout=io.StringIO(), stderr=io.StringIO())
    command.bootstrap()
    printed = command.stdout._out.getvalue()  # type: ignore[attr-defined]
    raw = next(line.split()[-1] for line in printed.splitlines() if "agent key:" in line)
    admin_raw = next(line.split()[-1] for line in printed.splitlines() if "admin key:" in line)
    keys = ApiKey.objects.filter(tenant__name=DEMO_TENANT)
    agent = next(key for key in keys if key.matches(raw))
    admin = next(key for key in keys if key.matches(admin_raw))
    # The key handed to agents cannot forget users or delete workspaces; the operator's can.
    assert agent.scopes == ["read", "write"] and admin.scopes == ["read", "write", "admin"]
    user = get_user_model().objects.get(username="boss")
    assert user.is_superuser and user.is_staff and user.check_password("correct-horse-battery")
    assert make_client(raw).get("/api/v1/sessions/").status_code == 200
    assert make_client(raw).delete("/api/v1/users/someone/").status_code == 403
    assert "manage.py changepassword boss" in printed

    again = RunCommand(stdout=io.StringIO(), stderr=io.StringIO())
    again.bootstrap()
    assert "exists" in again.stdout._out.getvalue()  # type: ignore[attr-defined]
    assert Tenant.objects.filter(name=DEMO_TENANT).count() == 1
    assert ApiKey.objects.filter(tenant__name=DEMO_TENANT).count() == 2
    assert get_user_model().objects.filter(username="boss").count() == 1


def test_bootstrap_keeps_an_existing_admin_user(settings) -> None:
    settings.MEMORYHUB_ADMIN_USER = "admin"
    get_user_model().objects.create_superuser(username="admin", email="", password="keep-me-please")
    command = RunCommand(stdout=io.StringIO(), stderr=io.StringIO())
    command.bootstrap()
    assert "password" not in command.stdout._out.getvalue()  # type: ignore[attr-defined]
    assert get_user_model().objects.get(username="admin").check_password("keep-me-please")


@pytest.fixture
def health_server() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200 if self.path == "/api/v1/health/" else 404)
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_wait_until_serving_returns_once_health_answers(health_server: int) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        wait_until_serving(f"http://127.0.0.1:{health_server}/api/v1/health/", alive, health_server)
    finally:
        alive.kill()
        alive.wait()


def test_wait_until_serving_gives_up_when_the_web_server_exits() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    with pytest.raises(SystemExit, match="code 3"):
        wait_until_serving("http://127.0.0.1:9/api/v1/health/", dead, 9)


def test_stopping_leaves_an_external_server_alone() -> None:
    from memoryhub.plumbing.supervision import Supervisor

    supervisor = Supervisor(None, say=print, warn=print)  # DATABASE_URL: not ours to watch or stop
    assert supervisor.problem() is None
    supervisor.shutdown()  # must not touch the database it does not own
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _postgres_running_in(data_dir: str) -> bool:
    """The server of this data folder is up: its postmaster.pid names a live process."""
    import os
    from pathlib import Path

    from memoryhub.plumbing.embedded_pg import pgdata_path

    pid_file = pgdata_path(Path(data_dir)) / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_run_serves_on_a_fresh_data_folder_and_stops_everything(tmp_path) -> None:
    """`manage.py run` end to end: own embedded PostgreSQL, first-start key, serving, clean stop."""
    import json
    import os
    import signal
    import urllib.request

    from django.conf import settings

    data_dir = tmp_path / "data"
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "TEST_DB_NAME", "SECRET_KEY")
    }
    env.update(
        {
            "MEMORYHUB_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "WEB_WORKERS": "1",
        }
    )
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run", "--no-cluster"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "is serving" in line or len(lines) > 200:
                break
        output = "".join(lines)
        assert f"is serving http://127.0.0.1:{port}/" in output, output
        assert "shared buffers set to" in output, output  # a fresh folder has initdb's 128 MB
        raw = next(line.split()[-1] for line in lines if "agent key:" in line)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/sessions/first/events/",
            method="POST",
            data=json.dumps({"role": "user", "content": "hello"}).encode(),
            headers={"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201 and json.loads(response.read())["sequence"] == 1
        assert _postgres_running_in(str(data_dir))
        # It only supervises, for as long as it serves: the model's export ran in a child of its
        # own.
        maps = Path(f"/proc/{process.pid}/maps")
        if maps.exists():
            assert "libtorch" not in maps.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert not _postgres_running_in(str(data_dir)), "the embedded PostgreSQL was left running"


def test_raise_shared_buffers_restarts_the_embedded_server_once(tmp_path) -> None:
    import psycopg

    from memoryhub.plumbing.embedded_pg import (
        default_shared_buffers_mb,
        raise_shared_buffers,
        socket_dir,
        start_embedded_postgres,
        stop_embedded_postgres,
    )

    assert 128 <= default_shared_buffers_mb() <= 4096
    try:
        assert raise_shared_buffers(tmp_path, 160) is True
        with psycopg.connect(
            host=socket_dir(start_embedded_postgres(tmp_path)), user="postgres", dbname="postgres"
        ) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)
        assert raise_shared_buffers(tmp_path, 160) is False  # already there: no restart
        assert raise_shared_buffers(tmp_path, 0) is False  # 0 leaves the server alone
    finally:
        stop_embedded_postgres(tmp_path)
    assert not _postgres_running_in(str(tmp_path))


def test_work_refuses_an_unknown_lane() -> None:
    with pytest.raises(CommandError, match="Unknown lanes"):
        call_command("work", "--lanes", "embed,nonsense")


def test_run_starts_the_clusters_and_one_process_for_every_lane() -> None:
    from memoryhub.management.commands.run import Command as RunCommand

    started = [(command[2:], extra) for _, command, extra in RunCommand().background_commands()]
    assert started == [
        (["qcluster"], {}),  # user schedule runs only
        (["qcluster"], {"Q_CLUSTER_NAME": "maintenance"}),  # cadences and bulk jobs
        (["work"], {}),  # every lane, each at its own niceness
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a niceness per thread: Linux")
def test_each_lane_thread_runs_at_its_own_niceness_and_its_threads_inherit_it() -> None:
    """Dispatch at the process's priority (schedules are due to the second), embed and summarise
    niced (requests come first), the model's threads with their lane; the process itself not."""
    from memoryhub.management.commands import work

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    base = os.getpriority(os.PRIO_PROCESS, 0)
    seen: dict[str, int] = {}

    def lane_thread(lane: str) -> None:
        work.nice_this_thread(work.lane_nice(lane, None))
        seen[lane] = niceness()
        started = threading.Thread(target=lambda: seen.__setitem__(f"{lane}'s own", niceness()))
        started.start()
        started.join()

    for lane in ("dispatch", "embed", "summarise"):
        thread = threading.Thread(target=lane_thread, args=(lane,))
        thread.start()
        thread.join()
    niced = min(base + work.NICE, 19)
    assert seen == {
        "dispatch": base,
        "dispatch's own": base,
        "embed": niced,
        "embed's own": niced,
        "summarise": niced,
        "summarise's own": niced,
    }
    assert os.getpriority(os.PRIO_PROCESS, 0) == base
    assert work.lane_nice("dispatch", 5) == work.lane_nice("embed", 5) == 5  # --nice: every lane


def test_start_up_work_in_the_background_is_reported_when_done_and_stopped_with_the_service() -> (
    None
):
    """`run` adopts a BackgroundStep's process as a helper: its end is reported (exit code) and is
    no reason to stop; one still running when the service stops is stopped with it."""
    import subprocess
    import sys
    import time

    from memoryhub.plumbing.supervision import Supervisor

    supervisor = Supervisor(None, say=print, warn=print)
    ended: list[tuple[str, int]] = []
    quick = [
        subprocess.Popen(
            [sys.executable, "-c", f"raise SystemExit({code})"], start_new_session=True
        )
        for code in (0, 3)
    ]
    slow = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    for name, process in (("ok", quick[0]), ("failed", quick[1]), ("slow", slow)):
        supervisor.adopt_helper(process, lambda code, name=name: ended.append((name, code)))
    deadline = time.monotonic() + 30
    while len(ended) < 2 and time.monotonic() < deadline:
        assert supervisor.problem() is None  # a helper's end never stops the service
        time.sleep(0.05)
    assert sorted(ended) == [("failed", 3), ("ok", 0)] and slow.poll() is None
    supervisor.shutdown()
    assert slow.poll() is not None and sorted(ended) == [("failed", 3), ("ok", 0)]
