"""Lets ws4py's releases take the http:// URLs the sockjs-protocol 0.3.3 suite gives them.

The suite was written against a fork of ws4py (its requirements name it) that accepted
http:// and https:// for ws:// and wss://; ws4py's releases on PyPI raise "Invalid
scheme: http" instead, which fails the suite's websocket tests before they connect.
scripts/conformance/sockjs.sh installs this module in the suite's virtualenv with a .pth
line, so it runs before the suite.
"""
import ws4py.client

_init = ws4py.client.WebSocketBaseClient.__init__


def _init_http_urls(self, url, *args, **kwargs):
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            url = ws + url[len(http):]
    _init(self, url, *args, **kwargs)


ws4py.client.WebSocketBaseClient.__init__ = _init_http_urls
