//! Visual encodings. Up to ten series each get their own colour, and no two
//! series ever share both colour and dash pattern; marker shapes differ too, so
//! charts survive greyscale printing and colour-vision deficiency.

/// Ten hues, so a chart of up to ten series never repeats one: Okabe–Ito's
/// colour-blind-safe set, reordered so the first series get the most separable hues (its
/// black is reserved for reference markers without a series, its yellow vanishes on
/// white), then the dark ones of Paul Tol's "muted" set (indigo, wine, olive) and dark
/// grey. Colour alone cannot keep ten apart for every reader, so each series differs in
/// dash pattern and marker shape too.
pub(crate) const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#332288", "#882255",
    "#999933", "#555555",
];

pub(crate) const DASHES: [&str; 6] = ["", "7 4", "2 3", "10 3 2 3", "4 2 1 2", "12 3 3 3"];

pub(crate) const TEXT: &str = "#222222";
pub(crate) const TEXT_MUTED: &str = "#595959";
pub(crate) const AXIS: &str = "#444444";
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const GRID_MINOR: &str = "#f1f1f1";
pub(crate) const REFERENCE: &str = "#000000";

pub(crate) fn colour(series: usize) -> &'static str {
    PALETTE[series % PALETTE.len()]
}

/// The dash pattern. Each pass through the palette shifts the dashes by one, so the
/// series that share a colour (`i`, `i + 10`, `i + 20` …) all have different dashes; past
/// sixty series the patterns are made up, one per pass, unlike any in the table.
pub(crate) fn dash(series: usize) -> String {
    let (pass, hue) = (series / PALETTE.len(), series % PALETTE.len());
    if pass < DASHES.len() {
        DASHES[(hue + pass) % DASHES.len()].to_string()
    } else {
        format!("{} 2 1 2 1 2", pass + 1)
    }
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

/// Nominal radius of reference markers and the width of the white halo drawn under them.
pub(crate) const REFERENCE_R: f32 = 6.0;
pub(crate) const REFERENCE_HALO: f32 = 3.5;

/// Nominal radii of the series' own markers on lines and scatter plots; their white
/// outline's stroke.
pub(crate) const LINE_MARKER_R: f32 = 3.5;
pub(crate) const SCATTER_MARKER_R: f32 = 4.0;
pub(crate) const SERIES_OUTLINE: f32 = 0.8;

/// How far from its centre [`marker_path`]'s outline of `shape` reaches, per unit of
/// radius (axis-aligned: what a frame edge can cut).
fn reach(shape: Shape) -> f32 {
    match shape {
        Shape::Circle => 1.0,
        Shape::Square => 0.88,
        Shape::TriangleUp | Shape::TriangleDown | Shape::Diamond => 1.25,
        Shape::Plus | Shape::Cross => 1.22,
        Shape::Star => 1.4,
    }
}

/// How far from its centre a reference marker of `shape` paints, halo included.
pub(crate) fn reference_reach(shape: Shape) -> f32 {
    reach(shape) * REFERENCE_R + REFERENCE_HALO / 2.0
}

/// How far from its centre a series marker of `shape` and radius `r` paints.
pub(crate) fn series_reach(shape: Shape, r: f32) -> f32 {
    reach(shape) * r + SERIES_OUTLINE / 2.0
}

/// Which points of a long line series get a marker: enough to identify
/// the series, staggered between series so markers do not pile up.
pub(crate) fn marker_indices(n: usize, series: usize, n_series: usize) -> Vec<usize> {
    if n <= 30 {
        return (0..n).collect();
    }
    let k = n.div_ceil(15);
    let offset = series * k / n_series.max(1);
    (0..n).filter(|i| i % k == offset % k).collect()
}

pub(crate) fn series_shape(series: usize) -> Shape {
    SERIES_SHAPES[series % SERIES_SHAPES.len()]
}

pub(crate) fn reference_shape(group: usize) -> Shape {
    REFERENCE_SHAPES[group % REFERENCE_SHAPES.len()]
}

/// Bar fill pattern index (0 = solid); hatching keeps grouped bars apart in
/// greyscale.
pub(crate) fn bar_pattern(series: usize) -> usize {
    (series % PALETTE.len() + series / PALETTE.len()) % 5
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
