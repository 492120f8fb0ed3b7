"""Exceptions to dm_env_rpc error statuses and back: the one table of the remote adapter.

A server that cannot serve a request answers with a ``google.rpc.Status``
(dm_env_rpc's ``EnvironmentResponse.error``): a code and a message. When the
hub env itself raised (an ``ActionError`` for a bad action, a
``ResetNeededError`` for a step after the end...), the status also carries the
exception's class, its ``args`` and its attributes, as JSON in a
``google.protobuf.Struct`` detail, and marlhub's client raises the same class
with the same message and fields: code written against a local env catches
the same errors from a remote one. A refusal by the protocol itself (a
malformed or out-of-order request) is a
:class:`~marlhub.errors.RemoteRequestError`; exceptions of classes the client
does not rebuild (a backend's own) become one too, naming the class.

Example:
    >>> from marlhub.errors import ActionError
    >>> status = status_of(ActionError("p1", 9, expected="an action in Discrete(3)"))
    >>> error = error_of(status, address="127.0.0.1:5000", call="Step")
    >>> type(error).__name__, error.agent_id, str(error).startswith("Bad action for 'p1': got 9")
    ('ActionError', 'p1', True)
"""

from __future__ import annotations

import builtins
from typing import Any

from marlhub import errors
from marlhub.adapters.remote import codec
from marlhub.errors import RemoteRequestError

__all__ = ["REBUILT_BUILTINS", "error_of", "status_of"]

#: Built-in exceptions an env may raise that come back as themselves.
REBUILT_BUILTINS = frozenset({
    "ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "NotImplementedError",
    "AssertionError", "AttributeError", "ZeroDivisionError", "OverflowError", "LookupError",
})
_DETAIL_KEY = "marlhub.error"


def _code(exc: BaseException) -> int:
    from google.rpc import code_pb2

    if isinstance(exc, RemoteRequestError):
        return int(code_pb2.Code.Value(exc.code)) if exc.code in code_pb2.Code.keys() \
            else code_pb2.FAILED_PRECONDITION
    if isinstance(exc, errors.ResetNeededError):
        return code_pb2.FAILED_PRECONDITION
    if isinstance(exc, (ValueError, TypeError, KeyError, IndexError)):
        return code_pb2.INVALID_ARGUMENT
    if isinstance(exc, NotImplementedError):
        return code_pb2.UNIMPLEMENTED
    return code_pb2.INTERNAL


def _fields(exc: BaseException) -> str:
    """The exception's args and attributes as JSON; what has no JSON form goes as its repr."""
    try:
        return codec.dumps({"args": exc.args, "fields": dict(vars(exc))})
    except (TypeError, ValueError):  # a value json cannot write
        return codec.dumps({"args": tuple(str(a) for a in exc.args), "fields": {}})


def status_of(exc: BaseException) -> Any:
    """Return the ``google.rpc.Status`` that reports ``exc`` to the client."""
    from google.protobuf import any_pb2, struct_pb2
    from google.rpc import status_pb2

    if isinstance(exc, RemoteRequestError):
        return status_pb2.Status(code=_code(exc), message=exc.detail)
    status = status_pb2.Status(code=_code(exc), message=str(exc))
    detail = struct_pb2.Struct()
    detail.update({_DETAIL_KEY: {"module": type(exc).__module__, "type": type(exc).__name__,
                                 "json": _fields(exc)}})
    packed = any_pb2.Any()
    packed.Pack(detail)
    status.details.append(packed)
    return status


def _detail(status: Any) -> Any:
    from google.protobuf import struct_pb2

    for packed in status.details:
        found = struct_pb2.Struct()
        if packed.Is(found.DESCRIPTOR) and packed.Unpack(found) and _DETAIL_KEY in found:
            return found[_DETAIL_KEY]
    return None


def _rebuild(cls: type[BaseException], state: dict[str, Any]) -> BaseException:
    """An instance of ``cls`` with the sender's args and attributes, without calling ``__init__``."""
    exc = cls.__new__(cls)
    BaseException.__init__(exc, *state.get("args", ()))
    exc.__dict__.update(state.get("fields", {}))
    return exc


def error_of(status: Any, *, address: str, call: str) -> BaseException:
    """Return the exception a client raises for an error ``status`` of ``call``."""
    from google.rpc import code_pb2

    code = code_pb2.Code.Name(status.code) if status.code in code_pb2.Code.values() \
        else str(status.code)
    detail = _detail(status)
    if detail is None:
        return RemoteRequestError(call, status.message, code=code, address=address)
    module, name = detail["module"], detail["type"]
    try:
        state = codec.loads(detail["json"])
    except ValueError:
        state = {"args": (status.message,)}
    if module == "marlhub.errors" and name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return _rebuild(cls, state)
    if module == "builtins" and name in REBUILT_BUILTINS:
        return _rebuild(getattr(builtins, name), state)
    if module == "gymnasium.error":
        import gymnasium.error

        cls = getattr(gymnasium.error, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return _rebuild(cls, state)
    return RemoteRequestError(call, f"the env raised {module}.{name}: {status.message}",
                              code=code, address=address)
