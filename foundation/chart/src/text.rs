//! Text measurement with the embedded font, so layout decisions (tick
//! thinning, margins, legend placement) match what resvg and browsers draw.

use std::sync::OnceLock;

pub(crate) const FONT_REGULAR: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");
pub(crate) const FONT_BOLD: &[u8] = include_bytes!("../fonts/DejaVuSans-Bold-subset.ttf");

/// The parsed face is kept for the life of the process: layout measures
/// hundreds of labels per chart.
struct Metrics {
    units_per_em: f32,
    ascender: f32,
    descender: f32,
    face: Option<ttf_parser::Face<'static>>,
    fallback_advance: f32,
}

impl Metrics {
    fn load(bytes: &'static [u8]) -> Metrics {
        match ttf_parser::Face::parse(bytes, 0) {
            Ok(face) => {
                let upem = face.units_per_em() as f32;
                let fallback = face
                    .glyph_index('0')
                    .and_then(|g| face.glyph_hor_advance(g))
                    .map(|a| a as f32 / upem)
                    .unwrap_or(0.64);
                Metrics {
                    units_per_em: upem,
                    ascender: face.ascender() as f32 / upem,
                    descender: -(face.descender() as f32) / upem,
                    face: Some(face),
                    fallback_advance: fallback,
                }
            }
            // The font is compiled in, so this only guards against a broken
            // build; approximate DejaVu's proportions rather than panic.
            Err(_) => Metrics {
                units_per_em: 1.0,
                ascender: 0.93,
                descender: 0.24,
                face: None,
                fallback_advance: 0.64,
            },
        }
    }

    fn width_em(&self, s: &str) -> f32 {
        let Some(face) = &self.face else {
            return s.chars().count() as f32 * self.fallback_advance;
        };
        s.chars()
            .map(|c| {
                face.glyph_index(c)
                    .and_then(|g| face.glyph_hor_advance(g))
                    .map(|a| a as f32 / self.units_per_em)
                    // Characters outside the subset are drawn by some
                    // fallback font in browsers; assume an average width.
                    .unwrap_or(self.fallback_advance)
            })
            .sum()
    }
}

fn metrics(bold: bool) -> &'static Metrics {
    static REGULAR: OnceLock<Metrics> = OnceLock::new();
    static BOLD: OnceLock<Metrics> = OnceLock::new();
    if bold {
        BOLD.get_or_init(|| Metrics::load(FONT_BOLD))
    } else {
        REGULAR.get_or_init(|| Metrics::load(FONT_REGULAR))
    }
}

/// Width of `s` in pixels at `size` px. Kerning is ignored, which only ever
/// overestimates for this font, erring on the side of no overlap.
pub(crate) fn width(s: &str, size: f32, bold: bool) -> f32 {
    metrics(bold).width_em(s) * size
}

/// Distance from baseline to the top of the tallest glyphs, in pixels.
pub(crate) fn ascent(size: f32) -> f32 {
    metrics(false).ascender * size
}

/// Distance from baseline to the bottom of descenders, in pixels.
pub(crate) fn descent(size: f32) -> f32 {
    metrics(false).descender * size
}

/// Height of a text line box.
pub(crate) fn line_height(size: f32) -> f32 {
    ascent(size) + descent(size)
}

