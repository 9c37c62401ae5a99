# Python 2.7, in the Autobahn testsuite's virtualenv (scripts/conformance/autobahn-client.sh).
"""wstest's fuzzingserver (autobahntestsuite.fuzzing.startServer) bound to 127.0.0.1 on an
ephemeral port, which `wstest -m fuzzingserver` cannot do: it listens on every interface, at
the port its spec's URL names.

    python autobahn_fuzzingserver.py SPEC_JSON

SPEC_JSON is wstest's fuzzingserver spec (outdir, cases, exclude-cases; its url is
ignored). Prints `fuzzingserver listening on 127.0.0.1:PORT` once it accepts
connections; runs until it is stopped.
"""
import json
import sys

from twisted.internet import reactor
from autobahntestsuite.fuzzing import FuzzingServerFactory

spec = json.load(open(sys.argv[1]))
spec["url"] = "ws://127.0.0.1"
factory = FuzzingServerFactory(spec)
port = reactor.listenTCP(0, factory, interface="127.0.0.1").getHost().port
# The handshake checks the client's Host header against the port the factory believes
# it serves; that is known only now.
factory.externalPort = port
print("fuzzingserver listening on 127.0.0.1:%d" % port)
sys.stdout.flush()
reactor.run()
