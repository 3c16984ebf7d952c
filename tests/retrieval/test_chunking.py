"""The pure chunker: boundaries, overlap, unicode, huge words, empty input."""

from __future__ import annotations

import pytest

from retrieval.chunking import chunk_text, content_hash, normalize_text


def test_empty_and_blank_give_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text(" \n\t \r\n ") == []


def test_short_text_is_one_chunk() -> None:
    [chunk] = chunk_text("Hello there.  How are you?")
    assert chunk.text == "Hello there. How are you?"
    assert chunk.start == 0


def test_chunks_respect_the_limit_and_prefer_sentence_ends() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    chunks = chunk_text(text, max_chars=640, overlap=96)
    assert len(chunks) > 5
    assert all(len(c.text) <= 640 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks[:-1])


def test_consecutive_chunks_overlap_on_word_boundaries() -> None:
    text = " ".join(f"word{i}" for i in range(1000))
    chunks = chunk_text(text, max_chars=200, overlap=50)
    for left, right in zip(chunks, chunks[1:], strict=False):
        first_word = right.text.split()[0]
        assert first_word in left.text.split(), (left.text, right.text)
        assert right.start < left.start + len(left.text)  # overlapping


def test_every_word_survives_chunking() -> None:
    words = [f"w{i}" for i in range(3000)]
    chunks = chunk_text(" ".join(words), max_chars=300, overlap=40)
    seen = {w for c in chunks for w in c.text.split()}
    assert seen == set(words)


def test_a_huge_single_word_is_hard_cut() -> None:
    blob = "x" * 2000
    chunks = chunk_text(blob, max_chars=640, overlap=96)
    assert [len(c.text) for c in chunks] == [640, 640, 640, 368]
    assert "".join(c.text for c in chunks).count("x") > 2000  # overlap repeats some


def test_unicode_is_normalised_and_never_split_inside_a_character() -> None:
    text = "Cafe\u0301 🙂 日本語のテキスト。" * 100
    chunks = chunk_text(text, max_chars=120, overlap=20)
    assert all(len(c.text) <= 120 for c in chunks)
    assert all("e\u0301" not in c.text for c in chunks)  # NFC: é is one code point
    assert "Café" in chunks[0].text
    assert "".join(c.text for c in chunks).count("🙂") >= 100


def test_normalisation_removes_control_characters_and_collapses_space() -> None:
    assert normalize_text("a\x00b\t\t c\r\n\r\n\r\n\r\nd  ") == "ab c\n\nd"


def test_content_hash_ignores_case_and_spacing() -> None:
    assert content_hash("Hello   World") == content_hash("hello world")
    assert content_hash("hello world") != content_hash("hello world!")


@pytest.mark.parametrize("max_chars,overlap", [(0, 0), (100, 100), (100, -1)])
def test_bad_sizes_are_refused(max_chars: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("text", max_chars=max_chars, overlap=overlap)


def test_chunker_imports_nothing_from_django() -> None:
    import ast
    from pathlib import Path

    import retrieval.chunking as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(name.startswith("django") for name in imported)
