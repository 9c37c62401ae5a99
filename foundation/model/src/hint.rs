//! "Did you mean" for every name a user types: parameters, keys, metrics, commands.

/// The candidate closest to `word` by edit distance, if it is close enough to be what was
/// meant: at most two edits, and fewer edits than the candidate has characters (so `rn`
/// suggests `run`, but `x` suggests nothing).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2 && *d < c.len())
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_names_are_suggested_and_far_ones_are_not() {
        assert_eq!(closest("rn", ["run", "serve", "report"]), Some("run"));
        assert_eq!(closest("payoad", ["payload", "rounds"]), Some("payload"));
        assert_eq!(closest("x", ["run", "ab"]), None);
        assert_eq!(closest("completely", ["run", "serve"]), None);
    }
}
