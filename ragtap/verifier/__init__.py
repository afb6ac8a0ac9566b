"""Claim verifiers: a stronger model a user brings to judge each claim against its evidence (`[claims.verifier]`)."""

from ragtap.verifier.base import ClaimVerifier, Verification, VerifierError

__all__ = ["ClaimVerifier", "Verification", "VerifierError"]
