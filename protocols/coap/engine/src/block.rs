//! The Block1 and Block2 option values of block-wise transfer (RFC 7959 §2.2): a block
//! number, a more flag and a size exponent in one uint of 0 to 3 bytes.

/// A block size exponent: blocks of `2^(szx + 4)` bytes, 16 to 1024 (RFC 7959 §2.2;
/// 7 is reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Szx(u8);

impl Szx {
    /// 16-byte blocks.
    pub const MIN: Szx = Szx(0);
    /// 1024-byte blocks, the largest.
    pub const MAX: Szx = Szx(6);

    /// The exponent `szx` (0 to 6); `None` for 7 and above.
    pub fn new(szx: u8) -> Option<Szx> {
        (szx <= 6).then_some(Szx(szx))
    }

    /// The largest exponent whose blocks are at most `bytes` long (16 if `bytes` < 16).
    pub fn at_most(bytes: usize) -> Szx {
        let mut szx = Szx::MAX;
        while szx.0 > 0 && szx.size() > bytes {
            szx.0 -= 1;
        }
        szx
    }

    /// The exponent, 0 to 6.
    pub fn exponent(self) -> u8 {
        self.0
    }

    /// The block size in bytes.
    pub fn size(self) -> usize {
        1 << (self.0 + 4)
    }
}

/// Why a Block option value is invalid (RFC 7959 §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// More than 3 bytes.
    #[error("a Block option of {0} bytes: at most 3 (RFC 7959 §2.2)")]
    TooLong(usize),
    /// SZX 7.
    #[error("Block option SZX 7 is reserved (RFC 7959 §2.2)")]
    ReservedSzx,
    /// A block number over 20 bits.
    #[error("block number {0} needs more than 20 bits (RFC 7959 §2.2)")]
    NumberTooLarge(u32),
}

/// A Block1 or Block2 option value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Block {
    /// The block number: the block's offset is `num * szx.size()`.
    pub num: u32,
    /// More blocks follow (M).
    pub more: bool,
    /// The block size.
    pub szx: Szx,
}

impl Block {
    /// The largest block number (20 bits).
    pub const MAX_NUM: u32 = (1 << 20) - 1;

    /// The byte offset of the block.
    pub fn offset(self) -> usize {
        self.num as usize * self.szx.size()
    }

    /// Decodes an option value.
    pub fn decode(value: &[u8]) -> Result<Block, BlockError> {
        if value.len() > 3 {
            return Err(BlockError::TooLong(value.len()));
        }
        let v = value.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
        let szx = Szx::new((v & 7) as u8).ok_or(BlockError::ReservedSzx)?;
        Ok(Block {
            num: v >> 4,
            more: v & 8 != 0,
            szx,
        })
    }

    /// Encodes the option value in as few bytes as possible (§3.2 of RFC 7252).
    pub fn encode(self) -> Result<Vec<u8>, BlockError> {
        if self.num > Block::MAX_NUM {
            return Err(BlockError::NumberTooLarge(self.num));
        }
        let v = (self.num << 4) | (u32::from(self.more) << 3) | u32::from(self.szx.0);
        Ok(crate::message::encode_uint(v))
    }

    /// The block of `len` bytes a body of `total` bytes has at this block's offset, and
    /// whether more follow; `None` if the offset is past the end.
    pub fn slice(num: u32, szx: Szx, total: usize) -> Option<(std::ops::Range<usize>, bool)> {
        let start = num as usize * szx.size();
        if start > total || (start == total && total > 0) {
            return None;
        }
        let end = (start + szx.size()).min(total);
        Some((start..end, end < total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        let b = Block {
            num: 5,
            more: true,
            szx: Szx::new(2).unwrap(),
        };
        assert_eq!(b.encode().unwrap(), vec![0x5A]);
        assert_eq!(Block::decode(&[0x5A]).unwrap(), b);
        assert_eq!(b.offset(), 5 * 64);
        // Block 0 of 16-byte blocks, no more: the empty value (§2.2: uint 0).
        let zero = Block {
            num: 0,
            more: false,
            szx: Szx::MIN,
        };
        assert_eq!(zero.encode().unwrap(), Vec::<u8>::new());
        assert_eq!(Block::decode(&[]).unwrap(), zero);
        let big = Block {
            num: Block::MAX_NUM,
            more: false,
            szx: Szx::MAX,
        };
        assert_eq!(Block::decode(&big.encode().unwrap()).unwrap(), big);
    }

    #[test]
    fn invalid_values() {
        assert_eq!(Block::decode(&[0x07]), Err(BlockError::ReservedSzx));
        assert_eq!(Block::decode(&[1, 2, 3, 4]), Err(BlockError::TooLong(4)));
        let b = Block {
            num: 1 << 20,
            more: false,
            szx: Szx::MIN,
        };
        assert_eq!(b.encode(), Err(BlockError::NumberTooLarge(1 << 20)));
        assert_eq!(Szx::new(7), None);
    }

    #[test]
    fn sizes_and_slices() {
        assert_eq!(Szx::MIN.size(), 16);
        assert_eq!(Szx::MAX.size(), 1024);
        assert_eq!(Szx::at_most(100).size(), 64);
        assert_eq!(Szx::at_most(5).size(), 16);
        let s = Szx::new(2).unwrap();
        assert_eq!(Block::slice(0, s, 100), Some((0..64, true)));
        assert_eq!(Block::slice(1, s, 100), Some((64..100, false)));
        assert_eq!(Block::slice(2, s, 100), None);
        assert_eq!(Block::slice(0, s, 0), Some((0..0, false)));
    }
}
