"""mem0's routes (as its MemoryClient calls them): parse with a serializer, call memories.py, answer
in mem0's shapes. Errors are MemoryHub's ({"error": {code, message, details}}, with mem0's status
codes: 400, 401, 403, 404, 409; 501 for a call not served). These routes are mem0's API,
documented by mem0: they stay out of MemoryHub's OpenAPI document."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import StrictSerializer, api_key, parse_input, parse_params
from memoryhub.api.errors import error_body, json_404
from memoryhub.api.fields import MetadataField
from memoryhub.errors import Invalid
from retrieval.mem0_compat import memories
from retrieval.mem0_compat.authentication import TokenAuthentication
from retrieval.mem0_compat.entities import delete_entity, list_entities

MAX_PAGE_SIZE = 1000
# mem0's search answers at most this many (its own limit is of the same order).
MAX_TOP_K = 100
MAX_BATCH = 1000  # memories in one batch_update or batch_delete (mem0's own limit)


def query(request: Request, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The query parameters, validated; one the route does not take is 400 unknown_parameter."""
    known = serializer_class().fields
    unknown = sorted(set(request.query_params) - set(known))
    if unknown:
        raise Invalid(
            "unknown_parameter", f"Unknown query parameter {unknown[0]!r}.", {"parameters": unknown}
        )
    return parse_params(
        serializer_class, {k: request.query_params.get(k) for k in request.query_params}
    )


class NoParams(serializers.Serializer):
    pass


class Mem0View(APIView):
    """A mem0 route: the key, its scope, then the query parameters (the ones `params_for` does not
    name are 400 unknown_parameter, as on every route of the REST API), then the method."""

    authentication_classes = [TokenAuthentication]
    params: type[serializers.Serializer] = NoParams
    params_given: dict[str, Any]  # the query parameters, validated (set before the method runs)

    def params_for(self, method: str) -> type[serializers.Serializer]:
        return self.params

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.params_given = query(request, self.params_for(request.method or ""))


class Paging(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=10_000, required=False, default=1)
    page_size = serializers.IntegerField(
        min_value=1, max_value=MAX_PAGE_SIZE, required=False, default=100
    )


def page(
    request: Request, count: int, params: dict[str, Any], results: list[Any]
) -> dict[str, Any]:
    number, size = params["page"], params["page_size"]

    def link(n: int) -> str:
        return (
            request.build_absolute_uri(request.path)
            + "?"
            + urlencode({"page": n, "page_size": size})
        )

    return {
        "count": count,
        "next": link(number + 1) if number * size < count else None,
        "previous": link(number - 1) if number > 1 else None,
        "results": results,
    }


class PingView(Mem0View):
    required_scope = "read"

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        key = api_key(request)
        # mem0's client needs an organisation and a project: the tenant and the key's workspace.
        project = key.workspace.name if key.workspace_id else "*"
        return Response(
            {"status": "ok", "org_id": key.tenant.name, "project_id": project, "user_email": None}
        )


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
        stored = memories.add(
            api_key(request),
            messages=data["messages"],
            who=entities(data, "add"),
            metadata=data["metadata"],
            infer=data["infer"],
        )
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
        return Response(
            {
                "results": memories.search(
                    api_key(request),
                    query=data["query"],
                    who=who,
                    top_k=data["top_k"],
                    threshold=data["threshold"],
                )
            }
        )


class ListInput(StrictSerializer):
    filters = serializers.DictField(required=False, default=dict)


class ListView(Mem0View):
    """POST /v3/memories/: mem0's get_all (filters in the body, paging in the query)."""

    required_scope = "read"
    params = Paging

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        params = self.params_given
        data = parse_input(ListInput, request.data)
        who = memories.entities_from(data["filters"], where="get_all")
        size = params["page_size"]
        count, rows = memories.list_memories(
            api_key(request), who, offset=(params["page"] - 1) * size, limit=size
        )
        return Response(page(request, count, params, rows))


class DeleteAllParams(serializers.Serializer):
    user_id = serializers.CharField(max_length=200, required=False)
    agent_id = serializers.CharField(max_length=200, required=False)
    run_id = serializers.CharField(max_length=200, required=False)


class DeleteAllView(Mem0View):
    params = DeleteAllParams

    @extend_schema(exclude=True)
    def delete(self, request: Request) -> Response:
        who = memories.entities_from(self.params_given, where="delete_all")
        deleted = memories.delete_all(api_key(request), who)
        return Response({"message": "Memories deleted successfully!", "deleted": deleted})


class UpdateInput(StrictSerializer):
    text = serializers.CharField(max_length=100_000, required=False)
    metadata = MetadataField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give text or metadata.", code="nothing_to_update")
        return attrs


class DeleteParams(serializers.Serializer):
    # mem0 deletes the memories this one superseded too; a fact's earlier versions are this same
    # memory (kept as its history), so there is nothing else to delete.
    delete_linked = serializers.BooleanField(required=False, default=False)


class MemoryView(Mem0View):
    def params_for(self, method: str) -> type[serializers.Serializer]:
        return DeleteParams if method == "DELETE" else NoParams

    @extend_schema(exclude=True)
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(memories.as_mem0(memories.find(api_key(request), memory_id)))

    @extend_schema(exclude=True)
    def put(self, request: Request, memory_id: str) -> Response:
        data = parse_input(UpdateInput, request.data)
        return Response(
            memories.update(
                api_key(request), memory_id, text=data.get("text"), metadata=data.get("metadata")
            )
        )

    @extend_schema(exclude=True)
    def delete(self, request: Request, memory_id: str) -> Response:
        memories.delete(api_key(request), memory_id)
        return Response({"message": "Memory deleted successfully!"})


class HistoryView(Mem0View):
    @extend_schema(exclude=True)
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(memories.history(api_key(request), memory_id))


class EntitiesView(Mem0View):
    params = Paging

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        params = self.params_given
        size = params["page_size"]
        count, rows = list_entities(
            api_key(request), offset=(params["page"] - 1) * size, limit=size
        )
        return Response(page(request, count, params, rows))


class EntityView(Mem0View):
    """DELETE /v2/entities/{type}/{name}/: mem0's delete_users (and so its reset)."""

    @extend_schema(exclude=True)
    def delete(self, request: Request, entity_type: str, name: str) -> Response:
        deleted = delete_entity(api_key(request), entity_type, name)
        return Response({"message": "Entity deleted successfully!", "deleted": deleted})


class BatchUpdateItem(StrictSerializer):
    memory_id = serializers.CharField(max_length=300)
    text = serializers.CharField(max_length=100_000, required=False)
    metadata = MetadataField(required=False)


class BatchUpdateInput(StrictSerializer):
    memories = serializers.ListField(child=BatchUpdateItem(), min_length=1, max_length=MAX_BATCH)


class BatchDeleteItem(StrictSerializer):
    memory_id = serializers.CharField(max_length=300)


class BatchDeleteInput(StrictSerializer):
    memories = serializers.ListField(child=BatchDeleteItem(), min_length=1, max_length=MAX_BATCH)


class BatchView(Mem0View):
    """PUT and DELETE /v1/batch/: mem0's batch_update and batch_delete (all or nothing)."""

    @extend_schema(exclude=True)
    def put(self, request: Request) -> Response:
        data = parse_input(BatchUpdateInput, request.data)
        updated = memories.batch_update(api_key(request), data["memories"])
        return Response({"message": f"Successfully updated {updated} memories"})

    @extend_schema(exclude=True)
    def delete(self, request: Request) -> Response:
        data = parse_input(BatchDeleteInput, request.data)
        deleted = memories.batch_delete(
            api_key(request), [m["memory_id"] for m in data["memories"]]
        )
        return Response({"message": f"Successfully deleted {deleted} memories"})


class NotServedView(Mem0View):
    """A call of mem0's client that MemoryHub has no counterpart for: 501 not_served, saying what
    to use instead, after the key is checked (never a page of HTML)."""

    required_scope = "read"
    what = ""
    instead = ""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # The key and its scope only: whatever parameters it is given, the call is not served.
        APIView.initial(self, request, *args, **kwargs)

    @extend_schema(exclude=True)
    def not_served(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        message = f"mem0's {self.what} is not served by MemoryHub" + (
            f": {self.instead}" if self.instead else "."
        )
        return Response(error_body("not_served", message), status=501)

    get = post = put = patch = delete = not_served


def not_found(request: HttpRequest, path: str) -> JsonResponse:
    """Any other path of mem0's API versions: the JSON 404 the REST API answers."""
    return json_404(request)
