"""The aiocoap peer of wirebench's `coap` protocol (coap.server=aiocoap).

Two resources on one UDP endpoint, bound to the address and port on the command line:

- `echo`: POST or PUT; 2.05 Content with the request's payload (the ping-pong).
- `upload`: PUT or POST; 2.04 Changed once the whole body has arrived (the stream);
  aiocoap reassembles a Block1 upload itself (RFC 7959 section 2.5).

Its transmission parameters are aiocoap's defaults (RFC 7252 section 4.8); they matter
only for separate responses, and both resources answer piggybacked. Written by
protocols/coap/plugin/src/peers.rs into a case's peer directory and run by the venv
that protocols/coap/plugin/install-aiocoap.sh makes.

    python aiocoap_server.py ADDRESS PORT
"""

import asyncio
import sys

import aiocoap
import aiocoap.resource as resource


class Echo(resource.Resource):
    async def render_post(self, request):
        return aiocoap.Message(code=aiocoap.CONTENT, payload=request.payload)

    render_put = render_post


class Upload(resource.Resource):
    async def render_put(self, request):
        return aiocoap.Message(code=aiocoap.CHANGED)

    render_post = render_put


async def main(address, port):
    site = resource.Site()
    site.add_resource(["echo"], Echo())
    site.add_resource(["upload"], Upload())
    await aiocoap.Context.create_server_context(site, bind=(address, port))
    print(f"aiocoap {aiocoap.meta.version} serving on {address}:{port}", flush=True)
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
