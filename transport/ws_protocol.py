"""uvicorn's WebSocket protocol, closing with 1001 (going away) when the server shuts down.

uvicorn (0.55, pinned) closes open sockets with 1012 (service restart) on shutdown. A server process
that stops is going away, and clients (graphql-ws, Apollo) reconnect on either code; 1001 is the one
RFC 6455 names for it, and what this service documents."""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

GOING_AWAY = 1001


class GoingAwayWebSocketProtocol(WebSocketsSansIOProtocol):
    """WebSocketsSansIOProtocol whose shutdown sends 1001 instead of 1012."""

    def shutdown(self) -> None:
        if self.close_sent or not self.handshake_complete:
            super().shutdown()
            return
        self.stop_keepalive()
        self.queue.put_nowait({"type": "websocket.disconnect", "code": GOING_AWAY})
        self.conn.send_close(GOING_AWAY, "The server is shutting down.")
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.transport.close()
