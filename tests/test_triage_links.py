"""Grafana's data links and the alerts' `triage` annotations open the triage page with filters its API accepts.

Each link's query string, with Grafana's variables filled in as Grafana would, must parse into a store query
(`ragtap.triage.api.store_query`: an unknown parameter or verdict would be a 400 on the page), and each
verdict it names must be a verdict ragtap has.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from ragtap.store.base import VERDICTS
from ragtap.triage.api import QueryParams, store_query

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = json.loads((ROOT / "deploy" / "grafana" / "dashboard.json").read_text())
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"

# What Grafana puts in place of its variables (a sample of each)
GRAFANA_VALUES = {
    "${__from}": "1732440000000", "${__to}": "1732443600000", "${model:csv}": "gpt-4o",
    "${__field.labels.model}": "gpt-4o", "${__field.labels.verdict}": "refusal", "${__data.fields.model}": "gpt-4o",
}


def panel_links() -> list[tuple[str, str]]:
    """(panel title, link URL) of every data link, defaults and overrides."""
    found = []
    for panel in DASHBOARD["panels"]:
        config = panel.get("fieldConfig", {})
        links = list(config.get("defaults", {}).get("links", []))
        for override in config.get("overrides", []):
            for prop in override.get("properties", []):
                if prop.get("id") == "links":
                    links += prop["value"]
        found += [(panel["title"], link["url"]) for link in links]
    return found


def check_query(url: str) -> dict[str, str]:
    query = urlsplit(url).query
    pairs = tuple(parse_qsl(query, keep_blank_values=True))
    store_query(QueryParams(pairs), 50)  # raises BadRequest for what the API would refuse
    params = dict(pairs)
    for verdict in params.get("verdict", "").split(","):
        assert not verdict or verdict in VERDICTS, url
    return params


def test_every_verdict_and_score_panel_links_to_the_page_filtered() -> None:
    links = panel_links()
    titles = {title for title, _ in links}
    for expected in ("Refusal (15m)", "Parametric (15m)", "Unsupported answer (15m)", "Poor retrieval (15m)", "Unscored (15m)",
                     "Verdict share over time", "Poor retrieval and unscored share", "ragtap alerts (pending / firing)"):
        assert expected in titles, f"{expected}: no data link to the triage page"
    for title, url in links:
        assert url.startswith("${triage_url}?"), (title, url)
        filled = url.replace("${triage_url}", "http://127.0.0.1:8787/triage/")
        for variable, value in GRAFANA_VALUES.items():
            filled = filled.replace(variable, value)
        assert "${" not in filled, f"{title}: a Grafana variable the test does not know: {filled}"
        params = check_query(filled)
        if title.endswith("(15m)"):
            assert params["from"] == "now-15m"  # the stat panels show the last 15 minutes (the page reads Grafana's now-15m)
        elif "from" in params:
            assert (params["from"], params["to"]) == ("1732440000000", "1732443600000")
    variable = next(v for v in DASHBOARD["templating"]["list"] if v["name"] == "triage_url")
    assert variable["query"] == "http://127.0.0.1:8787/triage/"


def test_the_stat_panels_link_to_the_verdict_they_count() -> None:
    by_title = dict(panel_links())
    assert "verdict=refusal&" in by_title["Refusal (15m)"]
    assert "verdict=parametric&" in by_title["Parametric (15m)"]
    assert "verdict=unsupported_answer&" in by_title["Unsupported answer (15m)"]
    assert "poor_retrieval=true&" in by_title["Poor retrieval (15m)"]
    assert "verdict=unscored&" in by_title["Unscored (15m)"]


def test_verdict_and_score_alerts_carry_a_triage_link_their_filters_fit() -> None:
    yaml = pytest.importorskip("yaml")
    groups = yaml.safe_load(RULES.read_text())["groups"]
    alerts = {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}
    expected = {
        "RagtapRefusalRateHigh": "refusal", "RagtapParametricRateHigh": "parametric",
        "RagtapUnsupportedAnswerRateHigh": "unsupported_answer", "RagtapUnsupportedClaimRateHigh": "unsupported_answer",
        "RagtapContradictedClaimRateHigh": "unsupported_answer",
        "RagtapUnscoredRateHigh": "unscored", "RagtapSdrdMedianDropped": "parametric", "RagtapSdrdMedianLow": "parametric",
        "RagtapPoorRetrievalRateHigh": None,
    }
    for name, verdict in expected.items():
        link = alerts[name]["annotations"].get("triage")
        assert link, f"{name}: no triage annotation"
        assert "{{ $labels.model | urlquery }}" in link, name  # the alert's model, URL-escaped by Prometheus
        filled = re.sub(r"\{\{[^}]*\}\}", "gpt-4o", link)
        params = check_query(filled)
        assert params.get("verdict") == verdict and params["model"] == "gpt-4o", name
        if verdict is None:
            assert params["poor_retrieval"] == "true"
