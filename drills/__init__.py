"""Failure drills the suite runs (marked slow: `make test-slow`), run as modules from the
checkout's root: ``python -m drills.cluster`` (`make drill`)."""

# A drill measures what a failure costs, not the API's limits: its clients, on a fast machine,
# would spend a key's writes for the minute within the drill (an upload is two), and every
# request after that would be a 429 that the drill counts as lost.
LIMITS_OUT_OF_REACH = {
    name: str(10**9)
    for name in (
        "SERVICE_RATE_LIMIT_READS_PER_MINUTE",
        "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE",
        "SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE",
        "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE",
    )
}
