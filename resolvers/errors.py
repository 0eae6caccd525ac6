"""GraphQL errors with the `extensions.code` clients rely on (see docs/api.md, "Errors")."""

from __future__ import annotations

from graphql import GraphQLError

BAD_USER_INPUT = "BAD_USER_INPUT"
UNAUTHENTICATED = "UNAUTHENTICATED"
FORBIDDEN = "FORBIDDEN"
INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"
# Redis out of reach for now (down, restarting, failing over): send the operation again shortly.
SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"


class ApiError(GraphQLError):
    """An expected error, shown to the client as it is."""

    def __init__(self, message: str, code: str, **extensions: object) -> None:
        super().__init__(message, extensions={"code": code, **extensions})


def bad_user_input(message: str, *, argument: str | None = None) -> ApiError:
    if argument is None:
        return ApiError(message, BAD_USER_INPUT)
    return ApiError(message, BAD_USER_INPUT, argument=argument)


def unauthenticated() -> ApiError:
    return ApiError(
        "This operation needs a bearer token: send 'Authorization: Bearer <JWT>'.", UNAUTHENTICATED
    )


def forbidden(message: str) -> ApiError:
    return ApiError(message, FORBIDDEN)
