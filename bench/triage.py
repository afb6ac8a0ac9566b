"""How fast the triage page answers with 100,000 stored interactions, against 1,000 in the same run.

    .venv/bin/python bench/triage.py [--rows 100000] [--baseline 1000] [--repeats 15] [--no-browser] [--json]

A real SQLite capture store (WAL, FTS5; `ragtap.store.factory.open_store`) in a temporary folder is filled with
synthetic interactions (bulk `add_many`, realistic texts: a question, two documents, support, a two-claim answer;
verdicts, models, users, sessions and poor retrieval spread over the rows), then the triage routes are served on
127.0.0.1 exactly as the proxy mounts them, and timed over HTTP (aiohttp client, keep-alive):

- the first page of the table (50 rows) with no filter and with each filter (verdict, verdict + model, poor
  retrieval, user, session, a one-hour time range, free text), the 200th page by keyset cursor, the detail view
  of one interaction, and a label post;
- the page in headless Chromium (Debian's chromium + chromedriver, through selenium): from navigation to the
  50 rows rendered (the page, its assets, /api/meta and the first page of rows), and the detail view opened by a
  click until its answer is drawn.

Each measure is the median of `--repeats` runs (after one warm-up), at 100k rows and at the baseline size, in the
same run (the machine is shared and noisy: compare the ratio, not the absolute numbers across runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from ragtap.config import DEFAULT_THRESHOLDS  # noqa: E402
from ragtap.store.base import CapturedInteraction  # noqa: E402
from ragtap.store.factory import open_store  # noqa: E402
from ragtap.store.settings import StoreSettings  # noqa: E402
from ragtap.triage.routes import add_triage_routes  # noqa: E402
from ragtap.triage.settings import TriageSettings  # noqa: E402
from ragtap.types import ClaimOutcome, ClaimSupport, Document, Scores  # noqa: E402

NOW = time.time()
VERDICTS = ("grounded", "parametric", "refusal", "unsupported_answer", "unscored")
VERDICT_WEIGHTS = (0.55, 0.15, 0.12, 0.13, 0.05)
MODELS = ("gpt-4o-mini", "gpt-4o", "llama-3.1-8b", "claude-haiku")
WORDS = ("tower bridge kernel region server bucket policy index vector answer billing quota webhook cluster "
         "replica shard backup network firewall token latency storage snapshot queue retry endpoint").split()


def synthetic(i: int, rng: random.Random) -> CapturedInteraction:
    """Row i, i*2 seconds before now (100k rows span ~2.3 days)."""
    topic = " ".join(rng.choices(WORDS, k=4))
    first = f"The {topic} is configured per region."
    second = f"It was changed in {1990 + i % 30} by the operator."
    answer = f"{first} {second}"
    start = len(first) + 1
    claims = (
        ClaimSupport("answer", first, 0, len(first), ClaimOutcome.SUPPORTED, "lexical", 0.8, 0, 0, 60, 0.8, (), ()),
        ClaimSupport("answer", second, start, start + len(second), ClaimOutcome.NOT_FOUND, "number_missing", 0.3, 0, 0, 60, 0.2, (str(1990 + i % 30),), ()),
    )
    scores = Scores(*(round(rng.uniform(0.2, 0.95), 3) for _ in range(6)), attributed_document=rng.randrange(2))
    return CapturedInteraction(
        id=f"bench-{i:07d}",
        time=NOW - 2 * i,
        question=f"How is the {topic} set up for case {i}?",
        documents=(Document(f"Documentation of the {topic}: " + " ".join(rng.choices(WORDS, k=60)), f"doc-{i % 500}"),
                   Document("Related notes: " + " ".join(rng.choices(WORDS, k=40)), f"doc-{(i + 7) % 500}")),
        supporting=f"The {topic} is configured per region, see the documentation.",
        answer=answer,
        scores=scores,
        thresholds=DEFAULT_THRESHOLDS,
        verdict=rng.choices(VERDICTS, VERDICT_WEIGHTS)[0],
        poor_retrieval=rng.random() < 0.2,
        explanation="SDRD 0.41 fail: the support was not taken from the documents",
        claims=claims,
        latency_ms=rng.uniform(200, 2000),
        model=MODELS[i % len(MODELS)],
        prompt_tokens=rng.randrange(300, 2000),
        answer_tokens=rng.randrange(20, 200),
        supporting_tokens=rng.randrange(10, 60),
        trace_id=f"{rng.getrandbits(128):032x}",
        span_id=f"{rng.getrandbits(64):016x}",
        user=f"user-{i % 997}",
        session=f"session-{i % 9973}",
        rag_source="langchain",
    )


async def fill(store: Any, rows: int) -> float:
    """Bulk-write `rows` synthetic interactions; returns rows per second."""
    rng = random.Random(14)
    began = time.perf_counter()
    batch = 5000
    for first in range(0, rows, batch):
        items = [synthetic(i, rng) for i in range(first, min(rows, first + batch))]
        await store.add_many(items)
    return rows / (time.perf_counter() - began)


async def median_ms(operation: Callable[[], Awaitable[None]], repeats: int) -> float:
    await operation()  # warm-up (the first read opens the reader's connection)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        await operation()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def api_measures(base: str, http: aiohttp.ClientSession, rows: int, repeats: int) -> dict[str, float]:
    async def get(path: str) -> dict[str, Any]:
        async with http.get(base + path) as response:
            body = await response.json()
            assert response.status == 200, body
            return body

    middle = int(NOW - rows)  # a one-hour window in the middle of the stored span (rows are 2 s apart)
    window = f"from={(middle - 1800) * 1000}&to={(middle + 1800) * 1000}"
    queries = {
        "first page, no filter": "",
        "verdict=refusal": "verdict=refusal",
        "verdict=unsupported_answer & model": "verdict=unsupported_answer&model=gpt-4o",
        "poor_retrieval=true": "poor_retrieval=true",
        "user (1 in 997)": "user=user-5",
        "session (1 in 9973)": "session=session-77",
        "time range (1 h in the middle)": window,
        "free text, two common words (most rows)": "q=webhook%20snapshot",
        "free text, a rare word (1 row)": f"q=case%20{rows // 2 + 1}",
    }
    results: dict[str, float] = {}
    for name, query in queries.items():
        path = f"/api/interactions?limit=50&{query}"
        body = await get(path)
        assert body["items"], f"{name}: no rows"
        results[name] = await median_ms(lambda path=path: get(path), repeats)  # type: ignore[misc]
        results[f"{name}: rows"] = len(body["items"])  # a page holds up to 50: compare like with like

    # a deep page: walk the cursor 199 pages down once, then time the 200th page
    cursor = None
    depth = min(199, rows // 50 - 1)
    for _ in range(depth):
        cursor = (await get(f"/api/interactions?limit=50{f'&cursor={cursor}' if cursor else ''}"))["next_cursor"]
    deep = f"/api/interactions?limit=50&cursor={cursor}"
    results["deep page by cursor"] = await median_ms(lambda: get(deep), repeats)
    results["deep page number"] = depth + 1

    detail = f"/api/interactions/bench-{rows // 2:07d}"
    results["detail view"] = await median_ms(lambda: get(detail), repeats)

    async def label() -> None:
        async with http.post(base + f"/api/interactions/bench-{rows // 3:07d}/labels", json={"verdict_right": True}) as response:
            assert response.status == 201, await response.text()

    results["label post"] = await median_ms(label, repeats)
    return results


def browser_measures(page_url: str, repeats: int) -> dict[str, float] | str:
    """Navigation to 50 rows rendered, and a row click to the detail's answer drawn (ms, medians)."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return "chromium / chromedriver not installed"
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return "selenium not installed (pip install -e .[test])"
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    driver.set_page_load_timeout(60)
    try:
        loads, details = [], []
        for attempt in range(repeats + 1):
            began = time.perf_counter()
            driver.get(page_url)
            WebDriverWait(driver, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr")) >= 50)
            loaded = (time.perf_counter() - began) * 1000
            began = time.perf_counter()
            driver.find_elements(By.CSS_SELECTOR, "#rows tr")[attempt % 50].click()
            WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#d-body mark.unsupported"))
            opened = (time.perf_counter() - began) * 1000
            if attempt:  # the first is a warm-up (browser start, cold caches)
                loads.append(loaded)
                details.append(opened)
        return {"page load to 50 rows": statistics.median(loads), "row click to detail drawn": statistics.median(details)}
    finally:
        driver.quit()


async def measure(rows: int, repeats: int, browser: bool, folder: Path) -> dict[str, Any]:
    store = open_store(StoreSettings(capture="all", path=str(folder / f"bench-{rows}.sqlite3"), max_rows=rows + 10))
    runner = None
    try:
        rate = await fill(store, rows)
        app = web.Application()
        add_triage_routes(app, store, TriageSettings(poll_seconds=0), token=None, thresholds=DEFAULT_THRESHOLDS, listen_host="127.0.0.1")
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{port}/triage"
        async with aiohttp.ClientSession() as http:
            api = await api_measures(base, http, rows, repeats)
        page: dict[str, float] | str = "skipped (--no-browser)"
        if browser:
            page = await asyncio.get_running_loop().run_in_executor(None, browser_measures, base + "/", max(3, repeats // 3))
        size_mb = sum(p.stat().st_size for p in folder.glob(f"bench-{rows}.sqlite3*")) / 1e6
        return {"rows": rows, "fill_rows_per_s": rate, "store_mb": size_mb, "api_ms": api, "browser_ms": page}
    finally:
        if runner is not None:
            await runner.cleanup()
        await store.close()


def report(big: dict[str, Any], small: dict[str, Any]) -> str:
    lines = [f"{'measure (median ms) [rows on the page]':52} {small['rows']:>10,} rows {big['rows']:>13,} rows {'ratio':>7}"]
    for name, value in big["api_ms"].items():
        base = small["api_ms"][name]
        if name.endswith(": rows"):
            continue
        if name == "deep page number":
            lines.append(f"{'(the deep page is page)':52} {base:15.0f} {value:18.0f}")
            continue
        count = (f"[{small['api_ms'][name + ': rows']}]", f"[{big['api_ms'][name + ': rows']}]") if name + ": rows" in big["api_ms"] else ("", "")
        lines.append(f"{'API ' + name:52} {base:10.2f} {count[0]:>4} {value:13.2f} {count[1]:>4} {value / base:7.2f}")
    if isinstance(big["browser_ms"], dict) and isinstance(small["browser_ms"], dict):
        for name, value in big["browser_ms"].items():
            base = small["browser_ms"][name]
            lines.append(f"{'browser ' + name:52} {base:15.1f} {value:18.1f} {value / base:7.2f}")
    else:
        lines.append(f"browser: {big['browser_ms']}")
    lines.append(f"fill: {small['fill_rows_per_s']:,.0f} / {big['fill_rows_per_s']:,.0f} rows/s; "
                 f"store size {small['store_mb']:.1f} / {big['store_mb']:.1f} MB")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--baseline", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", action="store_true", help="also print the raw measurements as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragtap-bench-triage-") as tmp:
        small = await measure(args.baseline, args.repeats, not args.no_browser, Path(tmp))
        big = await measure(args.rows, args.repeats, not args.no_browser, Path(tmp))
    print(report(big, small))
    if args.json:
        print(json.dumps({"baseline": small, "rows": big}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
