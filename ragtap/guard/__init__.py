"""The guard: an opt-in policy that acts on the verdict before the app receives the answer (docs/guard.md).

- `settings.py`: `[guard]`, the actions and triggers, the per-request override;
- `decision.py`: does an assessment trip the guard, and what the app receives then (outcomes);
- `segments.py` + `strip.py`: removing whole claims from an answer, the rest byte for byte;
- `reply.py`: a whole reply (wait for the assessment; retry once);
- `stream.py`: a stream (sentence-level hold-back, each sentence released once checked or at its deadline).
The checks themselves run in `ragtap.pipeline.guard_lane` (the scoring core, off the event loop); the proxy
plugs these into its relays.
"""

from ragtap.guard.settings import ACTIONS, FALLBACKS, HEADER, TRIGGERS, GuardRequest, GuardSettings, requested_guard

__all__ = ["ACTIONS", "FALLBACKS", "HEADER", "TRIGGERS", "GuardRequest", "GuardSettings", "requested_guard"]
