//! RFC 2812 §2.3's line limits. Their own module because both the line layer, which
//! enforces them, and the errors, which state them, need them.

/// Longest line RFC 2812 §2.3 allows, CR LF included.
pub const MAX_LINE: usize = 512;
/// Longest IRCv3 tag section (with its `@` and the space after it).
pub const MAX_TAGS: usize = 8191;
