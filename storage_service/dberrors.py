"""Which database errors mean "retry shortly": the server is away or not there yet, out of
connections or resources, or this transaction lost a race. The API answers those 503 with
Retry-After (storage_service.errors.exception_handler); every other database error is a bug."""

from __future__ import annotations

from django.db import DatabaseError, InterfaceError, OperationalError

# SQLSTATEs (PostgreSQL Appendix A) after which the same request can succeed on a retry: the
# server is going away or not there yet, out of connections or of resources, or this
# transaction lost a race (serialization failure, deadlock) or its time budget.
_RETRYABLE_SQLSTATES = frozenset(
    {
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
        "55P03",  # lock_not_available (lock_timeout)
        "57014",  # query_canceled (statement_timeout)
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now (starting up, recovering)
        "57P04",  # database_dropped
        "58000",  # system_error (I/O)
        "58030",  # io_error
    }
)
# Whole classes: 08 connection exception, 53 insufficient resources (too many connections,
# out of memory, disk full).
_RETRYABLE_CLASSES = ("08", "53")


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE psycopg received with the error, if the server sent one."""
    cause: BaseException | None = exc
    while cause is not None:
        code = getattr(cause, "sqlstate", None)
        if isinstance(code, str) and code:
            return code
        cause = cause.__cause__
    return None


def is_unavailable(exc: DatabaseError) -> bool:
    """True for connection-class errors only: the service may answer 503 with Retry-After.

    An error without a SQLSTATE came from the client library, not the server: the connection
    was lost, refused or timed out (psycopg's OperationalError) or is already closed
    (InterfaceError). Everything the server itself refused for another reason (a value too
    long for an index, a bad cast, a missing table) is not cured by a retry.
    """
    code = sqlstate(exc)
    if code is None:
        return isinstance(exc, OperationalError | InterfaceError)
    return code in _RETRYABLE_SQLSTATES or code.startswith(_RETRYABLE_CLASSES)
