//! Writes one chart of each kind (plus two stress cases) as SVG and PNG into
//! the directory given as the only argument:
//!
//! ```text
//! cargo run -p wirebench-chart --release --example gallery -- /tmp/gallery
//! ```

use std::path::PathBuf;

use wirebench_chart::{Axis, Chart, Kind, Marker, Point, Series, Unit, render_png, render_svg};

/// A tiny deterministic generator so the gallery is identical on every run
/// without pulling in a randomness crate.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
    }

    /// Roughly normal, by the sum of uniforms.
    fn normal(&mut self) -> f64 {
        (0..6).map(|_| self.next()).sum::<f64>() - 3.0
    }
}

fn throughput() -> Chart {
    let payloads = [
        10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10240.0,
    ];
    // Throughput saturates towards a link-specific ceiling as per-message
    // overhead is amortised.
    let curve = |ceiling: f64, half: f64, p: f64| ceiling * p / (p + half);
    let mut rng = Lcg(7);
    let mut series = Vec::new();
    for (name, ceiling, half) in [
        ("TCP", 940e6, 400.0),
        ("QUIC", 610e6, 250.0),
        ("WebSocket", 420e6, 900.0),
    ] {
        let points = payloads
            .iter()
            .map(|&p| {
                let y = curve(ceiling, half, p);
                let spread = y * (0.04 + 0.04 * rng.next());
                Point::with_range(p, y, y - spread, y + spread)
            })
            .collect();
        series.push(Series::new(name, points));
    }
    let mut chart = Chart::new(
        "Throughput vs payload size",
        Kind::Lines,
        Axis::new("Payload size", Unit::Bytes).log(),
        Axis::new("Throughput", Unit::BitsPerSecond),
    )
    .subtitle("Median of 5 runs, bars show min–max; 1 Gbit/s loopback");
    chart.series = series;
    for (x, y) in [
        (10.0, 25e6),
        (100.0, 190e6),
        (1000.0, 640e6),
        (10240.0, 905e6),
    ] {
        chart = chart.reference(Marker::new("study (Ref. [12], TCP)", x, y));
    }
    chart
}

fn rtt_rounds() -> Chart {
    let mut rng = Lcg(11);
    let mut chart = Chart::new(
        "Round-trip time per round",
        Kind::Lines,
        Axis::new("Round", Unit::Count),
        Axis::new("Round trip", Unit::Seconds).log(),
    )
    .subtitle("First round includes connection setup and discovery");
    for (name, first, steady) in [("MQTT", 15.0, 1.5), ("AMQP", 12.0, 1.9), ("XMPP", 9.0, 1.2)] {
        let points = (1..=50)
            .map(|round| {
                let base = if round == 1 {
                    first
                } else if round == 2 {
                    steady * 2.2
                } else {
                    steady
                };
                (round as f64, base * (1.0 + 0.06 * rng.normal()))
            })
            .collect::<Vec<_>>();
        chart = chart.series(Series::from_xy(name, points));
    }
    chart
}

fn latency_cdf() -> Chart {
    let mut rng = Lcg(3);
    let mut sample = |median: f64, sigma: f64| -> Vec<f64> {
        (0..1000)
            .map(|_| (median * (sigma * rng.normal()).exp()).clamp(50e-6, 5e-3))
            .collect()
    };
    let kernel = sample(180e-6, 0.45);
    let user = sample(650e-6, 0.7);
    Chart::new(
        "Request latency distribution",
        Kind::Cdf,
        Axis::new("Latency", Unit::Seconds).log(),
        Axis::new("Requests", Unit::Percent),
    )
    .subtitle("1000 requests each, 64 B payload")
    .series(Series::samples("Kernel TCP", kernel))
    .series(Series::samples("Userspace QUIC", user))
}

