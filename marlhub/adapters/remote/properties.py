"""What a marlhub server tells about itself, through dm_env_rpc's properties extension.

dm_env_rpc's own extension (``dm_env_rpc.v1.extensions.properties``: list,
read, write, by key) carries these read-only properties, so any dm_env_rpc
client can read them (``PropertiesExtension(connection)["marlhub.env_id"]``):

=====================  =========================================================
``marlhub.version``    the server's marlhub version
``marlhub.env_id``     the registry id the server makes worlds of
``marlhub.config``     JSON: the config of the joined world (the server's, before)
``marlhub.world``      JSON: the joined world's ``possible_agents``, spaces,
                       ``metadata`` and ``render_mode`` (see ``codec``)
``marlhub.render``     JSON: ``env.render()`` of the joined world
=====================  =========================================================

:func:`property_request` and :func:`read_answer` are the client's side; a
plain dm_env_rpc server answers the request with an error.

Example:
    >>> sorted(PROPERTIES)
    ['marlhub.config', 'marlhub.env_id', 'marlhub.render', 'marlhub.version', 'marlhub.world']
"""

from __future__ import annotations

import json
from typing import Any

from marlhub.adapters.remote import codec
from marlhub.errors import RemoteRequestError
from marlhub.version import __version__

__all__ = ["PROPERTIES", "answer_properties", "property_request", "read_answer"]

#: Property key -> description.
PROPERTIES = {
    "marlhub.version": "the server's marlhub version",
    "marlhub.env_id": "the registry id this server makes worlds of",
    "marlhub.config": "JSON: the joined world's config (the server's before joining)",
    "marlhub.world": "JSON: the joined world's agents, spaces, metadata and render_mode",
    "marlhub.render": "JSON: env.render() of the joined world",
}


def _value(key: str, session: Any) -> str:
    world = session.world
    if key == "marlhub.version":
        return __version__
    if key == "marlhub.env_id":
        return str(session.host.env_id)
    if key == "marlhub.config":
        return json.dumps(world.config if world is not None else session.host.config)
    if world is None:
        raise RemoteRequestError("extension", f"property {key!r} needs a joined world",
                                 fix="Send JoinWorld first.")
    if key == "marlhub.world":
        return json.dumps(world.description)
    with world.lock:
        return codec.dumps(world.env.render())


def answer_properties(request: Any, response: Any, session: Any) -> None:
    """Answer an extension request (a packed ``PropertyRequest``) of ``session``.

    Raises:
        RemoteRequestError: an extension other than properties, an unknown key
            (NOT_FOUND), or a write (PERMISSION_DENIED).
    """
    from dm_env_rpc.v1 import tensor_utils
    from dm_env_rpc.v1.extensions import properties_pb2

    call = properties_pb2.PropertyRequest()
    if not request.Is(call.DESCRIPTOR) or not request.Unpack(call):
        raise RemoteRequestError("extension", f"this server knows only the properties "
                                 f"extension, not {request.type_url!r}", code="UNIMPLEMENTED")
    answer = properties_pb2.PropertyResponse()
    kind = call.WhichOneof("payload")
    if kind == "list_property":
        if call.list_property.key not in ("", "marlhub"):
            raise RemoteRequestError("extension", f"no property {call.list_property.key!r} to "
                                     "list", code="NOT_FOUND")
        for key, description in PROPERTIES.items():
            spec = answer.list_property.values.add(is_readable=True, description=description)
            spec.spec.name = key
            spec.spec.dtype = tensor_utils.np_type_to_data_type(str)
    elif kind == "read_property":
        key = call.read_property.key
        if key not in PROPERTIES:
            raise RemoteRequestError("extension", f"no property {key!r}; the properties are "
                                     f"{sorted(PROPERTIES)}", code="NOT_FOUND")
        answer.read_property.value.CopyFrom(tensor_utils.pack_tensor(_value(key, session)))
    else:
        raise RemoteRequestError("extension", "the marlhub properties are read-only",
                                 code="PERMISSION_DENIED")
    response.extension.Pack(answer)


def property_request(key: str) -> Any:
    """Return the packed extension request that reads property ``key``."""
    from dm_env_rpc.v1.extensions import properties_pb2
    from google.protobuf import any_pb2

    packed = any_pb2.Any()
    packed.Pack(properties_pb2.PropertyRequest(
        read_property=properties_pb2.ReadPropertyRequest(key=key)))
    return packed


def read_answer(response: Any) -> str:
    """Return the string value in an extension response to :func:`property_request`."""
    from dm_env_rpc.v1 import tensor_utils
    from dm_env_rpc.v1.extensions import properties_pb2

    answer = properties_pb2.PropertyResponse()
    try:
        if not response.Is(answer.DESCRIPTOR) or not response.Unpack(answer):
            raise ValueError("not a PropertyResponse")
        return str(tensor_utils.unpack_tensor(answer.read_property.value))
    except (TypeError, ValueError) as exc:
        raise RemoteRequestError("extension", f"the server's answer to a property read is no "
                                 f"property ({exc})", code="UNIMPLEMENTED") from exc

