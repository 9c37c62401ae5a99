//! Visual encodings. Every series differs from every other in colour AND in
//! marker shape or dash pattern, so charts survive greyscale printing and
//! colour-vision deficiency.

/// Okabe–Ito, reordered so the first series get the most separable hues.
/// Okabe–Ito black is replaced by dark grey because black is reserved for
/// reference markers, and its yellow is left out: it vanishes on white.
pub(crate) const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#555555",
];

pub(crate) const DASHES: [&str; 5] = ["", "7 4", "2 3", "10 3 2 3", "4 2 1 2"];

pub(crate) const TEXT: &str = "#222222";
pub(crate) const TEXT_MUTED: &str = "#595959";
pub(crate) const AXIS: &str = "#444444";
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const GRID_MINOR: &str = "#f1f1f1";
pub(crate) const REFERENCE: &str = "#000000";

pub(crate) fn colour(series: usize) -> &'static str {
    PALETTE[series % PALETTE.len()]
}

/// Dash pattern index; cycles with a period coprime to the palette's so
/// series that share a colour never share a dash.
pub(crate) fn dash(series: usize) -> &'static str {
    DASHES[series % DASHES.len()]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Plus,
    Cross,
    Star,
}

const SERIES_SHAPES: [Shape; 8] = [
    Shape::Circle,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Diamond,
    Shape::TriangleDown,
    Shape::Plus,
    Shape::Cross,
    Shape::Star,
];

/// Reference markers lead with the star: hollow and unlike the first
/// series' filled shapes.
const REFERENCE_SHAPES: [Shape; 6] = [
    Shape::Star,
    Shape::Diamond,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Circle,
    Shape::TriangleDown,
];

pub(crate) fn series_shape(series: usize) -> Shape {
    SERIES_SHAPES[series % SERIES_SHAPES.len()]
}

pub(crate) fn reference_shape(group: usize) -> Shape {
    REFERENCE_SHAPES[group % REFERENCE_SHAPES.len()]
}

/// Bar fill pattern index (0 = solid); hatching keeps grouped bars apart in
/// greyscale.
pub(crate) fn bar_pattern(series: usize) -> usize {
    series % 5
}

pub(crate) fn fmt(v: f32) -> String {
    let r = (v * 10.0).round() / 10.0;
    let r = if r == 0.0 { 0.0 } else { r };
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

fn polygon(points: &[(f32, f32)]) -> String {
    let mut d = String::new();
    for (i, (x, y)) in points.iter().enumerate() {
        d.push(if i == 0 { 'M' } else { 'L' });
        d.push_str(&fmt(*x));
        d.push(' ');
        d.push_str(&fmt(*y));
    }
    d.push('Z');
    d
}

/// SVG path data for `shape` centred on (cx, cy) with nominal radius r.
/// Shapes are scaled so they look about equally heavy.
pub(crate) fn marker_path(shape: Shape, cx: f32, cy: f32, r: f32) -> String {
    let pts: Vec<(f32, f32)> = match shape {
        Shape::Circle => {
            return format!(
                "M{} {}a{r2} {r2} 0 1 0 {d} 0a{r2} {r2} 0 1 0 -{d} 0Z",
                fmt(cx - r),
                fmt(cy),
                r2 = fmt(r),
                d = fmt(2.0 * r)
            );
        }
        Shape::Square => {
            let s = r * 0.88;
            vec![
                (cx - s, cy - s),
                (cx + s, cy - s),
                (cx + s, cy + s),
                (cx - s, cy + s),
            ]
        }
        Shape::TriangleUp => {
            let s = r * 1.25;
            vec![
                (cx, cy - s),
                (cx + s * 0.94, cy + s * 0.62),
                (cx - s * 0.94, cy + s * 0.62),
            ]
        }
        Shape::TriangleDown => {
            let s = r * 1.25;
            vec![
                (cx, cy + s),
                (cx + s * 0.94, cy - s * 0.62),
                (cx - s * 0.94, cy - s * 0.62),
            ]
        }
        Shape::Diamond => {
            let s = r * 1.25;
            vec![(cx, cy - s), (cx + s, cy), (cx, cy + s), (cx - s, cy)]
        }
        Shape::Plus | Shape::Cross => {
            let (a, b) = (r * 1.15, r * 0.4);
            let base = [
                (-b, -a),
                (b, -a),
                (b, -b),
                (a, -b),
                (a, b),
                (b, b),
                (b, a),
                (-b, a),
                (-b, b),
                (-a, b),
                (-a, -b),
                (-b, -b),
            ];
            let rot = if shape == Shape::Cross {
                std::f32::consts::FRAC_PI_4
            } else {
                0.0
            };
            let (s, c) = rot.sin_cos();
            base.iter()
                .map(|&(x, y)| (cx + x * c - y * s, cy + x * s + y * c))
                .collect()
        }
        Shape::Star => {
            let (outer, inner) = (r * 1.4, r * 0.6);
            (0..10)
                .map(|i| {
                    let rad = if i % 2 == 0 { outer } else { inner };
                    let a = -std::f32::consts::FRAC_PI_2 + i as f32 * std::f32::consts::PI / 5.0;
                    (cx + rad * a.cos(), cy + rad * a.sin())
                })
                .collect()
        }
    };
    polygon(&pts)
}
