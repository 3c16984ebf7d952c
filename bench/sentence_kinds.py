"""What sentence vectors (and each chunk's context) buy, per kind of chunk, on a kept benchmark
database.

    nice -n 5 .venv/bin/python bench/sentence_kinds.py locomo [--limit N] [--sample 200] [--context]
    nice -n 5 .venv/bin/python bench/sentence_kinds.py longmemeval --limit 20 [--sample 200] [--context]

Works on the database `bench/locomo.py --keepdb` / `bench/longmemeval.py --keepdb` kept (it ingests
one with the same options when there is none). The event chunks are sorted into kinds by role and
length: short (under SHORT characters), long (SHORT or more, the whole message), and a part of a
message of several chunks. For each kind:

- how many chunks, how many of them have sentence vectors and how many vectors;
- what they cost the model: a seeded sample of each kind's chunk inputs (context and text) and
  sentences embedded one text per call on one thread, as the lane embeds them, timed in this thread
  (CPU seconds), scaled to the kind's count; the share is of all event chunks' cost;
- what they buy: the questions asked again with that kind's sentence vectors hidden from search
  (its chunks counted as not split, inside a transaction that is rolled back), turn@10 and
  session@10 overall and per half, beside the run with every sentence vector;
- with --context: the same with that kind's chunks embedded without their context (rolled back).

The rule a change would adopt is then asked the same way (`--rule`: the kinds whose sentence vectors
the lane would no longer write, hidden together).
"""  # noqa: E501

from __future__ import annotations

import contextlib
import io
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import recall, runner  # noqa: E402
from bench.locomo import LOCOMO  # noqa: E402
from bench.longmemeval import LONGMEMEVAL  # noqa: E402

SHORT = 320  # characters: half a chunk


def kind_of(text: str, role: str, message_chunks: int) -> str:
    size = (
        "part of a long message"
        if message_chunks > 1
        else ("long" if len(text) >= SHORT else "short")
    )
    return f"{role or 'other'}, {size}"


def chunks_by_kind(tenant_id: int) -> dict[str, list[tuple[int, str, str, int]]]:
    """Each kind's event chunks: (id, embedding input, text, sentence vectors)."""
    from retrieval.models import Chunk

    out: dict[str, list[tuple[int, str, str, int]]] = {}
    rows = Chunk.objects.filter(tenant_id=tenant_id, kind="event").values_list(
        "id", "text", "context", "role", "message_chunks", "sentence_vectors"
    )
    for pk, text, context, role, parts, split in rows.iterator(chunk_size=5000):
        joined = f"{context}\n{text}" if context else text
        out.setdefault(kind_of(text, role, parts), []).append((pk, joined, text, split or 0))
    return dict(sorted(out.items()))


def lane_model() -> Any:
    """The model the lane embeds with (the ONNX file its choice names, one thread)."""
    from retrieval.embedders import get_embedder

    embedder = get_embedder()
    if embedder.backend(2) != "onnx":
        raise SystemExit("the lane embeds with torch here; this bench times the ONNX lane")
    return embedder._load("onnx")


def cost(model: Any, rows: list[tuple[int, str, str, int]], sample: int) -> tuple[float, float]:
    """CPU seconds to embed the kind's chunk inputs and its sentences, from a seeded sample."""
    from retrieval.chunking import sentences

    picked = random.Random(7).sample(rows, min(sample, len(rows)))
    inputs = parts = 0.0
    for _, joined, text, _split in picked:
        began = time.thread_time()
        model.encode([joined])
        middle = time.thread_time()
        pieces = sentences(text)
        if pieces:
            model.encode(pieces)
        inputs, parts = inputs + middle - began, parts + time.thread_time() - middle
    scale = len(rows) / max(len(picked), 1)
    return inputs * scale, parts * scale


def ask(
    ingested: Any, questions: list[recall.Question], vectors: list[list[float]]
) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        figures, _ = recall.evaluate(ingested, questions, vectors, ["hybrid-weighted"])
    return figures["hybrid-weighted"]


def hidden(
    ids: list[int],
    ingested: Any,
    questions: list[recall.Question],
    vectors: list[list[float]],
    *,
    context: bool = False,
) -> dict[str, Any]:
    """The questions asked with these chunks' sentence vectors hidden (or, `context`, these chunks
    embedded without their context), rolled back afterwards."""
    from django.db import transaction

    from retrieval.embedders import get_embedder
    from retrieval.models import Chunk

    with transaction.atomic():
        if context:
            rows = list(Chunk.objects.filter(pk__in=ids).values_list("id", "text"))
            embedded = get_embedder().embed([text for _, text in rows])
            for (pk, _), vector in zip(rows, embedded, strict=True):
                Chunk.objects.filter(pk=pk).update(embedding=vector)
        else:
            Chunk.objects.filter(pk__in=ids).update(sentence_vectors=0)
        figures = ask(ingested, questions, vectors)
        transaction.set_rollback(True)
    return figures


