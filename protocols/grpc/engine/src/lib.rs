//! The one protobuf message of wirebench's gRPC service (`proto/wirebench.proto` in the
//! plugin): `message Blob { bytes data = 1; }`. Encoded and parsed here by hand, without
//! code generation (no protoc at build time), following the protobuf wire format
//! (<https://protobuf.dev/programming-guides/encoding/>): field 1, wire type 2 (tag byte
//! 0x0a), a base-128 varint length, the bytes. Parsing accepts what any conforming
//! encoder may send: fields in any order, unknown fields skipped, the last `data` winning,
//! an empty message for empty data.

/// The tag of `data`: field 1, wire type 2 (length-delimited).
const DATA_TAG: u64 = (1 << 3) | 2;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BlobError {
    #[error("truncated varint at byte {0}")]
    Varint(usize),
    #[error("field {field} at byte {at}: length {len} runs past the message's end ({total} bytes)")]
    Length {
        field: u64,
        at: usize,
        len: u64,
        total: usize,
    },
    #[error("field {field} at byte {at}: wire type {wire} (groups, or not a protobuf wire type)")]
    WireType { field: u64, at: usize, wire: u64 },
    #[error("field {field} (data) has wire type {wire}; Blob.data is bytes (wire type 2)")]
    DataType { field: u64, wire: u64 },
    #[error("field number 0 at byte {0}")]
    FieldZero(usize),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes [`encode_into`] writes for `len` bytes of data.
pub fn encoded_len(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let mut n = 1;
    let mut v = len as u64;
    while v >= 0x80 {
        n += 1;
        v >>= 7;
    }
    1 + n + len
}

/// Appends what precedes `len` bytes of data in an encoded Blob (tag and length), so a
/// caller can write the data itself where it likes; nothing for empty data.
pub fn put_header(out: &mut Vec<u8>, len: usize) {
    if len == 0 {
        return;
    }
    put_varint(out, DATA_TAG);
    put_varint(out, len as u64);
}

/// Appends `Blob { data }`: nothing for empty data (proto3 omits default values).
pub fn encode_into(out: &mut Vec<u8>, data: &[u8]) {
    put_header(out, data.len());
    out.extend_from_slice(data);
}

fn varint(buf: &[u8], at: &mut usize) -> Result<u64, BlobError> {
    let start = *at;
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let Some(&b) = buf.get(*at) else {
            return Err(BlobError::Varint(start));
        };
        *at += 1;
        if shift == 63 && b > 1 {
            return Err(BlobError::Varint(start));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(BlobError::Varint(start))
}

/// The byte range of `data` in an encoded Blob (empty when absent).
pub fn decode(buf: &[u8]) -> Result<std::ops::Range<usize>, BlobError> {
    let mut at = 0;
    let mut data = 0..0;
    while at < buf.len() {
        let key_at = at;
        let key = varint(buf, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        if field == 0 {
            return Err(BlobError::FieldZero(key_at));
        }
        match wire {
            0 => {
                varint(buf, &mut at)?;
            }
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if buf.len() - at < n {
                    return Err(BlobError::Length {
                        field,
                        at: key_at,
                        len: n as u64,
                        total: buf.len(),
                    });
                }
                at += n;
            }
            2 => {
                let len = varint(buf, &mut at)?;
                if len > (buf.len() - at) as u64 {
                    return Err(BlobError::Length {
                        field,
                        at: key_at,
                        len,
                        total: buf.len(),
                    });
                }
                let end = at + len as usize;
                if field == 1 {
                    data = at..end;
                }
                at = end;
            }
            _ => {
                return Err(BlobError::WireType {
                    field,
                    at: key_at,
                    wire,
                });
            }
        }
        if field == 1 && wire != 2 {
            return Err(BlobError::DataType { field, wire });
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        let mut v = Vec::new();
        encode_into(&mut v, b"hi");
        assert_eq!(v, [0x0a, 2, b'h', b'i']);
        let mut big = Vec::new();
        encode_into(&mut big, &[7u8; 300]);
        assert_eq!(&big[..3], &[0x0a, 0xac, 0x02]);
        assert_eq!(big.len(), encoded_len(300));
        assert_eq!(encoded_len(0), 0);
        assert_eq!(decode(&[]), Ok(0..0));
    }

    #[test]
    fn skips_unknown_fields_and_refuses_junk() {
        // field 2 varint 150, then data "ab", then field 3 fixed32.
        let msg = [0x10, 0x96, 0x01, 0x0a, 2, b'a', b'b', 0x1d, 1, 2, 3, 4];
        assert_eq!(decode(&msg), Ok(5..7));
        assert!(matches!(
            decode(&[0x0a, 5, 1]),
            Err(BlobError::Length { .. })
        ));
        assert!(matches!(decode(&[0x0a]), Err(BlobError::Varint(1))));
        assert!(matches!(decode(&[0x0b]), Err(BlobError::WireType { .. })));
        assert!(matches!(
            decode(&[0x08, 1]),
            Err(BlobError::DataType { .. })
        ));
        assert!(matches!(decode(&[0x02, 0]), Err(BlobError::FieldZero(0))));
        let eleven = [0xffu8; 11];
        assert!(decode(&eleven).is_err());
    }

    proptest::proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..5000)) {
            let mut v = Vec::new();
            encode_into(&mut v, &data);
            proptest::prop_assert_eq!(v.len(), encoded_len(data.len()));
            let r = decode(&v).unwrap();
            proptest::prop_assert_eq!(&v[r], &data[..]);
        }

        #[test]
        fn never_panics(buf in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok(r) = decode(&buf) {
                proptest::prop_assert!(r.end <= buf.len());
            }
        }
    }
}
