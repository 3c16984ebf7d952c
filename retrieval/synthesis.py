"""An answer written from the search results (optional: only with a model configured).

`synthesize: true` on POST /search/ (and MCP memory_search) sends the query and the results the
caller was given, numbered, to the model configured for the HTTP summariser
(MEMORYHUB_SUMMARISER=http, MEMORYHUB_SUMMARISER_URL/_MODEL/_API_KEY/_TIMEOUT, through the
outbound guard of memoryhub.plumbing.outbound) and returns {answer, citations, model}. The model
sees nothing but those results, which the search already confined to what the key (and end user) may
read. Its citations are checked: only numbers of results it was shown are kept, each as the
result's index in `results` and its chunk_id.

A search never fails because of its synthesis: when the model cannot be reached, times out or
answers something unusable, the results come back (200) and `synthesis` carries
{error: {code: llm_unavailable | llm_timeout | llm_bad_reply, message}, model} instead of an answer.
Without a configured model the request is refused before searching (400 llm_not_configured).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.conf import settings

from memoryhub import summarisers
from memoryhub.errors import Invalid
from memoryhub.plumbing.llm import (
    SummariserError,
    chat_completion,
    model_configured,
    single_attempt,
)

logger = logging.getLogger(__name__)

RESULT_CHARS = 2000  # of each result's text shown to the model
ANSWER_MAX_TOKENS = 800

PROMPT = (
    "You answer a question from an AI agent's memory search results, and from nothing else. The "
    'results are numbered [1], [2], .... Reply with a JSON object: {"answer": "...", '
    '"citations": [numbers of the results the answer rests on]}. If the results do not answer '
    "the question, say so in the answer and cite nothing. Keep names, numbers, dates and "
    "identifiers exactly as written."
)


def check_configured() -> None:
    if not model_configured():
        raise Invalid(
            "llm_not_configured",
            "synthesize needs a language model: set MEMORYHUB_SUMMARISER=http and "
            "MEMORYHUB_SUMMARISER_URL (an OpenAI-compatible endpoint).",
        )


def _prompt(query: str, results: list[dict[str, Any]]) -> tuple[str, int]:
    """The user message, and how many results it shows (as many as fit
    memoryhub.summarisers.INPUT_CHARS)."""
    budget = summarisers.INPUT_CHARS
    lines = [f"Question: {query}", "", "Results:"]
    used = 0
    for number, result in enumerate(results, start=1):
        text = " ".join(str(result["text"]).split())[:RESULT_CHARS]
        origin = ", ".join(
            str(p) for p in (result["kind"], result.get("role"), result.get("created_at")) if p
        )
        line = f"[{number}] ({origin}) {text}"
        if used + len(line) > budget:
            break
        lines.append(line)
        used += len(line)
    return "\n".join(lines), len(lines) - 3


def _parse(reply: str) -> tuple[str, list[Any]]:
    """The answer and the cited numbers, from a JSON reply or, failing that, plain text with [n]
    marks."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, flags=re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        cited = data.get("citations")
        return data["answer"].strip(), cited if isinstance(cited, list) else []
    if not text:
        raise SummariserError("the model's reply is empty")
    return text, [int(n) for n in re.findall(r"\[(\d{1,4})\]", text)]


def _citations(cited: list[Any], results: list[dict[str, Any]], shown: int) -> list[dict[str, Any]]:
    """The cited results the model was shown, in the order cited, once each; anything else is
    dropped."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for number in cited:
        if isinstance(number, str) and re.fullmatch(r"\[?\d{1,4}\]?", number.strip()):
            number = int(number.strip().strip("[]"))  # "2" or "[2]": what some models write
        if (
            isinstance(number, bool)
            or not isinstance(number, int)
            or not 1 <= number <= shown
            or number in seen
        ):
            continue
        seen.add(number)
        out.append({"index": number - 1, "chunk_id": results[number - 1]["chunk_id"]})
    return out


def _failure(detail: str) -> tuple[str, str]:
    if "reply" in detail:
        return "llm_bad_reply", "The language model's reply could not be used."
    if "timed out" in detail:
        return (
            "llm_timeout",
            "The language model did not answer in time (MEMORYHUB_SUMMARISER_TIMEOUT).",
        )
    return "llm_unavailable", "The language model could not be reached or failed."


def synthesize(query: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """{answer, citations, model}, or {error, model} when the model failed (module docstring)."""
    model = settings.MEMORYHUB_SUMMARISER_MODEL
    if not results:  # nothing to answer from: no model call
        return {"answer": "", "citations": [], "model": model}
    prompt, shown = _prompt(query, results)
    try:
        with single_attempt():  # a search request does not wait through the backoff
            reply = chat_completion(
                url=settings.MEMORYHUB_SUMMARISER_URL,
                model=model,
                api_key=settings.MEMORYHUB_SUMMARISER_API_KEY,
                timeout=settings.MEMORYHUB_SUMMARISER_TIMEOUT,
                json_mode=True,
                max_tokens=ANSWER_MAX_TOKENS,
                messages=[
                    {"role": "system", "content": PROMPT},
                    {"role": "user", "content": prompt},
                ],
            )
        answer, cited = _parse(reply)
    except SummariserError as exc:
        # The endpoint's address stays in the server's log: callers are tenants, not its operator.
        logger.warning("search synthesis failed: %s", exc)
        code, message = _failure(str(exc))
        return {"error": {"code": code, "message": message}, "model": model}
    return {"answer": answer, "citations": _citations(cited, results, shown), "model": model}
