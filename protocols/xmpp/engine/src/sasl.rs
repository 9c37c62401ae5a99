//! SASL mechanisms for XMPP authentication (RFC 6120 §6): PLAIN (RFC 4616) and
//! SCRAM-SHA-1 / SCRAM-SHA-256 without channel binding (RFC 5802, RFC 7677).
//!
//! SCRAM is implemented once, generic over the hash (`sha1` / `sha2` with `hmac` and
//! `pbkdf2`, all RustCrypto). The client checks the server's signature in server-final:
//! a server that does not know the password (or a man in the middle) is caught, and the
//! error says so.
//!
//! PBKDF2 with Prosody's 10 000 iterations costs milliseconds of CPU, which matters when a
//! load test logs in thousands of sessions of the same account. [`ScramCache`] keeps the
//! salted password keyed by (hash, password, salt, iterations): sessions sharing one
//! cache (it is an `Arc` inside, cheap to clone) compute it once. The key includes the
//! password, so a wrong guess never hits a right entry, and the salt, so a server that
//! rotates credentials gets a fresh computation.
//!
//! Not implemented: SASLprep (RFC 4013) of the password (it is used as UTF-8 bytes as
//! given, which equals SASLprep for the ASCII passwords of test accounts), channel binding
//! (`-PLUS` variants), and authorization identities.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};

use crate::error::XmppError;

/// SASL mechanisms, named as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    ScramSha256,
    ScramSha1,
    Plain,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha1 => "SCRAM-SHA-1",
            Mechanism::Plain => "PLAIN",
        }
    }

    /// The mechanism of that wire name.
    pub fn from_name(name: &str) -> Option<Mechanism> {
        [
            Mechanism::ScramSha256,
            Mechanism::ScramSha1,
            Mechanism::Plain,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }

    fn hash(self) -> Option<Hash> {
        match self {
            Mechanism::ScramSha256 => Some(Hash::Sha256),
            Mechanism::ScramSha1 => Some(Hash::Sha1),
            Mechanism::Plain => None,
        }
    }
}

/// Largest iteration count accepted from a server: a hostile one could otherwise make
/// every login burn seconds of CPU. Prosody uses 10 000 (4096 before 0.12).
pub const MAX_ITERATIONS: u32 = 1_000_000;
/// Entries a [`ScramCache`] holds before it starts over (bounded memory).
const CACHE_CAP: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hash {
    Sha1,
    Sha256,
}

impl Hash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            // HMAC accepts keys of any length, so this cannot fail.
            let mut m = <M as Mac>::new_from_slice(key).expect("HMAC takes any key length");
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        match self {
            Hash::Sha1 => run::<Hmac<sha1::Sha1>>(key, data),
            Hash::Sha256 => run::<Hmac<sha2::Sha256>>(key, data),
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Hash::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    fn pbkdf2(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Hash::Sha1 => {
                let mut out = vec![0u8; 20];
                pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, &mut out);
                out
            }
            Hash::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

type CacheKey = (Hash, String, Vec<u8>, u32);

/// Shared cache of SCRAM salted passwords; clone it into every session of a load test.
#[derive(Clone, Default)]
pub struct ScramCache {
    inner: Arc<Mutex<HashMap<CacheKey, Arc<[u8]>>>>,
}

impl std::fmt::Debug for ScramCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print passwords.
        write!(f, "ScramCache({} entries)", self.len())
    }
}

impl ScramCache {
    pub fn new() -> ScramCache {
        ScramCache::default()
    }

    /// Number of salted passwords held.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn salted(&self, hash: Hash, password: &str, salt: &[u8], iterations: u32) -> Arc<[u8]> {
        let key = (hash, password.to_string(), salt.to_vec(), iterations);
        if let Ok(m) = self.inner.lock()
            && let Some(v) = m.get(&key)
        {
            return v.clone();
        }
        // Computed outside the lock: other sessions are not held up by PBKDF2.
        let v: Arc<[u8]> = hash.pbkdf2(password.as_bytes(), salt, iterations).into();
        if let Ok(mut m) = self.inner.lock() {
            if m.len() >= CACHE_CAP {
                m.clear();
            }
            m.insert(key, v.clone());
        }
        v
    }
}

/// The initial response of PLAIN (RFC 4616 §2): empty authzid, authcid, password.
pub fn plain_initial(user: &str, password: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(user.len() + password.len() + 2);
    v.push(0);
    v.extend_from_slice(user.as_bytes());
    v.push(0);
    v.extend_from_slice(password.as_bytes());
    v
}

