//! A tonic codec for `Blob` on both sides, with `wirebench-grpc`'s hand encoder: the
//! message body is the payload bytes.

use bytes::{Buf, BufMut, Bytes};
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

#[derive(Debug, Clone, Copy, Default)]
pub struct BlobCodec;

pub struct BlobEncoder;
pub struct BlobDecoder;

impl Codec for BlobCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = BlobEncoder;
    type Decoder = BlobDecoder;
    fn encoder(&mut self) -> BlobEncoder {
        BlobEncoder
    }
    fn decoder(&mut self) -> BlobDecoder {
        BlobDecoder
    }
}

impl Encoder for BlobEncoder {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // The tag and length, then the payload straight into tonic's buffer.
        let mut head = Vec::with_capacity(12);
        wirebench_grpc::put_header(&mut head, item.len());
        dst.put_slice(&head);
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for BlobDecoder {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        let n = src.remaining();
        let all = src.copy_to_bytes(n);
        let r = wirebench_grpc::decode(&all)
            .map_err(|e| Status::invalid_argument(format!("Blob: {e}")))?;
        Ok(Some(all.slice(r)))
    }
}
