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
