"""Registers user1..userN (password passN) on an ejabberd through its HTTP API.

    python3 ejabberd-register.py API_PORT DOMAIN N

Four keep-alive connections to 127.0.0.1:API_PORT, each taking every fourth user: about
1,500 accounts/s here (ejabberdctl would start an Erlang VM per account, ~0.4 s each).
Exits non-zero with the first failures if any registration is refused.
"""

import http.client
import json
import sys
import threading

CONNECTIONS = 4


def main() -> None:
    port, domain, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    errors: list[str] = []

    def work(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(1 + k, n + 1, CONNECTIONS):
            body = json.dumps({"user": f"user{i}", "host": domain, "password": f"pass{i}"})
            try:
                conn.request("POST", "/api/register", body, {"Content-Type": "application/json"})
                reply = conn.getresponse()
                text = reply.read()
            except OSError as e:
                errors.append(f"user{i}: {e}")
                return
            if reply.status != 200:
                errors.append(f"user{i}: HTTP {reply.status} {text[:200]!r}")
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("ejabberd-register.py: " + "; ".join(errors[:3]))


if __name__ == "__main__":
    main()
