"""The wire's messages, built from the shipped ``external.proto`` itself (no generated code).

The ``.proto`` file is the one description of the wire: clients in other
languages generate their code from it, and this module reads the same file
into protobuf descriptors at import, so the two can never drift apart. It
reads the subset of proto3 that the file uses: ``message`` with scalar,
message and ``repeated`` fields, ``oneof``, and one ``service`` whose rpcs
take and return messages or streams of them (``Connect``'s answer, ``Decide``'s
requests and answers).

Example:
    >>> wire = load_wire()
    >>> request = wire.messages["GetActionRequest"](session="s", episode_id="e")
    >>> type(request).FromString(request.SerializeToString()).episode_id
    'e'
    >>> wire.rpcs["Connect"], wire.rpcs["Decide"][2]
    (('ConnectRequest', 'ConnectResponse', 'unary_stream'), 'stream_stream')
    >>> wire.service
    'marlhub.external.v1.ExternalEnv'
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROTO_PATH", "REFUSED_LOGGED", "Wire", "load_wire", "parse_proto"]

#: The ``.proto`` file shipped in the package.
PROTO_PATH = Path(__file__).with_name("external.proto")
#: The trailing metadata key of a request refused for a call it carried (``Logged``); its
#: value is ``"<index> <rpc>"`` (``"0 LogReturns"``): the refused call's place and its name.
REFUSED_LOGGED = "marlhub-refused-logged"

_TOKEN = re.compile(r"//[^\n]*|[A-Za-z_][A-Za-z0-9_.]*|\d+|\"[^\"]*\"|[{}();=]")
_SCALARS = {"double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "bool": 8,
            "string": 9, "bytes": 12, "uint32": 13}
_MESSAGE_TYPE, _OPTIONAL, _REPEATED = 11, 1, 3


@dataclass(frozen=True)
class Wire:
    """The wire's message classes by name, and its rpcs: name -> (request, response, kind),
    where kind names grpcio's call for it: ``"unary_unary"``, ``"unary_stream"``,
    ``"stream_unary"`` or ``"stream_stream"``."""

    package: str
    messages: dict[str, Any]
    rpcs: dict[str, tuple[str, str, str]]
    service: str


def parse_proto(text: str) -> tuple[Any, dict[str, tuple[str, str, str]], str]:
    """Return the ``FileDescriptorProto`` of ``text``, its rpcs, and the service's full name.

    Raises:
        ValueError: something outside the subset this module reads, with where it is.
    """
    from google.protobuf import descriptor_pb2

    tokens = [t for t in _TOKEN.findall(text) if not t.startswith("//")]
    file = descriptor_pb2.FileDescriptorProto(name="marlhub/external/external.proto",
                                              syntax="proto3")
    rpcs: dict[str, tuple[str, str, str]] = {}
    service = ""
    pos = 0

    def take(expected: str = "") -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"external.proto ends early (expected {expected or 'more'})")
        token = tokens[pos]
        pos += 1
        if expected and token != expected:
            raise ValueError(f"external.proto: expected {expected!r}, got {token!r} "
                             f"(token {pos})")
        return token

    while pos < len(tokens):
        word = take()
        if word == "syntax":
            take("=")
            take()
            take(";")
        elif word == "package":
            file.package = take()
            take(";")
        elif word == "message":
            _parse_message(take, file.message_type.add(), file.package)
        elif word == "service":
            service = f"{file.package}.{take()}"
            take("{")
            while take() == "rpc":
                name = take()
                take("(")
                streams = tokens[pos] == "stream"
                if streams:
                    take()
                request = take()
                take(")")
                take("returns")
                take("(")
                streamed = tokens[pos] == "stream"
                if streamed:
                    take()
                response = take()
                take(")")
                take(";")
                kind = f"{'stream' if streams else 'unary'}_{'stream' if streamed else 'unary'}"
                rpcs[name] = (request, response, kind)
        else:
            raise ValueError(f"external.proto: unexpected {word!r} (token {pos})")
    return file, rpcs, service


def _parse_message(take: Any, message: Any, package: str) -> None:
    message.name = take()
    take("{")
    oneof = -1
    while True:
        word = take()
        if word == "}":
            if oneof >= 0:  # the end of a oneof, not of the message
                oneof = -1
                continue
            return
        if word == "oneof":
            message.oneof_decl.add(name=take())
            take("{")
            oneof = len(message.oneof_decl) - 1
            continue
        label = _OPTIONAL
        if word == "repeated":
            label, word = _REPEATED, take()
        name = take()
        take("=")
        number = int(take())
        take(";")
        field = message.field.add(name=name, number=number, label=label,
                                  json_name=_camel(name))
        if word in _SCALARS:
            field.type = _SCALARS[word]
        else:
            field.type = _MESSAGE_TYPE
            field.type_name = f".{package}.{word}"
        if oneof >= 0:
            field.oneof_index = oneof


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@functools.lru_cache(maxsize=None)
def load_wire() -> Wire:
    """Read :data:`PROTO_PATH` into message classes (once per process)."""
    from google.protobuf import descriptor_pool, message_factory

    file, rpcs, service = parse_proto(PROTO_PATH.read_text(encoding="utf-8"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    classes = {}
    for message in file.message_type:
        descriptor = pool.FindMessageTypeByName(f"{file.package}.{message.name}")
        classes[message.name] = message_factory.GetMessageClass(descriptor)
    return Wire(file.package, classes, rpcs, service)
