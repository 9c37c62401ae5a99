//! A case's Shadowsocks method: an AEAD cipher of SIP004/SIP007 under a password, or its
//! Shadowsocks 2022 (SIP022) edition under a pre-shared key, and the secret each takes.

use std::fmt;
use wirebench_shadowsocks::v2022::{self, Psk};
use wirebench_shadowsocks::{Cipher, Key};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Aead(Cipher),
    V2022(Cipher),
}

impl Method {
    /// The name every implementation uses (`-m`, `"method"`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Aead(c) => c.name(),
            Method::V2022(c) => v2022::method_name(c),
        }
    }

    pub fn from_name(name: &str) -> Option<Method> {
        Cipher::from_name(name)
            .map(Method::Aead)
            .or_else(|| v2022::from_method_name(name).map(Method::V2022))
    }

    pub fn cipher(self) -> Cipher {
        match self {
            Method::Aead(c) | Method::V2022(c) => c,
        }
    }

    pub fn is_2022(self) -> bool {
        matches!(self, Method::V2022(_))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A method with its secret: what client and server share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// SIP007: the password's key (one per cipher on a server that takes any).
    Aead(Key),
    V2022(Psk),
}

impl Secret {
    pub fn method(&self) -> Method {
        match self {
            Secret::Aead(k) => Method::Aead(k.cipher()),
            Secret::V2022(p) => Method::V2022(p.cipher()),
        }
    }

    pub fn salt_len(&self) -> usize {
        self.method().cipher().salt_len()
    }

    /// The secret as the peers' `-k`/`--password` takes it: the password itself for
    /// AEAD (passed separately), the base64 key for 2022.
    pub fn psk_base64(&self) -> Option<String> {
        match self {
            Secret::V2022(p) => Some(p.to_base64()),
            Secret::Aead(_) => None,
        }
    }
}
