//! The TLS plumbing both ends share once STARTTLS (RFC 6120 §5) has switched a stream to
//! TLS: records in through rustls's sans-IO connection, plaintext on to the framer, and
//! whatever rustls wants to send (handshake, data, alerts) out to the transmit buffer.
//! Generic over rustls's `ConnectionCommon`, so `ClientConnection` and `ServerConnection`
//! use the same code.

use crate::framer::Framer;
use rustls::ConnectionCommon;
use std::io::Read;

/// Feeds TLS records to `tls` and pushes the plaintext they carry into `framer`. Queued
/// output (handshake messages, alerts) is left for [`flush`].
pub(crate) fn feed<D>(
    tls: &mut ConnectionCommon<D>,
    mut bytes: &[u8],
    framer: &mut Framer,
) -> Result<(), String> {
    while !bytes.is_empty() {
        tls.read_tls(&mut bytes)
            .map_err(|e| format!("reading TLS records: {e}"))?;
        let st = tls.process_new_packets().map_err(|e| e.to_string())?;
        let n = st.plaintext_bytes_to_read();
        if n > 0 {
            let mut buf = vec![0u8; n];
            if tls.reader().read_exact(&mut buf).is_ok() {
                framer.push(&buf);
            }
        }
    }
    Ok(())
}

/// Moves everything `tls` wants to send into `out`.
pub(crate) fn flush<D>(tls: &mut ConnectionCommon<D>, out: &mut Vec<u8>) {
    while tls.wants_write() {
        // Writing into a Vec cannot fail.
        if tls.write_tls(out).is_err() {
            break;
        }
    }
}
