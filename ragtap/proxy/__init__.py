"""HTTP in and out: the aiohttp server apps talk to, and the client side that talks to the upstream LLM."""
