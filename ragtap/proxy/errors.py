"""OpenAI-style error bodies for the failures that are ragtap's or the upstream connection's, not the model's."""

from __future__ import annotations

import orjson
from aiohttp import web

from ragtap.exchange import ExchangeRecord


# The reason code of an error ragtap answered itself (not the upstream's): read by the request log.
RAGTAP_ERROR_CODE = web.ResponseKey("ragtap_error_code", str)


def ragtap_error_code(response: web.StreamResponse) -> str | None:
    """The reason code of an error ragtap answered itself, None for any other response.  (A response's mapping is
    empty unless ragtap marked it: `len` first, since `Mapping.get` / `in` raise and catch a KeyError for every
    unmarked response, twice per request.)"""
    return response.get(RAGTAP_ERROR_CODE) if len(response) else None


def openai_error(status: int, message: str, *, type_: str, code: str | None = None) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    response = web.Response(status=status, body=orjson.dumps(body), content_type="application/json")
    response[RAGTAP_ERROR_CODE] = code or type_
    return response


class UpstreamUnavailable(Exception):
    """The upstream could not be reached or did not answer in time; `response` is what the app gets."""

    def __init__(self, response: web.Response, error_type: str) -> None:
        super().__init__(error_type)
        self.response = response
        self.error_type = error_type

    @classmethod
    def from_broken_body(cls, error: BaseException) -> UpstreamUnavailable:
        timeout = isinstance(error, TimeoutError)
        status, code = (504, "upstream_timeout") if timeout else (502, "upstream_broken_response")
        message = "ragtap: the upstream stopped answering mid-body" if timeout else "ragtap: the upstream broke off its response"
        return cls(openai_error(status, message, type_="upstream_error", code=code), type(error).__name__)


class BadPath(ValueError):
    """A request path that would leave the upstream's API base: dot segments or encoded separators."""


class RequestTooDeep(Exception):
    """A request ragtap must rewrite is nested deeper than it can write back."""


def failure_response(record: ExchangeRecord, failure: UpstreamUnavailable | BadPath | RequestTooDeep) -> web.Response:
    """The app's answer to a failure of ragtap's or of the upstream connection (not the model's), noted on `record`."""
    if isinstance(failure, UpstreamUnavailable):
        record.error_type, record.outcome, record.status = failure.error_type, "upstream_error", failure.response.status
        return failure.response
    if isinstance(failure, BadPath):
        record.status, record.error_type = 400, "bad_path"
        return bad_path_response()
    record.status, record.error_type = 400, "request_too_deep"
    return openai_error(400, "ragtap: the request JSON is nested too deeply for ragtap to rewrite it", type_="invalid_request_error",
                        code="request_too_deep")


# Anthropic's error type for each status ragtap answers with itself.
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                    408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error", 529: "overloaded_error"}


def in_anthropic_shape(response: web.Response) -> web.Response:
    """One of ragtap's own errors (`openai_error`) in the shape the Anthropic SDKs parse:
    `{"type": "error", "error": {"type", "message"}}`."""
    try:
        message = orjson.loads(response.body)["error"]["message"]  # type: ignore[arg-type]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return response
    kind = _ANTHROPIC_TYPES.get(response.status, "api_error")
    shaped = web.Response(status=response.status, body=orjson.dumps({"type": "error", "error": {"type": kind, "message": message}}),
                          content_type="application/json", headers={k: v for k, v in response.headers.items() if k.lower() not in ("content-type", "content-length")})
    shaped[RAGTAP_ERROR_CODE] = response[RAGTAP_ERROR_CODE]
    return shaped


def bad_path_response() -> web.Response:
    return openai_error(400, "ragtap: the request path would leave the API base (dot segments or encoded slashes)",
                        type_="invalid_request_error", code="bad_path")
