//! The chart description: plain data, no behaviour beyond small constructors.

/// What an axis measures. Values are always given in the base unit; the
/// renderer picks a readable display unit (see the crate docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// Seconds; shown as ns, µs, ms, s, min or h.
    Seconds,
    /// Bytes; shown as B, KiB, MiB, … (log axes tick at powers of two).
    Bytes,
    /// Bits per second; shown as bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s.
    BitsPerSecond,
    /// A plain count; large values get k/M/G suffixes.
    Count,
    /// A fraction where `1.0` is 100 %: `0.25` is shown as "25%".
    Percent,
    /// A dimensionless number (speed-up, loss ratio …); shown as is.
    Ratio,
    /// Any other unit, appended verbatim (with k/M/G prefixes for big values).
    Other(String),
}

/// How values map to positions along an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    /// Base-10 logarithmic (powers of two for byte sizes). Values `<= 0`
    /// cannot be placed and are skipped; the chart then carries a note saying
    /// how many.
    Log,
}

/// One axis of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The quantity, without unit ("Round trip"); the unit is appended.
    pub label: String,
    pub unit: Unit,
    pub scale: Scale,
    /// Values grow towards the origin: an x axis whose larger values are worse (a
    /// delay), so that "better" is up and right, as Pantheon draws throughput against
    /// delay. Only the x axis of lines and scatter charts honours it.
    pub reversed: bool,
}

impl Axis {
    /// A linear axis.
    pub fn new(label: impl Into<String>, unit: Unit) -> Self {
        Axis {
            label: label.into(),
            unit,
            scale: Scale::Linear,
            reversed: false,
        }
    }

    /// The same axis running from its largest value to its smallest.
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// The same axis with a logarithmic scale.
    pub fn log(mut self) -> Self {
        self.scale = Scale::Log;
        self
    }
}

/// One measurement. `y_min`/`y_max` (e.g. min and max over repeats) are drawn
/// as an error bar when present.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub y_min: Option<f64>,
    pub y_max: Option<f64>,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Self {
        Point {
            x,
            y,
            y_min: None,
            y_max: None,
        }
    }

    /// A point with an error bar from `y_min` to `y_max`.
    pub fn with_range(x: f64, y: f64, y_min: f64, y_max: f64) -> Self {
        Point {
            x,
            y,
            y_min: Some(y_min),
            y_max: Some(y_max),
        }
    }
}

/// A named set of points, drawn in one colour/shape/dash and listed in the
/// legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<Point>) -> Self {
        Series {
            name: name.into(),
            points,
        }
    }

    /// A series from `(x, y)` pairs.
    pub fn from_xy(name: impl Into<String>, xy: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Series::new(
            name,
            xy.into_iter().map(|(x, y)| Point::new(x, y)).collect(),
        )
    }

    /// Raw samples for [`Kind::Cdf`]: each sample becomes a point of weight 1.
    pub fn samples(name: impl Into<String>, samples: impl IntoIterator<Item = f64>) -> Self {
        Series::from_xy(name, samples.into_iter().map(|s| (s, 1.0)))
    }
}

/// A published reference value (e.g. a figure read off another study's
/// plot), drawn as a hollow marker so it never reads as our own data. A marker
/// that belongs to a series (the study's figure for the case that series
/// measured, [`Marker::of_series`]) is drawn in that series' colour and gets a
/// legend entry naming both ("S1: x2x, 2400 bit/s"); one that belongs to none is
/// black. Markers sharing a label share a shape, and one legend entry per series.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub label: String,
    pub x: f64,
    pub y: f64,
    /// Index into [`Chart::series`]; an index past the end counts as none.
    pub series: Option<usize>,
}

impl Marker {
    pub fn new(label: impl Into<String>, x: f64, y: f64) -> Self {
        Marker {
            label: label.into(),
            x,
            y,
            series: None,
        }
    }

    /// The same marker, tied to the chart's series number `series`.
    pub fn of_series(mut self, series: usize) -> Self {
        self.series = Some(series);
        self
    }
}

/// A labelled horizontal line across the plot at `y`: a quantile a study reads off a CDF
/// ("p85"), or a level another study reached ("S4: 500k sessions"). Drawn dashed and grey,
/// its label to the right of the plot; the y axis always reaches it.
#[derive(Debug, Clone, PartialEq)]
pub struct Guide {
    pub y: f64,
    pub label: String,
}

impl Guide {
    pub fn new(y: f64, label: impl Into<String>) -> Self {
        Guide {
            y,
            label: label.into(),
        }
    }
}

/// How the series are drawn; see the crate docs for what each is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Points joined by lines, with markers (thinned out for long series).
    Lines,
    /// Markers only.
    Scatter,
    /// Cumulative distribution. Each point is `(value, weight)`: use weight 1
    /// for raw samples ([`Series::samples`]) or the bucket count for a
    /// histogram. The y axis is the cumulative fraction, 0–100 %.
    Cdf,
    /// Grouped bars. `x` of each point is the index into `categories`; each
    /// series contributes one bar per category. The y axis starts at zero.
    Bars { categories: Vec<String> },
    /// A step function (value holds until the next point), for values over
    /// time such as queue depth or congestion window.
    Steps,
}

/// Everything needed to draw one chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub subtitle: Option<String>,
    pub kind: Kind,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub references: Vec<Marker>,
    /// Horizontal guides. Empty on a CDF means p50, p90 and p99.
    pub guides: Vec<Guide>,
    /// Canvas width in SVG user units (pixels at PNG scale 1). Default 800.
    pub width: u32,
    /// Canvas height. Default 450.
    pub height: u32,
}

impl Chart {
    /// An 800×450 chart with no series yet.
    pub fn new(title: impl Into<String>, kind: Kind, x: Axis, y: Axis) -> Self {
        Chart {
            title: title.into(),
            subtitle: None,
            kind,
            x,
            y,
            series: Vec::new(),
            references: Vec::new(),
            guides: Vec::new(),
            width: 800,
            height: 450,
        }
    }

    pub fn subtitle(mut self, subtitle: impl Into<String>) -> Self {
        self.subtitle = Some(subtitle.into());
        self
    }

    pub fn series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    pub fn reference(mut self, marker: Marker) -> Self {
        self.references.push(marker);
        self
    }

    pub fn guide(mut self, guide: Guide) -> Self {
        self.guides.push(guide);
        self
    }

    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width;
        self.height = height;
        self
    }
}