/// Shortens `s` with an ellipsis so it is at most `max_w` pixels wide.
/// Long user-supplied names must not run off the canvas or into the plot;
/// the full text stays available in the SVG `<title>` tooltips.
pub(crate) fn fit(s: &str, size: f32, bold: bool, max_w: f32) -> String {
    if width(s, size, bold) <= max_w {
        return s.to_string();
    }
    let ellipsis_w = width("…", size, bold);
    let mut out = String::new();
    let mut used = 0.0;
    for c in s.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]), size, bold);
        if used + w + ellipsis_w > max_w {
            break;
        }
        used += w;
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// Shortens each of `labels` to at most `max_w` pixels so that labels that differ stay
/// different and keep the words that tell them apart: "Shadowsocks chacha20-poly1305" and
/// "Shadowsocks aes-256-gcm" must not both become "Shadowsocks c…". Labels that fit are
/// kept whole. Otherwise the words every label shares at its start or end are left out
/// (the chart's subtitle says what is common), marked with "…", and what is still too
/// long is cut in the middle, keeping its head and its tail.
pub(crate) fn fit_distinct(labels: &[String], size: f32, bold: bool, max_w: f32) -> Vec<String> {
    if labels.iter().all(|l| width(l, size, bold) <= max_w) {
        return labels.to_vec();
    }
    let words: Vec<Vec<&str>> = labels.iter().map(|l| split_words(l)).collect();
    let cores = without_common_ends(&words);
    let short: Vec<String> = cores
        .iter()
        .map(|c| fit_middle(c, size, bold, max_w))
        .collect();
    if distinct_as(labels, &short) {
        return short;
    }
    // Still alike: each group of labels that read alike shows only the words in which its
    // members differ ("…payload 100…s2s x2x"), so what tells them apart is what shows.
    let mut out = short.clone();
    let mut done = vec![false; labels.len()];
    for i in 0..labels.len() {
        if done[i] {
            continue;
        }
        let group: Vec<usize> = (0..labels.len())
            .filter(|&j| short[j] == short[i])
            .collect();
        if group.iter().all(|&j| labels[j] == labels[i]) {
            continue;
        }
        let longest = group.iter().map(|&j| words[j].len()).max().unwrap_or(0);
        let differs = |k: usize| {
            let first = words[group[0]].get(k);
            group.iter().any(|&j| words[j].get(k) != first)
        };
        for &j in &group {
            done[j] = true;
            let mut text = String::new();
            let mut last: Option<usize> = None;
            for k in (0..longest).filter(|&k| differs(k)) {
                let Some(w) = words[j].get(k) else { continue };
                if last.map_or(k > 0, |l| k > l + 1) {
                    text.push('…');
                }
                text.push_str(w.trim_end_matches([',', ' ']));
                text.push(' ');
                last = Some(k);
            }
            out[j] = fit_middle(text.trim_end(), size, bold, max_w);
        }
    }
    out
}

/// Each label without the whole words every label shares at its start and end, "…"
/// marking where they were.
fn without_common_ends(words: &[Vec<&str>]) -> Vec<String> {
    let (head, tail) = if words.len() >= 2 {
        common_ends(words)
    } else {
        (0, 0)
    };
    words
        .iter()
        .map(|w| {
            let core = w[head..w.len() - tail].concat();
            let core = core.trim_matches(|c: char| c == ',' || c == ' ');
            let mut s = String::new();
            if head > 0 {
                s.push('…');
            }
            s.push_str(core);
            if tail > 0 {
                s.push('…');
            }
            s
        })
        .collect()
}

/// `labels` without the words all of them share at their start or end ("…" marks where),
/// when one is wider than `max_w` and leaving those out keeps the labels apart; else as
/// they are. Never cuts a word: what is still too long is for [`wrap`].
pub(crate) fn drop_common_words(
    labels: &[String],
    size: f32,
    bold: bool,
    max_w: f32,
) -> Vec<String> {
    if labels.iter().all(|l| width(l, size, bold) <= max_w) {
        return labels.to_vec();
    }
    let words: Vec<Vec<&str>> = labels.iter().map(|l| split_words(l)).collect();
    let cores = without_common_ends(&words);
    if distinct_as(labels, &cores) {
        cores
    } else {
        labels.to_vec()
    }
}

