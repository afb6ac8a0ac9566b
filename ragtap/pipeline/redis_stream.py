"""What the proxy's hand-off and the workers share about the Redis stream: the client, the group, the add script.

The stream holds only interactions not yet scored: a worker deletes an entry when it acknowledges it, so the
stream's length is the backlog (unread + being scored), and `max_length` bounds the backlog, not the history.
The add script checks that bound and adds in one atomic step (one round trip for a whole batch of entries,
atomic also with several proxies): an entry that would go beyond it is refused (the proxy counts it as shed,
"stream_full", as the in-process queue sheds when full).  `XADD ... MAXLEN ~` stays on every add as the hard
ceiling should anything else write to the stream.
"""

from __future__ import annotations

from typing import Any

from ragtap.config import RedisQueueSettings

# KEYS[1] the stream; ARGV[1] max length; then (id, payload) pairs.  Returns one 1 (added) or 0 (shed) per entry.
ADD_SCRIPT = """
local limit = tonumber(ARGV[1])
local length = redis.call('XLEN', KEYS[1])
local added = {}
for i = 2, #ARGV, 2 do
  if length < limit then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', limit, '*', 'h', ARGV[i], 'd', ARGV[i + 1])
    length = length + 1
    added[#added + 1] = 1
  else
    added[#added + 1] = 0
  end
end
return added
"""

DEDUPE_PREFIX = "ragtap:exported:"  # + hand-off id: set (NX, with a TTL) by the worker that exports it


def connect(url: str, *, timeout_s: float, single_connection: bool = False) -> Any:
    """An asyncio client that fails fast: no retries of its own (the callers back off and fall back), socket
    timeouts so a dead server cannot hang a call.  `single_connection`: for a client only one task uses at a time
    (the proxy's sender): no pool to take a connection from and give it back on every call (~10 µs each)."""
    import redis.asyncio as redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    return redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0), health_check_interval=0,
        single_connection_client=single_connection,
    )


class AddScript:
    """ADD_SCRIPT by its SHA (EVALSHA: the script's text is not sent each time), loaded again when Redis lost it
    (a restart without persistence, SCRIPT FLUSH)."""

    def __init__(self, client: Any) -> None:
        import hashlib

        self.client = client
        self.sha = hashlib.sha1(ADD_SCRIPT.encode()).hexdigest()

    async def __call__(self, stream: str, max_length: int, entries: list[tuple[str, bytes]]) -> list[int]:
        from redis.exceptions import NoScriptError

        args: list[Any] = [max_length]
        for handoff_id, payload in entries:
            args.extend((handoff_id, payload))
        try:
            return list(await self.client.evalsha(self.sha, 1, stream, *args))
        except NoScriptError:
            await self.client.script_load(ADD_SCRIPT)
            return list(await self.client.evalsha(self.sha, 1, stream, *args))


async def ensure_group(client: Any, settings: RedisQueueSettings) -> None:
    """Create the stream and the consumer group if missing.  From id 0: entries a proxy added before any worker
    existed are read too."""
    from redis.exceptions import ResponseError

    try:
        await client.xgroup_create(settings.stream, settings.group, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise
