"""Exceptions that the CLI turns into one-line messages and exit code 2."""


class HssError(Exception):
    """Base class for every error a user can act on."""


class InputError(HssError):
    """Bad user input: a corpus, a params file, a CLI option."""


class ModelError(HssError):
    """A model could not be resolved, verified, loaded or called."""


class NormalizationError(HssError):
    """The normalization constants are missing or unusable."""


class StoreError(HssError):
    """The production sample store could not be reached, read or written."""


class ReportError(HssError):
    """A verdict was reached but its files could not be written."""


def error_message(exc: BaseException) -> str:
    """The one-line reason a step failed (HssError messages are already user-facing)."""
    return str(exc) if isinstance(exc, HssError) else f"{type(exc).__name__}: {exc}"
