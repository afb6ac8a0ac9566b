"""Package data: the tiktoken encodings ragtap ships (see README.md here)."""