/// A SCRAM exchange in progress (client side).
#[derive(Debug)]
pub struct Scram {
    hash: Hash,
    password: String,
    client_first_bare: String,
    nonce: String,
    /// Expected `v=` of server-final, known once client-final is built.
    server_signature: Option<Vec<u8>>,
}

impl Scram {
    /// `mechanism` must be a SCRAM one; `nonce` must be printable ASCII without ','.
    pub fn new(mechanism: Mechanism, user: &str, password: &str, nonce: &str) -> Option<Scram> {
        let hash = mechanism.hash()?;
        // RFC 5802 §5.1: '=' and ',' in the user name are escaped.
        let user = user.replace('=', "=3D").replace(',', "=2C");
        Some(Scram {
            hash,
            password: password.to_string(),
            client_first_bare: format!("n={user},r={nonce}"),
            nonce: nonce.to_string(),
            server_signature: None,
        })
    }

    /// client-first-message: gs2 header `n,,` (no channel binding, no authzid).
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Takes server-first-message, returns client-final-message.
    pub fn client_final(
        &mut self,
        server_first: &[u8],
        cache: &ScramCache,
    ) -> Result<Vec<u8>, XmppError> {
        let sf = std::str::from_utf8(server_first)
            .map_err(|_| XmppError::Auth("SCRAM server-first-message is not UTF-8".into()))?;
        let (mut r, mut s, mut i) = (None, None, None);
        for (n, part) in sf.split(',').enumerate() {
            match part.split_once('=') {
                Some(("m", _)) if n == 0 => {
                    return Err(XmppError::Auth(
                        "server requires a SCRAM extension (m=) this client does not know".into(),
                    ));
                }
                Some(("r", v)) => r = Some(v),
                Some(("s", v)) => s = Some(v),
                Some(("i", v)) => i = Some(v),
                _ => {}
            }
        }
        let (Some(r), Some(s), Some(i)) = (r, s, i) else {
            return Err(XmppError::Auth(format!(
                "SCRAM server-first-message lacks r=, s= or i=: {sf:?}"
            )));
        };
        if !r.starts_with(&self.nonce) || r.len() == self.nonce.len() {
            return Err(XmppError::Auth(
                "SCRAM server nonce does not extend the client nonce (RFC 5802 §5.1)".into(),
            ));
        }
        let salt = B64
            .decode(s)
            .map_err(|e| XmppError::Auth(format!("SCRAM salt is not base64: {e}")))?;
        let iterations: u32 = i
            .parse()
            .ok()
            .filter(|&n| (1..=MAX_ITERATIONS).contains(&n))
            .ok_or_else(|| {
                XmppError::Auth(format!(
                    "SCRAM iteration count {i:?} is not a number in 1..={MAX_ITERATIONS}"
                ))
            })?;
        let h = self.hash;
        let salted = cache.salted(h, &self.password, &salt, iterations);
        let client_key = h.hmac(&salted, b"Client Key");
        let stored_key = h.digest(&client_key);
        // c=biws is base64("n,,"), the gs2 header of client-first.
        let without_proof = format!("c=biws,r={r}");
        let auth_message = format!("{},{sf},{without_proof}", self.client_first_bare);
        let signature = h.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = h.hmac(&salted, b"Server Key");
        self.server_signature = Some(h.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks server-final-message (`v=...` or `e=...`).
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), XmppError> {
        let sf = String::from_utf8_lossy(server_final);
        if let Some(e) = sf.strip_prefix("e=") {
            return Err(XmppError::Auth(format!("server refused SCRAM proof: {e}")));
        }
        let Some(expected) = &self.server_signature else {
            return Err(XmppError::Auth(
                "server sent SCRAM server-final before server-first".into(),
            ));
        };
        let v = sf
            .split(',')
            .find_map(|p| p.strip_prefix("v="))
            .ok_or_else(|| XmppError::Auth(format!("SCRAM server-final lacks v=: {sf:?}")))?;
        let got = B64
            .decode(v)
            .map_err(|e| XmppError::Auth(format!("SCRAM server signature is not base64: {e}")))?;
        if &got != expected {
            return Err(XmppError::Auth(
                "SCRAM server signature does not match: the server does not know the \
                 password (or someone in between altered the exchange)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The server side of a SCRAM exchange (RFC 5802 §5): built from client-first, it
/// answers server-first, then checks client-final's proof and answers server-final.
///
/// The salt is derived from the user name and the iteration count is fixed, so the
/// salted password of a user is the same on every login and the shared [`ScramCache`]
/// computes it once per account. An unknown user gets the same exchange with a password
/// nobody knows, so the failure comes at the proof, as for a wrong password (§5.1 asks
/// servers not to reveal which accounts exist).
#[derive(Debug)]
pub struct ScramServer {
    hash: Hash,
    user: String,
    /// `client-first-bare,server-first`, the start of the AuthMessage.
    auth_start: String,
    /// client-final's channel-binding attribute: `c=` and the gs2 header in base64.
    binding: String,
    nonce: String,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// Iterations the server asks for: RFC 7677's minimum for SCRAM-SHA-256.
pub const SERVER_ITERATIONS: u32 = 4096;

impl ScramServer {
    /// Reads client-first-message; `password` looks an account up; `server_nonce` must be
    /// printable ASCII without ','. Returns the exchange and server-first-message, or why
    /// client-first is refused (`malformed-request`).
    pub fn start(
        mechanism: Mechanism,
        client_first: &[u8],
        password: impl FnOnce(&str) -> Option<String>,
        server_nonce: &str,
        cache: &ScramCache,
    ) -> Result<(ScramServer, Vec<u8>), String> {
        let hash = mechanism.hash().ok_or("not a SCRAM mechanism")?;
        let cf = std::str::from_utf8(client_first).map_err(|_| "client-first is not UTF-8")?;
        // gs2 header (RFC 5802 §7): "n" (no channel binding) or "y" (the client could bind
        // but this server offers no -PLUS mechanism, which is true: slixmpp sends "y"),
        // never "p=" (binding asked of a server that cannot); no authzid.
        let (header, bare) = match cf.get(..3) {
            Some(h @ ("n,," | "y,,")) => (h, &cf[3..]),
            _ if cf.starts_with("p=") => {
                return Err("channel binding (p=) is not supported: no -PLUS mechanism".into());
            }
            _ => return Err("gs2 header must be n,, or y,, (no authzid is supported)".into()),
        };
        let (mut user, mut nonce) = (None, None);
        for part in bare.split(',') {
            match part.split_once('=') {
                Some(("n", v)) => user = Some(v.replace("=2C", ",").replace("=3D", "=")),
                Some(("r", v)) => nonce = Some(v),
                Some(("m", _)) => return Err("SCRAM extensions (m=) are not supported".into()),
                _ => {}
            }
        }
        let (Some(user), Some(cnonce)) = (user, nonce) else {
            return Err("client-first lacks n= or r=".into());
        };
        if user.is_empty() || cnonce.is_empty() {
            return Err("empty user name or nonce".into());
        }
        let salt = hash.digest(format!("wirebench-salt:{user}").as_bytes());
        let salt = &salt[..16];
        let known = password(&user);
        let secret = known.unwrap_or_else(|| format!("\u{0}no such user {user}"));
        let salted = cache.salted(hash, &secret, salt, SERVER_ITERATIONS);
        let client_key = hash.hmac(&salted, b"Client Key");
        let nonce = format!("{cnonce}{server_nonce}");
        let server_first = format!("r={nonce},s={},i={SERVER_ITERATIONS}", B64.encode(salt));
        Ok((
            ScramServer {
                hash,
                user,
                auth_start: format!("{bare},{server_first}"),
                binding: format!("c={}", B64.encode(header)),
                nonce,
                stored_key: hash.digest(&client_key),
                server_key: hash.hmac(&salted, b"Server Key"),
            },
            server_first.into_bytes(),
        ))
    }

    /// The user name client-first gave.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Checks client-final-message; returns server-final-message (`v=...`) when the proof
    /// shows the client knows the password.
    pub fn finish(&self, client_final: &[u8]) -> Result<Vec<u8>, String> {
        let cf = std::str::from_utf8(client_final).map_err(|_| "client-final is not UTF-8")?;
        let (without_proof, proof) = cf.rsplit_once(",p=").ok_or("client-final lacks p=")?;
        let mut parts = without_proof.split(',');
        if parts.next() != Some(self.binding.as_str()) {
            return Err(format!(
                "channel binding data is not {} (the gs2 header of client-first)",
                self.binding
            ));
        }
        if parts.next().and_then(|r| r.strip_prefix("r=")) != Some(self.nonce.as_str()) {
            return Err("client-final's nonce is not the one agreed".into());
        }
        let proof = B64.decode(proof).map_err(|_| "proof is not base64")?;
        let h = self.hash;
        let auth_message = format!("{},{without_proof}", self.auth_start);
        let signature = h.hmac(&self.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err("proof has the wrong length".into());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        if h.digest(&client_key) != self.stored_key {
            return Err("not-authorized".into());
        }
        let v = h.hmac(&self.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(v)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 5802 §5: the published SCRAM-SHA-1 example, user "user", password "pencil".
    #[test]
    fn rfc5802_5_example_exchange() {
        let cache = ScramCache::new();
        let mut s = Scram::new(
            Mechanism::ScramSha1,
            "user",
            "pencil",
            "fyko+d2lbbFgONRv9qkxdawL",
        )
        .unwrap();
        assert_eq!(s.client_first(), b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
        let cf = s
            .client_final(
                b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
                &cache,
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(cf).unwrap(),
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
        );
        s.verify_server_final(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
            .unwrap();
        let e = s
            .verify_server_final(b"v=AAAApqV8S7suAoZWja4dJRkFsKQ=")
            .unwrap_err();
        assert!(
            e.to_string().contains("server signature does not match"),
            "{e}"
        );
        assert_eq!(cache.len(), 1);
    }

    // RFC 7677 §3: the published SCRAM-SHA-256 example.
    #[test]
    fn rfc7677_3_example_exchange() {
        let cache = ScramCache::new();
        let mut s = Scram::new(
            Mechanism::ScramSha256,
            "user",
            "pencil",
            "rOprNGfwEbeRWgbNEkqO",
        )
        .unwrap();
        let cf = s
            .client_final(
                b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                  s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
                &cache,
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(cf).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
    }

    #[test]
    fn cache_is_shared_between_sessions() {
        let cache = ScramCache::new();
        let sf = b"r=abcdef,s=QSXCR+Q6sek8bf92,i=4096";
        for _ in 0..3 {
            let mut s = Scram::new(Mechanism::ScramSha1, "user", "pencil", "abc").unwrap();
            s.client_final(sf, &cache.clone()).unwrap();
        }
        assert_eq!(cache.len(), 1);
        let mut s = Scram::new(Mechanism::ScramSha1, "user", "other", "abc").unwrap();
        s.client_final(sf, &cache).unwrap();
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn hostile_server_first_messages_are_auth_errors() {
        let cache = ScramCache::new();
        for bad in [
            &b"r=xyz,s=QSXCR+Q6sek8bf92,i=4096"[..],
            b"r=abc,s=QSXCR+Q6sek8bf92,i=4096",
            b"r=abcd,s=!!,i=4096",
            b"r=abcd,s=QSXCR+Q6sek8bf92,i=4000000000",
            b"r=abcd,s=QSXCR+Q6sek8bf92,i=0",
            b"m=ext,r=abcd,s=QSXCR+Q6sek8bf92,i=1",
            b"r=abcd",
            b"\xff",
        ] {
            let mut s = Scram::new(Mechanism::ScramSha1, "u", "p", "abc").unwrap();
            let e = s.client_final(bad, &cache).unwrap_err();
            assert!(matches!(e, XmppError::Auth(_)), "{bad:?}: {e}");
        }
    }

    /// A client that could bind but sees no -PLUS mechanism says "y" (slixmpp does): the
    /// server must take it, and then expect c=base64("y,,") in client-final.
    #[test]
    fn gs2_header_y_is_accepted_and_bound_into_client_final() {
        let cache = ScramCache::new();
        let pw = |_: &str| Some("pencil".to_string());
        let (server, first) =
            ScramServer::start(Mechanism::ScramSha1, b"y,,n=user,r=abc", pw, "XYZ", &cache)
                .unwrap();
        let first = String::from_utf8(first).unwrap();
        let h = Hash::Sha1;
        let salt = &h.digest(b"wirebench-salt:user")[..16];
        let salted = cache.salted(h, "pencil", salt, SERVER_ITERATIONS);
        let client_key = h.hmac(&salted, b"Client Key");
        let without_proof = "c=eSws,r=abcXYZ";
        let auth = format!("n=user,r=abc,{first},{without_proof}");
        let sig = h.hmac(&h.digest(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let good = format!("{without_proof},p={}", B64.encode(&proof));
        assert!(server.finish(good.as_bytes()).is_ok());
        // The same proof under the "n" header's binding data is refused.
        let bad = format!("c=biws,r=abcXYZ,p={}", B64.encode(&proof));
        assert!(server.finish(bad.as_bytes()).unwrap_err().contains("eSws"));
        for refused in [
            &b"p=tls-unique,,n=user,r=abc"[..],
            b"n,a=admin,n=user,r=abc",
            b"x,,n=u,r=a",
        ] {
            assert!(ScramServer::start(Mechanism::ScramSha1, refused, pw, "XYZ", &cache).is_err());
        }
    }

    #[test]
    fn rfc4616_plain_and_rfc5802_username_escaping() {
        assert_eq!(plain_initial("juliet", "r0m30"), b"\0juliet\0r0m30");
        let s = Scram::new(Mechanism::ScramSha1, "a=b,c", "p", "n").unwrap();
        assert_eq!(s.client_first(), b"n,,n=a=3Db=2Cc,r=n");
    }
}
