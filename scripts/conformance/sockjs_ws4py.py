"""Gives ws4py's releases the two things the sockjs-protocol 0.3.3 suite expects of ws4py.

The suite was written against a fork of ws4py (its requirements name it); with the
releases on PyPI its websocket tests fail before they test the server:
- the fork accepted http:// and https:// URLs for ws:// and wss://; the releases raise
  "Invalid scheme: http";
- the suite learns that the server closed a connection by overriding the fork's
  `read_from_connection(amount)` hook, which the releases do not have (they call
  sock.recv directly), so a close is never seen and the test times out.
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
    return self.sock.recv(amount)


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
            try:
                self.read_from_connection(self.reading_buffer_size)
            except socket.error:
                pass
        return False
    return True


ws4py.client.WebSocketBaseClient.__init__ = _init_http_urls
ws4py.websocket.WebSocket.read_from_connection = read_from_connection
ws4py.websocket.WebSocket.once = once
