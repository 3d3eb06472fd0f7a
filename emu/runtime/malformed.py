"""Requests whose bytes are not the RPC's protobuf message.

gRPC's Python server logs a traceback for each such request before it refuses it; a
client that sends garbage (a fuzzer, a wrong port, a version skew) then fills the
switch's log with stacks that read like crashes. This interceptor parses the request
itself: a malformed one is counted, logged in one line and refused with INTERNAL, the
code gRPC (and BMv2's server) gives it. A malformed message inside a StreamChannel ends
that stream the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import grpc
from google.protobuf.message import DecodeError

log = logging.getLogger("emu.runtime.server")

STAT = "malformed_requests"


class Malformed:
    """Stands for a request that did not parse."""

    def __init__(self, kind: str, error: str) -> None:
        self.kind = kind
        self.error = error

    def message(self, method: str) -> str:
        return f"{method}: the request is not a valid {self.kind} ({self.error})"


def _parser(parse: Callable[[bytes], Any], kind: str) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            # protobuf says "Error parsing message with type 'K': why": the why
            why = str(exc).splitlines()[0].rsplit(": ", 1)[-1] if str(exc) else ""
            return Malformed(kind, why or type(exc).__name__)
    return deserialize


class MalformedRequests(grpc.ServerInterceptor):
    """Counts malformed requests in `stats[STAT]` and refuses each in one log line."""

    def __init__(self, stats: MutableMapping[str, int]) -> None:
        self.stats = stats
        stats.setdefault(STAT, 0)

    def _refuse(self, bad: Malformed, method: str, context: grpc.ServicerContext) -> None:
        self.stats[STAT] += 1
        text = bad.message(method)
        log.warning("P4Runtime %s: refused (INTERNAL)", text)
        context.abort(grpc.StatusCode.INTERNAL, text)

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        parse = getattr(handler, "request_deserializer", None)
        if handler is None or parse is None:
            return handler
        method = details.method.rsplit("/", 1)[-1]
        kind = getattr(getattr(parse, "__self__", None), "DESCRIPTOR", None)
        safe = _parser(parse, kind.full_name if kind is not None else "message")
        if handler.unary_unary is not None:
            return handler._replace(request_deserializer=safe,
                                    unary_unary=self._unary(handler.unary_unary, method))
        if handler.unary_stream is not None:
            return handler._replace(request_deserializer=safe,
                                    unary_stream=self._unary(handler.unary_stream, method))
        if handler.stream_stream is not None:
            return handler._replace(request_deserializer=safe,
                                    stream_stream=self._streaming(handler.stream_stream, method))
        return handler

    def _unary(self, behaviour: Callable[[Any, grpc.ServicerContext], Any],
               method: str) -> Callable[[Any, grpc.ServicerContext], Any]:
        def call(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, Malformed):
                self._refuse(request, method, context)
            return behaviour(request, context)
        return call

    def _streaming(self, behaviour: Callable[[Iterator[Any], grpc.ServicerContext], Any],
                   method: str) -> Callable[[Iterator[Any], grpc.ServicerContext], Any]:
        def call(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            bad: list[Malformed] = []

            def checked() -> Iterator[Any]:
                # The stream's requests are read on a thread of their own: end them there
                # and refuse the call here, on the handler's thread.
                for request in requests:
                    if isinstance(request, Malformed):
                        bad.append(request)
                        return
                    yield request
            yield from behaviour(checked(), context)
            if bad:
                self._refuse(bad[0], method, context)
        return call
