"""mem0's routes (as its MemoryClient calls them): parse with a serializer, call memories.py, answer
in mem0's shapes. Errors are MemoryHub's ({"error": {code, message, details}}, with mem0's status
codes: 400, 401, 403, 404, 409). These routes are mem0's API, documented by mem0: they stay out of
MemoryHub's OpenAPI document."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import StrictSerializer, api_key, parse_input, parse_params
from memoryhub.api.fields import MetadataField
from memoryhub.errors import Invalid
from retrieval.mem0_compat import memories
from retrieval.mem0_compat.authentication import TokenAuthentication

MAX_PAGE_SIZE = 1000
# mem0's search answers at most this many (its own limit is of the same order).
MAX_TOP_K = 100


def query(request: Request, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The query parameters, validated; one the route does not take is 400 unknown_parameter."""
    known = serializer_class().fields
    unknown = sorted(set(request.query_params) - set(known))
    if unknown:
        raise Invalid("unknown_parameter", f"Unknown query parameter {unknown[0]!r}.", {"parameters": unknown})
    return parse_params(serializer_class, {k: request.query_params.get(k) for k in request.query_params})


class Mem0View(APIView):
    authentication_classes = [TokenAuthentication]


class NoParams(serializers.Serializer):
    pass


class Paging(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=10_000, required=False, default=1)
    page_size = serializers.IntegerField(min_value=1, max_value=MAX_PAGE_SIZE, required=False, default=100)


def page(request: Request, count: int, params: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    number, size = params["page"], params["page_size"]

    def link(n: int) -> str:
        return request.build_absolute_uri(request.path) + "?" + urlencode({"page": n, "page_size": size})

    return {"count": count, "next": link(number + 1) if number * size < count else None,
            "previous": link(number - 1) if number > 1 else None, "results": results}


class PingView(Mem0View):
    required_scope = "read"

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        query(request, NoParams)
        key = api_key(request)
        # mem0's client needs an organisation and a project: the tenant and the key's workspace.
        project = key.workspace.name if key.workspace_id else "*"
        return Response({"status": "ok", "org_id": key.tenant.name, "project_id": project, "user_email": None})


class Entities(StrictSerializer):
    user_id = serializers.CharField(max_length=200, required=False)
    agent_id = serializers.CharField(max_length=200, required=False)
    run_id = serializers.CharField(max_length=200, required=False)
    filters = serializers.DictField(required=False, default=dict)


def entities(data: dict[str, Any], where: str) -> memories.Entities:
    filters = dict(data.get("filters") or {})
    for name in memories.ENTITY_FILTERS:
        if data.get(name) is not None:
            if filters.get(name) not in (None, data[name]):
                raise Invalid("invalid_filters", f"{where}: {name} differs from filters.{name}.")
            filters[name] = data[name]
    return memories.entities_from(filters, where=where)


class AddInput(Entities):
    messages = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=1000)
    metadata = MetadataField(required=False, default=dict)
    infer = serializers.BooleanField(required=False, default=True)


class AddView(Mem0View):
    required_scope = "write"

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        data = parse_input(AddInput, request.data)
        stored = memories.add(api_key(request), messages=data["messages"], who=entities(data, "add"),
                              metadata=data["metadata"], infer=data["infer"])
        return Response({"results": stored})


class SearchInput(StrictSerializer):
    query = serializers.CharField(max_length=4000)
    filters = serializers.DictField(required=False, default=dict)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, required=False, default=10)
    threshold = serializers.FloatField(required=False, allow_null=True, default=None)


class SearchView(Mem0View):
    required_scope = "read"

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        data = parse_input(SearchInput, request.data)
        who = memories.entities_from(data["filters"], where="search")
        return Response({"results": memories.search(api_key(request), query=data["query"], who=who,
                                                    top_k=data["top_k"], threshold=data["threshold"])})


class ListInput(StrictSerializer):
    filters = serializers.DictField(required=False, default=dict)


class ListView(Mem0View):
    """POST /v3/memories/: mem0's get_all (filters in the body, paging in the query)."""

    required_scope = "read"

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        params = query(request, Paging)
        data = parse_input(ListInput, request.data)
        who = memories.entities_from(data["filters"], where="get_all")
        size = params["page_size"]
        count, rows = memories.list_memories(api_key(request), who, offset=(params["page"] - 1) * size, limit=size)
        return Response(page(request, count, params, rows))


class DeleteAllParams(serializers.Serializer):
    user_id = serializers.CharField(max_length=200, required=False)
    agent_id = serializers.CharField(max_length=200, required=False)
    run_id = serializers.CharField(max_length=200, required=False)


class DeleteAllView(Mem0View):
    @extend_schema(exclude=True)
    def delete(self, request: Request) -> Response:
        who = memories.entities_from(query(request, DeleteAllParams), where="delete_all")
        deleted = memories.delete_all(api_key(request), who)
        return Response({"message": "Memories deleted successfully!", "deleted": deleted})


class UpdateInput(StrictSerializer):
    text = serializers.CharField(max_length=100_000, required=False)
    metadata = MetadataField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give text or metadata.", code="nothing_to_update")
        return attrs


class MemoryView(Mem0View):
    @extend_schema(exclude=True)
    def get(self, request: Request, memory_id: str) -> Response:
        query(request, NoParams)
        return Response(memories.as_mem0(memories.find(api_key(request), memory_id)))

    @extend_schema(exclude=True)
    def put(self, request: Request, memory_id: str) -> Response:
        query(request, NoParams)
        data = parse_input(UpdateInput, request.data)
        return Response(memories.update(api_key(request), memory_id, text=data.get("text"),
                                        metadata=data.get("metadata")))

    @extend_schema(exclude=True)
    def delete(self, request: Request, memory_id: str) -> Response:
        query(request, NoParams)
        memories.delete(api_key(request), memory_id)
        return Response({"message": "Memory deleted successfully!"})


class HistoryView(Mem0View):
    @extend_schema(exclude=True)
    def get(self, request: Request, memory_id: str) -> Response:
        query(request, NoParams)
        return Response(memories.history(api_key(request), memory_id))


class EntitiesView(Mem0View):
    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        params = query(request, Paging)
        size = params["page_size"]
        count, rows = memories.users(api_key(request), offset=(params["page"] - 1) * size, limit=size)
        return Response(page(request, count, params, rows))
