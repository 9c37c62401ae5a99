// Study S2 with Strophe.js under Node: connect, authenticate, then N XEP-0199 pings,
// each waiting for its pong; prints one JSON line with the total time.
//
//   node s2.mjs URL JID PASSWORD [N] [flush]
//
// URL: ws://... (RFC 7395) or http://... (BOSH). With "flush", each ping is followed by
// Strophe's connection.flush(): its BOSH transport otherwise sends queued stanzas from an
// idle timer 100 ms after send() (Bosh._send in strophe.js).
import XMLHttpRequest from 'xhr2';
import { DOMParser } from '@xmldom/xmldom';

// Node has no XMLHttpRequest, and xhr2's has no responseXML (browsers parse a text/xml
// answer into it; Strophe's BOSH reads it).
class XHR extends XMLHttpRequest {
  get responseXML() {
    if (this.readyState !== 4 || !this.responseText) return null;
    return new DOMParser().parseFromString(this.responseText, 'text/xml');
  }
}
globalThis.XMLHttpRequest = XHR;
const { Strophe, $iq } = await import('strophe.js');

const [url, jid, password, nArg, mode] = process.argv.slice(2);
const n = Number(nArg || 100);
const flush = mode === 'flush';
const domain = jid.split('@')[1];
Strophe.setLogLevel?.(Strophe.LogLevel.FATAL);
const t0 = performance.now();
const c = new Strophe.Connection(url);
let done = 0;
let tLogin = 0;
const fail = (why) => {
  console.log(JSON.stringify({ url, ok: false, why, pings: done }));
  process.exit(1);
};
function ping() {
  c.sendIQ(
    $iq({ type: 'get', to: domain, id: `s2-${done}` }).c('ping', { xmlns: 'urn:xmpp:ping' }),
    () => {
      done += 1;
      if (done < n) return ping();
      const total = performance.now() - t0;
      console.log(JSON.stringify({ url, ok: true, flush, pings: n, total_ms: total, login_ms: tLogin }));
      c.disconnect();
      setTimeout(() => process.exit(0), 100);
    },
    (e) => fail(`ping error ${e && e.outerHTML}`),
  );
  if (flush) c.flush();
}
c.connect(jid, password, (status, cond) => {
  if (status === Strophe.Status.CONNECTED) {
    tLogin = performance.now() - t0;
    ping();
  } else if ([Strophe.Status.AUTHFAIL, Strophe.Status.CONNFAIL, Strophe.Status.ERROR].includes(status)) {
    fail(`status ${status} ${cond || ''}`);
  }
});
setTimeout(() => fail('timeout'), 60000);