def batched(
    size: int,
    kinds: dict[str, list[tuple[int, str, str, int]]],
    model: Any,
    ingested: Any,
    questions: list[recall.Question],
    vectors: list[list[float]],
    base: dict[str, Any],
) -> None:
    """Sentence vectors embedded `size` at a time (texts of alike length) instead of one per call:
    their CPU against one per call on the same sentences (timed in turn, twice), and recall with
    every sentence vector so made (rolled back)."""
    from django.db import transaction

    from retrieval.chunking import sentences
    from retrieval.sentence_vectors import write_sentences

    split = [(pk, sentences(text)) for rows in kinds.values() for pk, _, text, n in rows if n > 0]
    sample = [
        s for _, pieces in random.Random(7).sample(split, min(400, len(split))) for s in pieces
    ]
    spent = {1: 0.0, size: 0.0}
    for _ in range(2):
        for batch in spent:
            began = time.thread_time()
            model.encode(sample, batch_size=batch)
            spent[batch] += time.thread_time() - began
    made = model.encode([s for _, pieces in split for s in pieces], batch_size=size).tolist()
    with transaction.atomic():
        at = 0
        for start in range(0, len(split), 500):  # a statement's parameters are limited
            part = split[start : start + 500]
            count = sum(len(pieces) for _, pieces in part)
            write_sentences(
                [pk for pk, _ in part], [pieces for _, pieces in part], made[at : at + count]
            )
            at += count
        figures = ask(ingested, questions, vectors)
        transaction.set_rollback(True)
    print(
        f"\nsentence vectors in batches of {size}: CPU {spent[size] / spent[1]:.2f}x one per call "
        f"({len(sample)} sentences, one thread); turn@10 / session@10 overall | half 1 | half 2: "
        f"{cells(figures, base)}",
        flush=True,
    )


def cells(figures: dict[str, Any], base: dict[str, Any] | None = None) -> str:
    out = []
    for bucket in ("overall", "half 1", "half 2"):
        f = figures[bucket]
        text = f"{f['turn@10']:.3f} / {f['session@10']:.3f}"
        if base is not None:
            b = base[bucket]
            text += (
                f" ({f['turn@10'] - b['turn@10']:+.3f} / {f['session@10'] - b['session@10']:+.3f})"
            )
        out.append(text)
    return " | ".join(out)


def main() -> None:
    which = (
        sys.argv.pop(1)
        if len(sys.argv) > 1 and sys.argv[1] in ("locomo", "longmemeval")
        else "locomo"
    )
    bench = LOCOMO if which == "locomo" else LONGMEMEVAL
    parser = runner.build_parser(bench)
    parser.add_argument("--sample", type=int, default=200, help="chunks timed per kind")
    parser.add_argument(
        "--context", action="store_true", help="also embed each kind without its context"
    )
    parser.add_argument(
        "--context-kind",
        action="append",
        default=[],
        metavar="KIND",
        help="with --context: only these kinds (repeatable; all without)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        metavar="N",
        help="also: every sentence vector embedded again in batches of N sentences of alike length",
    )
    parser.add_argument("--no-kinds", action="store_true", help="skip the per-kind table")
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="KIND",
        help="kinds hidden together (the rule a change would adopt; repeatable)",
    )
    args = parser.parse_args()
    args.keepdb = True
    from retrieval.query_embedding import embed_queries

    conversations, ingested, _ = runner.prepare(bench, args)
    questions = recall.questions_of(conversations, bench.categories)
    vectors = embed_queries([q.question["question"] for q in questions])
    kinds = chunks_by_kind(ingested.key.tenant_id)
    model = lane_model()
    costs = {
        kind: cost(model, rows, 0 if args.no_kinds else args.sample) for kind, rows in kinds.items()
    }
    total = sum(a + b for a, b in costs.values()) or 1.0
    base = ask(ingested, questions, vectors)
    print(
        f"\n{which}: {len(conversations)} {bench.unit}, {len(questions)} questions"
        f" ({recall.halves_label(conversations, bench.unit)}); model CPU share of all event chunks'"
        " cost"
    )
    print(
        "\n| kind | chunks | with sentence vectors | sentence vectors | model CPU: inputs /"
        " sentences | turn@10 / session@10 without them: overall | half 1 | half 2 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| (every sentence vector) | {sum(len(r) for r in kinds.values()):,} | | | |"
        f" {cells(base)} |"
    )
    for kind, rows in ({} if args.no_kinds else kinds).items():
        split = [pk for pk, _, _, n in rows if n > 0]
        inputs, parts = costs[kind]
        figures = hidden(split, ingested, questions, vectors) if split else base
        print(
            f"| {kind} | {len(rows):,} | {len(split):,} | {sum(n for *_, n in rows):,} | "
            f"{inputs / total:.1%} / {parts / total:.1%} | {cells(figures, base)} |",
            flush=True,
        )
    if args.rule:
        ids = [pk for kind in args.rule for pk, _, _, n in kinds.get(kind, []) if n > 0]
        saved = sum(costs[kind][1] for kind in args.rule if kind in costs) / total
        print(
            f"| rule: none for {'; '.join(args.rule)} | | {len(ids):,} | | -{saved:.1%} of the cost"
            f" | {cells(hidden(ids, ingested, questions, vectors), base)} |",
            flush=True,
        )
    if args.batch:
        batched(args.batch, kinds, model, ingested, questions, vectors, base)
    if args.context:
        print("\n| kind | turn@10 / session@10 without context: overall | half 1 | half 2 |")
        print("| --- | ---: | ---: | ---: |")
        for kind, rows in kinds.items():
            if args.context_kind and kind not in args.context_kind:
                continue
            figures = hidden([pk for pk, *_ in rows], ingested, questions, vectors, context=True)
            print(f"| {kind} | {cells(figures, base)} |", flush=True)
    runner.finish(bench, args)


if __name__ == "__main__":
    main()
