"""The scoring core: pure functions from vectors and texts to scores and verdicts. No I/O here."""

from ragtap.scoring.metrics import compute_scores
from ragtap.scoring.verdict import assess

__all__ = ["assess", "compute_scores"]
