"""What an acceptable user-facing error looks like (shared by the hardening tests).

warprec must reject bad input with a ValueError / TypeError / KeyError (FileNotFoundError
for paths) raised by warprec itself, whose message says what was wrong. An exception
class from numba, scipy, pandas, zipfile... or a bare message such as numpy's
"setting an array element with a sequence" means the input reached code that never
checked it.
"""

import re

#: Fragments of messages produced deep inside numpy / scipy / numba / pandas / Python,
#: which tell the user nothing about their input.
BARE_MESSAGES = re.compile("|".join([
    r"nopython", r"No implementation of function", r"TypingError", r"Failed in \w+ mode",
    r"setting an array element", r"unhashable type", r"is out of bounds for axis",
    r"invalid literal for", r"could not convert string", r"Python int too large",
    r"object of type .* has no len", r"has no attribute", r"not supported between instances",
    r"operands could not be broadcast", r"only integer scalar arrays",
    r"list index out of range", r"'NoneType' object", r"inhomogeneous shape",
    r"^Error tokenizing data", r"SeedSequence", r"^expected non-negative integer",
    r"cannot be safely cast", r"object is not iterable", r"^\W*\w+\W*$",
]), re.IGNORECASE)

#: The exception types bad input may raise.
USER_ERRORS = (ValueError, TypeError, KeyError)


def message_of(exc):
    """The message text (KeyError's str() adds quotes, so use its argument)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def assert_clean_error(exc, allowed=USER_ERRORS, match=None):
    """Assert ``exc`` is a warprec-raised user error with an informative message.

    Returns the message. ``match`` is a regular expression (case-insensitive) the
    message must contain, naming the actual problem.
    """
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    assert isinstance(exc, allowed), f"{kind} is not one of {allowed}: {exc!r}"
    assert type(exc).__module__ in ("builtins", "warprec.exceptions"), \
        f"a library exception leaked out: {kind}: {exc}"
    message = message_of(exc)
    assert len(message) >= 15, f"uninformative message {message!r} ({kind})"
    assert not BARE_MESSAGES.search(message), f"bare library message {message!r} ({kind})"
    if match is not None:
        assert re.search(match, message, re.IGNORECASE), \
            f"message {message!r} does not say {match!r}"
    return message
