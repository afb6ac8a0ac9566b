"""The bearer-token check that guards ragtap's own HTTP pages (/metrics, the triage API): one implementation.

    token = BearerToken(config.prometheus.token)       # None or "": no token, `allows` is always True
    if not token.allows(request.headers.get("Authorization")): ...   # 401

The comparison is constant-time (`hmac.compare_digest`), so the answer's timing does not leak the token.
"""

from __future__ import annotations

import hmac


class BearerToken:
    __slots__ = ("_expected",)

    def __init__(self, token: str | None) -> None:
        self._expected = f"Bearer {token}".encode() if token else None

    @property
    def required(self) -> bool:
        """A token is set: requests must carry it."""
        return self._expected is not None

    def allows(self, authorization: str | None) -> bool:
        """The `Authorization` header carries the token (always True when none is set)."""
        if self._expected is None:
            return True
        return hmac.compare_digest((authorization or "").strip().encode(), self._expected)
