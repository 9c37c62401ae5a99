//! The client's connection: a TCP stream with Shadowsocks AEAD (SIP004) or Shadowsocks
//! 2022 (SIP022) applied in place,
//! as an `AsyncRead + AsyncWrite` the connect workload writes its message to and reads
//! the echo from. No relay and no extra task: sealing happens inside `poll_write` and
//! opening inside `poll_read`, so what the workload times is the socket plus the AEAD work
//! a real client does.
//!
//! The first write carries the salt, the target address and the data in one `write` on
//! the socket (for 2022 with the fixed and variable headers), so with TCP Fast Open all
//! of it is the SYN's data. A 2022 answer must carry our request's salt and a timestamp
//! within 30 s of our clock, or the read fails.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use wirebench_shadowsocks::{Decryptor, Encryptor, Key, MAX_PAYLOAD, TAG_LEN, Target, v2022};

/// Plaintext sealed per `poll_write` at most: bounds the ciphertext held while the socket
/// takes it.
const MAX_WRITE: usize = 4 * MAX_PAYLOAD;
/// Ciphertext read per `poll_read`: one whole chunk of the longest kind (SIP004's; a
/// 2022 chunk takes up to four reads).
const READ_BUF: usize = MAX_PAYLOAD + 2 + 2 * TAG_LEN;

enum Tx {
    Aead(Encryptor),
    V2022(v2022::Encryptor),
}

enum Rx {
    Aead(Decryptor),
    /// The answer's timestamp is checked once, with its header.
    V2022 {
        dec: v2022::Decryptor,
        checked: bool,
    },
}

impl Rx {
    fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let bad = |e| io::Error::new(io::ErrorKind::InvalidData, e);
        match self {
            Rx::Aead(d) => d.feed(input, out).map_err(bad),
            Rx::V2022 { dec, checked } => {
                dec.feed(input, out).map_err(bad)?;
                if !*checked && let Some(h) = dec.head() {
                    v2022::check_timestamp(h.timestamp, crate::unix_now()).map_err(bad)?;
                    *checked = true;
                }
                Ok(())
            }
        }
    }

    fn finish(&self) -> io::Result<()> {
        let cut = |e| io::Error::new(io::ErrorKind::UnexpectedEof, e);
        match self {
            Rx::Aead(d) => d.finish().map_err(cut),
            Rx::V2022 { dec, .. } => dec.finish().map_err(cut),
        }
    }
}

pub struct SsStream {
    tcp: TcpStream,
    enc: Tx,
    dec: Rx,
    /// Sent in front of the first write's data, in its chunk.
    target: Option<Target>,
    /// Ciphertext of the write in progress, how much of it the socket has taken, and how
    /// much plaintext it stands for (returned once all of it is in the socket).
    out: Vec<u8>,
    out_at: usize,
    out_plain: usize,
    /// Ciphertext read off the socket and plaintext opened but not yet read by the caller.
    rx: Box<[u8]>,
    plain: Vec<u8>,
    plain_at: usize,
}

impl SsStream {
    /// `salt` must be fresh random bytes of the cipher's salt length.
    pub fn new(tcp: TcpStream, key: &Key, salt: &[u8], target: Target) -> io::Result<SsStream> {
        let enc = Encryptor::new(key, salt).map_err(io::Error::other)?;
        Ok(SsStream::with(
            tcp,
            Tx::Aead(enc),
            Rx::Aead(Decryptor::new(key)),
            Some(target),
        ))
    }

    /// A Shadowsocks 2022 stream to `target`; `salt` as for [`new`](Self::new). The
    /// request header carries `padding` bytes of padding (SIP022 wants some when the
    /// first write has no data; the connect workload's always has).
    pub fn new_2022(
        tcp: TcpStream,
        psk: &v2022::Psk,
        salt: &[u8],
        target: Target,
        padding: usize,
    ) -> io::Result<SsStream> {
        let enc =
            v2022::Encryptor::client(psk, salt, &target, padding).map_err(io::Error::other)?;
        Ok(SsStream::with(
            tcp,
            Tx::V2022(enc),
            Rx::V2022 {
                dec: v2022::Decryptor::response(psk, salt),
                checked: false,
            },
            None,
        ))
    }

    /// Either edition's stream from a method's secret.
    pub fn connect(
        tcp: TcpStream,
        secret: &crate::Secret,
        salt: &[u8],
        target: Target,
    ) -> io::Result<SsStream> {
        match secret {
            crate::Secret::Aead(k) => SsStream::new(tcp, k, salt, target),
            crate::Secret::V2022(p) => SsStream::new_2022(tcp, p, salt, target, 0),
        }
    }

    fn with(tcp: TcpStream, enc: Tx, dec: Rx, target: Option<Target>) -> SsStream {
        SsStream {
            tcp,
            enc,
            dec,
            target,
            out: Vec::new(),
            out_at: 0,
            out_plain: 0,
            rx: vec![0u8; READ_BUF].into_boxed_slice(),
            plain: Vec::new(),
            plain_at: 0,
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// Writes what is left of `out` to the socket.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_at < self.out.len() {
            let n = ready!(Pin::new(&mut self.tcp).poll_write(cx, &self.out[self.out_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_at += n;
        }
        self.out.clear();
        self.out_at = 0;
        Poll::Ready(Ok(()))
    }
}

/// A random salt for `key`'s cipher, from the operating system.
pub fn fresh_salt(key: &Key) -> io::Result<Vec<u8>> {
    random_bytes(key.cipher().salt_len())
}

/// `n` random bytes from the operating system (salts, keys).
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(b)
}

impl AsyncWrite for SsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.out.is_empty() {
            let take = buf.len().min(MAX_WRITE);
            match &mut this.enc {
                Tx::Aead(enc) => {
                    if take == 0 && this.target.is_none() {
                        return Poll::Ready(Ok(0));
                    }
                    match this.target.take() {
                        Some(t) => enc
                            .seal_request(&t, &buf[..take], &mut this.out)
                            .map_err(io::Error::other)?,
                        None => enc.seal(&buf[..take], &mut this.out),
                    }
                }
                // The first call sends the header even without data; later empty calls
                // add nothing.
                Tx::V2022(enc) => enc.seal(&buf[..take], crate::unix_now(), &mut this.out),
            }
            if this.out.is_empty() {
                return Poll::Ready(Ok(0));
            }
            this.out_plain = take;
        }
        // Sealed bytes are committed: a caller that gets `Pending` here calls again with
        // the same buffer (as `write_all` does), and gets the count once they are all out.
        ready!(this.poll_drain(cx))?;
        Poll::Ready(Ok(std::mem::take(&mut this.out_plain)))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

impl AsyncRead for SsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.plain_at < this.plain.len() {
                let n = buf.remaining().min(this.plain.len() - this.plain_at);
                buf.put_slice(&this.plain[this.plain_at..this.plain_at + n]);
                this.plain_at += n;
                return Poll::Ready(Ok(()));
            }
            this.plain.clear();
            this.plain_at = 0;
            let mut rb = ReadBuf::new(&mut this.rx);
            ready!(Pin::new(&mut this.tcp).poll_read(cx, &mut rb))?;
            let got = rb.filled().len();
            if got == 0 {
                // The end between chunks is a clean end; inside one, the answer was cut.
                return Poll::Ready(this.dec.finish());
            }
            this.dec.feed(&this.rx[..got], &mut this.plain)?;
        }
    }
}
