"""Two slixmpp clients against an XMPP server: log in, exchange a message each way, ping.

    python slixmpp_pair.py --port PORT --domain DOMAIN [--starttls] [--mech MECH]

Used by protocols/xmpp/server/tests/integration/interop.rs against wirebench's built-in server. Users
user1/pass1 and user2/pass2 (the server's numbered accounts). Prints one line per step;
exits 0 when every step worked, 1 with the failed step otherwise, within --timeout
seconds. Only 127.0.0.1 is ever contacted.
"""

import argparse
import asyncio
import logging
import ssl
import sys

import slixmpp

BODY = "ping <1> & 'x' \"y\" é"


class Client(slixmpp.ClientXMPP):
    def __init__(self, jid: str, password: str, mech: str | None, starttls: bool):
        super().__init__(jid, password, sasl_mech=mech)
        self.register_plugin("xep_0199")
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.ready = asyncio.get_event_loop().create_future()
        self.add_event_handler("session_start", self.on_start)
        self.add_event_handler("message", self.on_message)
        self.add_event_handler("failed_all_auth", self.on_failed)
        if starttls:
            # The server's certificate is self-signed, made at its start.
            self.ssl_context.check_hostname = False
            self.ssl_context.verify_mode = ssl.CERT_NONE
        self.encrypted = False
        self.add_event_handler("tls_success", lambda _: setattr(self, "encrypted", True))

    async def on_start(self, _event) -> None:
        self.send_presence()
        await self.get_roster()
        if not self.ready.done():
            self.ready.set_result(True)

    def on_failed(self, _event) -> None:
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(f"{self.boundjid.bare}: authentication failed"))

    def on_message(self, msg) -> None:
        if msg["type"] in ("chat", "normal"):
            self.inbox.put_nowait((msg["from"].bare, msg["body"]))


async def run(args) -> None:
    d = args.domain
    a = Client(f"user1@{d}", "pass1", args.mech, args.starttls)
    b = Client(f"user2@{d}", "pass2", args.mech, args.starttls)
    for c in (a, b):
        c.connect(
            address=("127.0.0.1", args.port),
            force_starttls=args.starttls,
            disable_starttls=not args.starttls,
        )
    await asyncio.gather(a.ready, b.ready)
    print(f"logged in: {a.boundjid.full}, {b.boundjid.full}")
    if args.starttls and not (a.encrypted and b.encrypted):
        raise RuntimeError("STARTTLS was asked for but a session is not encrypted")
    a.send_message(mto=f"user2@{d}", mbody=BODY, mtype="chat")
    frm, body = await b.inbox.get()
    if frm != f"user1@{d}" or body != BODY:
        raise RuntimeError(f"user2 got {body!r} from {frm!r}")
    b.send_message(mto=f"user1@{d}", mbody="pong", mtype="chat")
    frm, body = await a.inbox.get()
    if frm != f"user2@{d}" or body != "pong":
        raise RuntimeError(f"user1 got {body!r} from {frm!r}")
    print("messages: both ways, bodies intact")
    rtt = await a["xep_0199"].ping(jid=d, timeout=5)
    print(f"ping: server answered in {rtt * 1000:.1f} ms")
    gone = []
    for c in (a, b):
        f = asyncio.get_event_loop().create_future()
        c.add_event_handler("disconnected", lambda _e, f=f: f.done() or f.set_result(True))
        gone.append(f)
        c.disconnect()
    await asyncio.wait_for(asyncio.gather(*gone), 5)
    print("closed: both streams")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--domain", required=True)
    p.add_argument("--starttls", action="store_true")
    p.add_argument("--mech", default=None, help="SASL mechanism (default: the strongest offered)")
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--debug", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.ERROR)
    # slixmpp leaves a filter task pending at close; asyncio's complaint about it is noise.
    logging.getLogger("asyncio").setLevel(logging.DEBUG if args.debug else logging.CRITICAL)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(asyncio.wait_for(run(args), args.timeout))
    except asyncio.TimeoutError:
        print(f"slixmpp_pair: not done within {args.timeout} s", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - any failure is the test's answer
        print(f"slixmpp_pair: {e}", file=sys.stderr)
        return 1
    print("slixmpp_pair: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
