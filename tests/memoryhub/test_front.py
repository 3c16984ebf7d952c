"""Where a person lands: `/`, `/api/v1/` and `/favicon.ico` lead somewhere (they answered 404), and
the start-up line names the pages a person opens."""

from __future__ import annotations

import struct

from memoryhub.front import favicon_bytes
from memoryhub.management.commands.run import local_host, page_lines


def test_the_home_page_links_the_reference_the_console_and_health(client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    for href in (
        'href="/api/v1/docs/"',
        'href="/admin/"',
        'href="/api/v1/health/"',
        'href="/favicon.ico"',
    ):
        assert href in html, href
    assert "http://testserver/mcp/" in html


def test_the_api_root_is_an_index_of_absolute_links(client) -> None:
    reply = client.get("/api/v1/")
    assert reply.status_code == 200
    links = reply.json()["links"]
    assert links["reference"] == "http://testserver/api/v1/docs/"
    assert (
        links["console"] == "http://testserver/admin/"
        and links["health"] == "http://testserver/api/v1/health/"
    )
    for path in ("/api/v1/docs/", "/api/v1/health/"):  # each link leads to a page that answers
        assert client.get(path).status_code == 200, path
    assert client.post("/api/v1/").status_code == 405


def test_the_favicon_is_an_icon(client) -> None:
    reply = client.get("/favicon.ico")
    assert reply.status_code == 200 and reply["Content-Type"] == "image/x-icon"
    body = reply.content
    assert body == favicon_bytes()
    reserved, kind, count = struct.unpack("<HHH", body[:6])
    width, height, _, _, _, bits, size, offset = struct.unpack("<BBBBHHII", body[6:22])
    assert (reserved, kind, count, width, height, bits) == (0, 1, 1, 16, 16, 32)
    assert offset == 22 and offset + size == len(body)


def test_the_serving_line_names_the_pages_a_person_opens() -> None:
    lines = page_lines("http://127.0.0.1:8000")
    assert any(
        "API reference" in line and line.endswith("http://127.0.0.1:8000/api/v1/docs/")
        for line in lines
    )
    assert any(
        "console" in line and line.endswith("http://127.0.0.1:8000/admin/") for line in lines
    )
    assert any(
        "health" in line and line.endswith("http://127.0.0.1:8000/api/v1/health/") for line in lines
    )
    assert any("MCP" in line and line.endswith("http://127.0.0.1:8000/mcp/") for line in lines)
    assert local_host("0.0.0.0") == "127.0.0.1" and local_host("::1") == "[::1]"
