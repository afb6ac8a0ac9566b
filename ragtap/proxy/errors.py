"""OpenAI-style error bodies for the failures that are ragtap's or the upstream connection's, not the model's."""

from __future__ import annotations

import orjson
from aiohttp import web


# The reason code of an error ragtap answered itself (not the upstream's): read by the request log.
RAGTAP_ERROR_CODE = web.ResponseKey("ragtap_error_code", str)


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


def bad_path_response() -> web.Response:
    return openai_error(400, "ragtap: the request path would leave the API base (dot segments or encoded slashes)",
                        type_="invalid_request_error", code="bad_path")
