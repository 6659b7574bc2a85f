"""What a refused request names, as the code its error carries (Django's `ValidationError.code`):
the API answers 404 or 409 from these codes, never from the words of the message."""

from django.core.exceptions import ValidationError

# The request names something that does not exist (or is another team's, said the same way).
NOT_FOUND = "not_found"
# The request names something that exists but cannot be used yet (a snapshot not done).
NOT_READY = "not_ready"


def missing(message: str) -> ValidationError:
    return ValidationError(message, code=NOT_FOUND)


def not_ready(message: str) -> ValidationError:
    return ValidationError(message, code=NOT_READY)


def codes(refused: ValidationError) -> set[str | None]:
    """The code of every error of the refusal, each field's included."""
    fields = getattr(refused, "error_dict", None)
    errors = [error for listed in fields.values() for error in listed] if fields else refused.error_list
    return {error.code for error in errors}
