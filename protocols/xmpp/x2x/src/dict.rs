//! The preset dictionary of the `zlib-dict` compression mode (RFC 1950 §2.2, FDICT).
//!
//! Deflate (RFC 1951) can only refer back to bytes it has already seen. On a fresh
//! connection that means the first stanzas are sent almost literally: on a 2400 bit/s
//! link a 150-byte first message costs half a second. A preset dictionary primes the
//! 32 KiB window on both sides with text that stanzas are likely to contain, so even the
//! first stanza after a (re)connection is mostly back-references.
//!
//! Both gateways must use byte-identical dictionaries. The zlib header carries the
//! dictionary's Adler-32 (DICTID), and the decompressor refuses a stream whose DICTID
//! differs from [`dict_id`], so a mismatch is detected on the first byte rather than
//! showing up as corrupted stanzas. Changing a single byte here is a wire-format change:
//! bump [`crate::NS_X2X`] with it.
//!
//! What goes in: the text of stanzas as they appear on the link, which is how the engine
//! normalises them ([`crate::xml::normalise`]): single-quoted attributes, the top element
//! without its `jabber:client` / `jabber:component:accept` / `jabber:server` namespace
//! (on the link the implied stream header makes `jabber:server` the default, RFC 6120
//! §4.8.3 and XEP-0361 §4.1), and the top element's attributes in the order
//! `from`, `to`, `type`, `id`. Deployment-specific text (domains, user names) cannot be in
//! a constant, so it is learnt from the first stanza.
//!
//! Order matters a little: deflate distance codes for nearby bytes are shorter (RFC 1951
//! §3.2.5), so the most frequent text (the chat message skeleton, the link's own ack and
//! marker elements) comes last, nearest to the data.

/// The dictionary. See the module documentation before editing.
pub const DICT: &[u8] = concat!(
    // Stream-level and rarely used text first (far from the data, longer distance codes).
    "<stream:error><not-well-formed xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>",
    "<undefined-condition xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>",
    "</stream:stream>",
    "<query xmlns='jabber:iq:version'><name>Prosody</name><version></version><os></os></query>",
    "<query xmlns='http://jabber.org/protocol/disco#info'>",
    "<identity category='server' type='im' name=''/><feature var=''/></query>",
    "<query xmlns='http://jabber.org/protocol/disco#items'/>",
    "<query xmlns='jabber:iq:roster' ver=''><item jid='' name='' subscription='both'>",
    "<group></group></item></query>",
    "<vCard xmlns='vcard-temp'/>",
    "<pubsub xmlns='http://jabber.org/protocol/pubsub'><items node='urn:xmpp:avatar:metadata'/>",
    "</pubsub><event xmlns='http://jabber.org/protocol/pubsub#event'><items node=''>",
    "<item id=''></item></items></event>",
    "<x xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x>",
    "<x xmlns='http://jabber.org/protocol/muc#user'>",
    "<item affiliation='member' role='participant'/><status code='110'/></x>",
    "<x xmlns='jabber:x:conference' jid=''/>",
    "<time xmlns='urn:xmpp:time'><tzo>+00:00</tzo><utc></utc></time>",
    "<ping xmlns='urn:xmpp:ping'/>",
    "<x xmlns='vcard-temp:x:update'><photo></photo></x>",
    "<c xmlns='http://jabber.org/protocol/caps' hash='sha-1' node='' ver=''/>",
    "<delay xmlns='urn:xmpp:delay' from='' stamp='2025-01-01T00:00:00Z'/>",
    "<error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>",
    "</error><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>",
    "<text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'></text></error>",
    "<error type='wait'><remote-server-timeout xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>",
    "</error><error type='wait'><resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>",
    "</error>",
    "<presence type='unavailable'/><presence type='subscribe'/><presence type='subscribed'/>",
    "<presence type='probe'/><show>away</show><show>chat</show><show>dnd</show><show>xa</show>",
    "<status></status><priority>0</priority></presence>",
    "<iq type='error' id=''/><iq type='set' id=''/><iq type='result' id=''/>",
    "<store xmlns='urn:xmpp:hints'/>",
    "<markable xmlns='urn:xmpp:chat-markers:0'/>",
    "<displayed xmlns='urn:xmpp:chat-markers:0' id=''/>",
    "<origin-id xmlns='urn:xmpp:sid:0' id=''/><stanza-id xmlns='urn:xmpp:sid:0' by='' id=''/>",
    "<request xmlns='urn:xmpp:receipts'/><received xmlns='urn:xmpp:receipts' id=''/>",
    "<composing xmlns='http://jabber.org/protocol/chatstates'/>",
    "<paused xmlns='http://jabber.org/protocol/chatstates'/>",
    "<active xmlns='http://jabber.org/protocol/chatstates'/>",
    "<message type='groupchat'><subject></subject></message>",
    "<message type='error' xml:lang='en'>",
    // The link's own elements: sent at every (re)connection and with every ack.
    "<r xmlns='urn:xmpp:sm:3'/>",
    "<s xmlns='urn:wirebench:x2x:0' n='0' i=''/>",
    // Prosody stamps the c2s stream's language on every stanza it routes.
    "<presence from='' to='' xml:lang='en'/>",
    "<iq from='' to='' type='get' id='' xml:lang='en'>",
    "<a xmlns='urn:xmpp:sm:3' h=''/>",
    // The most frequent stanza last.
    "<message from='' to='' type='chat' id=''><body></body></message>",
    "<message from='@/' to='@/' type='chat' id='' xml:lang='en'><body></body></message>",
)
.as_bytes();

/// Adler-32 of [`DICT`] (RFC 1950 §2.2 DICTID), as the zlib header announces it. Computed,
/// not written down, so that an edited dictionary cannot carry a stale id.
pub fn dict_id() -> u32 {
    adler32(DICT)
}

/// RFC 1950 §8.2.
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % MOD;
        b = (b + a) % MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1950_adler32_reference_value() {
        // RFC 1950 §9 does not list one; this is the well-known value for "Wikipedia".
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn dictionary_is_ascii_and_fits_the_window() {
        assert!(DICT.is_ascii());
        assert!(
            DICT.len() < 32 * 1024,
            "deflate's window is 32 KiB (RFC 1951 §2)"
        );
        assert!(DICT.ends_with(b"</body></message>"));
    }
}
