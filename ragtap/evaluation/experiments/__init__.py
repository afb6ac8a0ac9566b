"""The experiments: each one a protocol over a public dataset, run by `ragtap experiment NAME`.

Shared parts live one level up: dataset loaders (`evaluation/datasets.py`), generation through ragtap's proxy
(`generate.py`), retrieval (`retrieval.py`), statistics (`stats.py`) and reports (`report.py`).
"""
