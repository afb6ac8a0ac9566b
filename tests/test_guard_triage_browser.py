"""The triage page shows both answers of a guarded interaction, in headless Chromium: the answer as the model wrote
it (its unsupported sentence highlighted) and the answer the app received after the guard stripped it.  (The page
showed one answer before the guard.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_guard_proxy import ACTING, FAITHFUL, INVENTED, WITH_INVENTION, ask, script
from test_triage_browser import browser, rows, texts, until
from test_triage_proxy import flags, stored

pytestmark = pytest.mark.slow


def detail(driver, url: str) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    driver.get(url)
    until(driver, lambda d: len(rows(d)) == 1, "the guarded row")
    rows(driver)[0].find_element(By.CSS_SELECTOR, "td.question").click()
    until(driver, lambda d: d.find_elements(By.ID, "d-delivered"), "the delivered answer")
    assert [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#d-body mark.unsupported")] == [INVENTED]
    headings = [h.lower() for h in texts(driver, "#d-body h3")]  # (the page's CSS shows them upper-case)
    assert any(h.startswith("answer as the model wrote it") for h in headings)
    assert "guard: strip, stripped — the answer the app received" in headings
    assert texts(driver, "#d-delivered") == [FAITHFUL]


async def test_the_detail_view_shows_the_models_answer_and_the_delivered_one(start_proxy, tmp_path: Path) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags={**flags(tmp_path), "guard": ACTING})
    assert (await ask(proxy, "chat", False, "strip"))[0] == FAITHFUL
    await stored(proxy, 1)
    url = proxy.server.triage_url
    assert url is not None
    driver = await asyncio.to_thread(browser)
    try:
        await asyncio.to_thread(detail, driver, url)
    finally:
        await asyncio.to_thread(driver.quit)
