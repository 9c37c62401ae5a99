"""Gives ws4py's releases the three things the sockjs-protocol 0.3.3 suite expects of ws4py.

The suite was written against a fork of ws4py (its requirements name it); with the
releases on PyPI its websocket tests fail before they test the server:
- the fork accepted http:// and https:// URLs for ws:// and wss://; the releases raise
  "Invalid scheme: http";
- the suite learns that the server closed a connection by overriding the fork's
  `read_from_connection(amount)` hook, which the releases do not have (they call
  sock.recv directly), so a close is never seen and the test times out;
- frames that arrive with the handshake's answer (a server that sends `o` and a close
  at once) are processed by 0.3.2's connect() all in one parser call, which keeps only
  the last frame, and after it has started the reading thread, so both race for the
  stream; here those bytes are kept and read first through the hook, one frame's worth
  at a time as ws4py reads the socket.
scripts/conformance/sockjs.sh installs this module in the suite's virtualenv with a .pth
line, so it runs before the suite.
"""
import socket

import ws4py.client
import ws4py.websocket

_init = ws4py.client.WebSocketBaseClient.__init__


def _init_http_urls(self, url, *args, **kwargs):
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            url = ws + url[len(http):]
    _init(self, url, *args, **kwargs)


def read_from_connection(self, amount):
    pending = getattr(self, "_pending", b"")
    if pending:
        self._pending = pending[amount:]
        return pending[:amount]
    return self.sock.recv(amount)


_connect = ws4py.client.WebSocketBaseClient.connect


def connect(self):
    """0.3.2's connect(), the bytes that came with the handshake's answer kept for
    read_from_connection instead of processed at once, and the reading thread
    (handshake_ok) started only once they are kept."""

    def keep(body):
        self._pending = body

    handshake_ok = self.handshake_ok
    self.handshake_ok = lambda: None
    self.process = keep
    try:
        _connect(self)
    finally:
        del self.process
        del self.handshake_ok
    handshake_ok()


def _tell_close(self):
    """One more read through the hook once a close frame was seen, so the suite's hook
    reports the close (once)."""
    if getattr(self, "_close_told", False):
        return
    self._close_told = True
    try:
        self.read_from_connection(self.reading_buffer_size)
    except socket.error:
        pass


def once(self):
    """ws4py 0.3.2's once(), reading through the hook; after a close frame, one more
    read, so the hook sees the stream closing as it did in the fork."""
    if self.terminated:
        return False
    try:
        b = self.read_from_connection(self.reading_buffer_size)
    except socket.error:
        return False
    if not self.process(b):
        if b and self.stream is not None and self.stream.closing is not None:
            _tell_close(self)
        return False
    return True


ws4py.client.WebSocketBaseClient.__init__ = _init_http_urls
ws4py.client.WebSocketBaseClient.connect = connect
ws4py.websocket.WebSocket.read_from_connection = read_from_connection
ws4py.websocket.WebSocket.once = once