/// `s` in lines at most `max_w` wide, broken at spaces. Only a single word wider than a
/// whole line is broken inside, since nothing else would keep it on the canvas.
pub(crate) fn wrap(s: &str, size: f32, bold: bool, max_w: f32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split(' ').filter(|w| !w.is_empty()) {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if width(&candidate, size, bold) <= max_w {
            line = candidate;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        let mut rest = word;
        while width(rest, size, bold) > max_w {
            let mut cut = rest.char_indices().nth(1).map_or(rest.len(), |(i, _)| i);
            for (i, _) in rest.char_indices().skip(1) {
                if width(&rest[..i], size, bold) > max_w {
                    break;
                }
                cut = i;
            }
            lines.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        line = rest.to_string();
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Whether `short` tells apart every pair that `full` does.
fn distinct_as(full: &[String], short: &[String]) -> bool {
    for i in 0..full.len() {
        for j in i + 1..full.len() {
            if full[i] != full[j] && short[i] == short[j] {
                return false;
            }
        }
    }
    true
}

/// Words with their trailing separators kept, so joining them gives the text back.
fn split_words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_sep = false;
    for (i, c) in s.char_indices() {
        let sep = c == ' ' || c == ',';
        if !sep && in_sep {
            out.push(&s[start..i]);
            start = i;
        }
        in_sep = sep;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// How many whole words all labels share at their start and at their end, leaving at
/// least one word of each label.
fn common_ends(words: &[Vec<&str>]) -> (usize, usize) {
    let shortest = words.iter().map(Vec::len).min().unwrap_or(0);
    let trim = |w: &str| w.trim_end_matches([' ', ',']).to_string();
    let mut head = 0;
    while head + 1 < shortest && words.iter().all(|w| trim(w[head]) == trim(words[0][head])) {
        head += 1;
    }
    let mut tail = 0;
    while head + tail + 1 < shortest
        && words
            .iter()
            .all(|w| trim(w[w.len() - 1 - tail]) == trim(words[0][words[0].len() - 1 - tail]))
    {
        tail += 1;
    }
    (head, tail)
}

/// Cuts `s` in the middle with "…" so it is at most `max_w` pixels wide: the head says
/// what the series is, the tail is where a parameter's value sits.
pub(crate) fn fit_middle(s: &str, size: f32, bold: bool, max_w: f32) -> String {
    if width(s, size, bold) <= max_w {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let budget = max_w - width("…", size, bold);
    let w = |c: char| width(c.encode_utf8(&mut [0; 4]), size, bold);
    // Two thirds of the room to the tail: the differing value is usually last.
    let (mut head, mut tail) = (0usize, 0usize);
    let (mut head_w, mut tail_w) = (0.0f32, 0.0f32);
    while head + tail < chars.len() {
        let take_tail = tail_w <= 2.0 * head_w;
        let c = if take_tail {
            chars[chars.len() - 1 - tail]
        } else {
            chars[head]
        };
        if head_w + tail_w + w(c) > budget {
            break;
        }
        if take_tail {
            tail += 1;
            tail_w += w(c);
        } else {
            head += 1;
            head_w += w(c);
        }
    }
    let head_s: String = chars[..head].iter().collect();
    let tail_s: String = chars[chars.len() - tail..].iter().collect();
    format!("{}…{}", head_s.trim_end(), tail_s.trim_start())
}

#[cfg(test)]
mod distinct_tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn labels_that_fit_stay_whole() {
        let l = s(&["raw", "http"]);
        assert_eq!(fit_distinct(&l, 12.0, false, 300.0), l);
    }

    #[test]
    fn the_word_that_differs_survives() {
        let l = s(&[
            "Protocol shadowsocks, Shadowsocks cipher chacha20-ietf-poly1305, server ours",
            "Protocol shadowsocks, Shadowsocks cipher aes-256-gcm, server ours",
            "Protocol shadowsocks, Shadowsocks cipher 2022-blake3-aes-128-gcm, server ours",
        ]);
        let out = fit_distinct(&l, 12.0, false, 200.0);
        assert!(out[0].contains("chacha20"), "{out:?}");
        assert!(out[1].contains("aes-256-gcm"), "{out:?}");
        assert!(out[2].contains("2022"), "{out:?}");
        for o in &out {
            assert!(width(o, 12.0, false) <= 200.0, "{o}");
        }
        let unique: std::collections::BTreeSet<_> = out.iter().collect();
        assert_eq!(unique.len(), 3);
    }

    #[test]
    fn a_long_common_head_is_left_out() {
        let l = s(&[
            "A very long category name that will never fit, 1",
            "A very long category name that will never fit, 2",
        ]);
        assert_eq!(fit_distinct(&l, 12.0, false, 150.0), s(&["…1", "…2"]));
    }

    #[test]
    fn labels_alike_after_cutting_show_where_they_differ() {
        let l = s(&[
            "protocol socks5, SOCKS5 server microsocks, SOCKS5 authentication none, SOCKS5 pipelining off",
            "protocol socks5, SOCKS5 server dante, SOCKS5 authentication none, SOCKS5 pipelining off",
            "protocol socks5, SOCKS5 server ours, SOCKS5 authentication none, SOCKS5 pipelining off",
            "protocol direct, TCP Fast Open off",
        ]);
        let out = fit_distinct(&l, 12.0, false, 200.0);
        let unique: std::collections::BTreeSet<_> = out.iter().collect();
        assert_eq!(unique.len(), 4, "{out:?}");
        assert!(
            out[0].contains("microsocks") && out[1].contains("dante"),
            "{out:?}"
        );
    }

    #[test]
    fn middle_cut_keeps_head_and_tail() {
        let out = fit_middle(
            "XMPP transport websocket, XMPP client browser, link delay 81 ms",
            12.0,
            false,
            150.0,
        );
        assert!(out.starts_with("XMPP") && out.ends_with("81 ms"), "{out}");
        assert!(width(&out, 12.0, false) <= 150.0);
    }
}
