// One XMPP session pair by xmpp.js (@xmpp/client, a client nobody here wrote) against
// the server at process.argv[2] (host:port, domain argv[3]): SASL, resource binding,
// roster, presence, a message each way, XEP-0199 ping, close. Prints one line per check
// ("ok NAME" or "FAILED NAME: why") and exits 0 only if every check passed. Run by
// scripts/conformance/xmppjs.sh (issue #32).
import { client, xml } from "@xmpp/client";

const [host, port] = process.argv[2].split(":");
const domain = process.argv[3];
const results = [];
const check = (name, ok, why = "") => {
  results.push(ok);
  console.log(ok ? `ok ${name}` : `FAILED ${name}: ${why}`);
};
const within = (ms, what, p) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: no answer in ${ms} ms`)), ms))]);

function session(n) {
  const c = client({ service: `xmpp://${host}:${port}`, domain, username: `user${n}`, password: `pass${n}` });
  c.on("error", () => {}); // each check reports what failed
  c.messages = [];
  c.presences = [];
  c.on("stanza", (s) => {
    if (s.is("message") && s.getChildText("body")) c.messages.push(s);
    if (s.is("presence")) c.presences.push(s);
  });
  return c;
}

async function until(what, f, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what}: nothing in ${ms} ms`);
}

const a = session(1);
const b = session(2);
try {
  const [ja, jb] = await within(10000, "login", Promise.all([a.start(), b.start()]));
  check("sasl-and-bind", ja.local === "user1" && jb.local === "user2", `${ja} ${jb}`);
  const roster = await within(5000, "roster", a.iqCaller.get(xml("query", "jabber:iq:roster")));
  check("roster", roster.is("query") && roster.attrs.xmlns === "jabber:iq:roster", roster.toString());
  await a.send(xml("presence"));
  await b.send(xml("presence"));
  check("presence", true);
  await a.send(xml("message", { to: `user2@${domain}`, type: "chat", id: "m1" }, xml("body", {}, "hello from xmpp.js")));
  const got = await until("message a->b", () => b.messages.find((m) => m.getChildText("body") === "hello from xmpp.js"));
  check("message-a-to-b", got.attrs.from?.startsWith(`user1@${domain}`), got.toString());
  await b.send(xml("message", { to: ja.toString(), type: "chat", id: "m2" }, xml("body", {}, "and back")));
  const back = await until("message b->a", () => a.messages.find((m) => m.getChildText("body") === "and back"));
  check("message-b-to-a", back.attrs.from?.startsWith(`user2@${domain}`), back.toString());
  const pong = await within(5000, "ping", a.iqCaller.request(xml("iq", { type: "get", to: domain }, xml("ping", "urn:xmpp:ping"))));
  check("ping", pong.attrs.type === "result", pong.toString());
  await within(5000, "close", Promise.all([a.stop(), b.stop()]));
  check("close", a.status === "offline" && b.status === "offline", `${a.status} ${b.status}`);
} catch (e) {
  check("session", false, e.message);
  await Promise.allSettled([a.stop(), b.stop()]);
}
const passed = results.filter(Boolean).length;
console.log(`xmppjs: ${passed} passed, ${results.length - passed} failed, 0 skipped`);
process.exit(passed === results.length ? 0 : 1);