fn bars() -> Chart {
    let categories: Vec<String> = ["MQTT 5", "AMQP 0-9-1", "XMPP", "CoAP"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut chart = Chart::new(
        "Message rate by protocol",
        Kind::Bars { categories },
        Axis::new("Protocol", Unit::Count),
        Axis::new("Rate", Unit::Other("msg/s".into())),
    )
    .subtitle("256 B messages, QoS 1 / confirms on");
    for (name, values) in [
        ("1 publisher", [42e3, 31e3, 12e3, 55e3]),
        ("8 publishers", [118e3, 74e3, 21e3, 96e3]),
    ] {
        let points = values
            .iter()
            .enumerate()
            .map(|(i, &v)| Point::with_range(i as f64, v, v * 0.93, v * 1.05))
            .collect();
        chart = chart.series(Series::new(name, points));
    }
    chart.reference(Marker::new("vendor figure", 0.0, 100e3))
}

fn steps() -> Chart {
    let mut rng = Lcg(5);
    let mut cubic = Vec::new();
    let mut bbr = Vec::new();
    let (mut c, mut b) = (14.0 * 1460.0, 14.0 * 1460.0);
    for i in 0..=120 {
        let t = i as f64 * 0.25;
        cubic.push((t, c));
        bbr.push((t, b));
        c = if rng.next() < 0.06 {
            c * 0.7
        } else {
            c + 9000.0 * rng.next()
        };
        b = (b + 12000.0 * rng.next()).min(260e3 + 20e3 * rng.normal());
    }
    Chart::new(
        "Congestion window over time",
        Kind::Steps,
        Axis::new("Time", Unit::Seconds),
        Axis::new("Congestion window", Unit::Bytes),
    )
    .series(Series::from_xy("CUBIC", cubic))
    .series(Series::from_xy("BBR", bbr))
}

fn many_series() -> Chart {
    let mut chart = Chart::new(
        "Twelve series & one <escaped> \"title\"",
        Kind::Lines,
        Axis::new("Connections", Unit::Count),
        Axis::new("Latency", Unit::Seconds),
    );
    for s in 0..12 {
        let points = (0..=10)
            .map(|i| {
                let x = i as f64 * 1000.0;
                (x, 1e-3 * (1.0 + s as f64 * 0.35) * (1.0 + i as f64 * 0.12))
            })
            .collect::<Vec<_>>();
        chart = chart.series(Series::from_xy(format!("Broker config #{}", s + 1), points));
    }
    chart
}

fn empty() -> Chart {
    Chart::new(
        "Empty chart",
        Kind::Scatter,
        Axis::new("x", Unit::Ratio).log(),
        Axis::new("y", Unit::Ratio),
    )
    .series(Series::from_xy(
        "only bad values",
        [(f64::NAN, 1.0), (-1.0, 2.0)],
    ))
}

fn many_categories() -> Chart {
    let categories: Vec<String> = (0..14)
        .map(|i| format!("Scenario {} ({} peers)", i + 1, 2 << (i % 6)))
        .collect();
    let mut chart = Chart::new(
        "Many categories with long names",
        Kind::Bars { categories },
        Axis::new("", Unit::Count),
        Axis::new("Handshake time", Unit::Seconds),
    );
    for (s, name) in ["TLS 1.2", "TLS 1.3", "TLS 1.3 0-RTT"].iter().enumerate() {
        let points = (0..14)
            .map(|i| Point::new(i as f64, 0.004 * (1.0 + i as f64 * 0.3) / (1.0 + s as f64)))
            .collect();
        chart = chart.series(Series::new(*name, points));
    }
    chart
}

fn crowded_legend() -> Chart {
    let mut rng = Lcg(17);
    let mut chart = Chart::new(
        "Scatter with a crowded legend, negative values and a note about skipped ones",
        Kind::Scatter,
        Axis::new("Offered load", Unit::BitsPerSecond).log(),
        Axis::new("Clock offset", Unit::Seconds),
    )
    .subtitle("Twenty series with long names go below the plot");
    for s in 0..20 {
        let points = (0..8)
            .map(|i| {
                let x = 1e6 * 10f64.powf(i as f64 * 0.5 + rng.next() * 0.3);
                (x, 2e-3 * rng.normal() + s as f64 * 1e-4)
            })
            .chain([(0.0, 1.0), (f64::INFINITY, 0.0)])
            .collect::<Vec<_>>();
        chart = chart.series(Series::from_xy(
            format!("Measurement campaign {}", s + 1),
            points,
        ));
    }
    chart
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .ok_or("usage: gallery <output-dir>")?;
    std::fs::create_dir_all(&dir)?;
    let charts = [
        ("1-throughput", throughput()),
        ("2-rtt-rounds", rtt_rounds()),
        ("3-latency-cdf", latency_cdf()),
        ("4-bars", bars()),
        ("5-steps", steps()),
        ("6-many-series", many_series()),
        ("7-empty", empty()),
        ("8-many-categories", many_categories()),
        ("9-crowded-legend", crowded_legend()),
    ];
    for (name, chart) in charts {
        std::fs::write(dir.join(format!("{name}.svg")), render_svg(&chart))?;
        std::fs::write(dir.join(format!("{name}.png")), render_png(&chart, 1.0)?)?;
        println!("{}", dir.join(name).display());
    }
    Ok(())
}
