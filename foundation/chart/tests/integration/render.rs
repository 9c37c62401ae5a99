use crate::common;

use common::{assert_no_overlap, labels, svg_texts, svg_titles};
use wirebench_chart::{
    Axis, Chart, ChartError, FONT_FAMILY, Kind, Marker, Point, Series, TextRole, Unit,
    font_bold_bytes, font_bytes, layout_info, render_png, render_svg,
};

fn lines(x: Axis, y: Axis, pts: &[(f64, f64)]) -> Chart {
    Chart::new("t", Kind::Lines, x, y).series(Series::from_xy("s", pts.iter().copied()))
}

fn throughput() -> Chart {
    let payloads = [10.0, 100.0, 1000.0, 10240.0];
    let mut c = Chart::new(
        "Throughput vs payload",
        Kind::Lines,
        Axis::new("Payload size", Unit::Bytes).log(),
        Axis::new("Throughput", Unit::BitsPerSecond),
    );
    for (name, k) in [("TCP", 1.0), ("QUIC", 0.7), ("WebSocket", 0.4)] {
        c = c.series(Series::new(
            name,
            payloads
                .iter()
                .map(|&p| Point::with_range(p, k * p * 9e4, k * p * 8e4, k * p * 1e5))
                .collect(),
        ));
    }
    for (x, y) in [(10.0, 1e6), (100.0, 9e6), (1000.0, 8e7), (10240.0, 9e8)] {
        c = c.reference(Marker::new("study", x, y));
    }
    c
}

fn all_kinds() -> Vec<Chart> {
    let rtt: Vec<(f64, f64)> = (1..=50)
        .map(|r| (r as f64, if r == 1 { 15.0 } else { 1.5 }))
        .collect();
    let samples: Vec<f64> = (0..1000)
        .map(|i| 50e-6 * 100f64.powf(i as f64 / 999.0))
        .collect();
    vec![
        throughput(),
        Chart::new(
            "RTT",
            Kind::Lines,
            Axis::new("Round", Unit::Count),
            Axis::new("RTT", Unit::Seconds),
        )
        .series(Series::from_xy("a", rtt.clone()))
        .series(Series::from_xy("b", rtt.iter().map(|p| (p.0, p.1 * 1.2))))
        .series(Series::from_xy("c", rtt.iter().map(|p| (p.0, p.1 * 0.8)))),
        Chart::new(
            "CDF",
            Kind::Cdf,
            Axis::new("Latency", Unit::Seconds).log(),
            Axis::new("Requests", Unit::Percent),
        )
        .series(Series::samples("fast", samples.iter().copied()))
        .series(Series::samples("slow", samples.iter().map(|s| s * 2.0))),
        Chart::new(
            "Bars",
            Kind::Bars {
                categories: vec!["MQTT".into(), "AMQP".into(), "XMPP".into(), "CoAP".into()],
            },
            Axis::new("Protocol", Unit::Count),
            Axis::new("Rate", Unit::Other("msg/s".into())),
        )
        .series(Series::from_xy(
            "one",
            (0..4).map(|i| (i as f64, 1e4 * (i + 1) as f64)),
        ))
        .series(Series::from_xy(
            "eight",
            (0..4).map(|i| (i as f64, 3e4 * (i + 1) as f64)),
        )),
        Chart::new(
            "Steps",
            Kind::Steps,
            Axis::new("Time", Unit::Seconds),
            Axis::new("Window", Unit::Bytes),
        )
        .series(Series::from_xy(
            "cwnd",
            (0..100).map(|i| (i as f64 * 0.1, 1460.0 * (i % 17) as f64)),
        )),
        Chart::new(
            "Scatter",
            Kind::Scatter,
            Axis::new("x", Unit::Ratio),
            Axis::new("y", Unit::Ratio).log(),
        )
        .series(Series::from_xy(
            "pts",
            (1..40).map(|i| (i as f64, (i * i) as f64)),
        )),
    ]
}

#[test]
fn svg_is_well_formed_and_names_everything() {
    let chart = throughput();
    let svg = render_svg(&chart);
    let texts = svg_texts(&svg);
    for name in ["TCP", "QUIC", "WebSocket", "study", "Throughput vs payload"] {
        assert!(
            texts.iter().any(|t| t == name),
            "{name} missing from {texts:?}"
        );
    }
    assert!(svg.contains(&format!("font-family=\"'{FONT_FAMILY}'")));
    assert!(svg.contains("sans-serif"));
    // One legend entry for the four markers sharing a label.
    assert_eq!(texts.iter().filter(|t| *t == "study").count(), 1);
}

#[test]
fn every_kind_renders_without_overlap() {
    for chart in all_kinds() {
        let svg = render_svg(&chart);
        svg_texts(&svg);
        let info = layout_info(&chart);
        assert_no_overlap(&info);
        assert!(labels(&info, TextRole::XTick).len() >= 2, "{}", chart.title);
        assert!(labels(&info, TextRole::YTick).len() >= 2, "{}", chart.title);
        assert!(
            info.plot.width() > 300.0 && info.plot.height() > 200.0,
            "{:?}",
            info.plot
        );
    }
}

#[test]
fn seconds_axis_uses_ms_below_one_second() {
    let info = layout_info(&lines(
        Axis::new("Round", Unit::Count),
        Axis::new("Round trip", Unit::Seconds),
        &[(1.0, 0.2), (2.0, 0.8)],
    ));
    let y = labels(&info, TextRole::YTick);
    assert!(y.iter().all(|l| l.ends_with(" ms")), "{y:?}");
    assert!(y.contains(&"400 ms".to_string()), "{y:?}");
    assert_eq!(labels(&info, TextRole::YTitle), ["Round trip (ms)"]);
    // Counts below 10 000 stay plain.
    assert!(
        labels(&info, TextRole::XTick)
            .iter()
            .all(|l| l.parse::<f64>().is_ok())
    );
}

#[test]
fn seconds_axis_uses_s_above_one_second() {
    let info = layout_info(&lines(
        Axis::new("Round", Unit::Count),
        Axis::new("Round trip", Unit::Seconds),
        &[(1.0, 15.0), (50.0, 1.5)],
    ));
    let y = labels(&info, TextRole::YTick);
    assert!(y.iter().all(|l| l.ends_with(" s")), "{y:?}");
    assert!(y.contains(&"10 s".to_string()), "{y:?}");
    assert_eq!(labels(&info, TextRole::YTitle), ["Round trip (s)"]);
    let x = labels(&info, TextRole::XTick);
    assert_eq!(x.first().map(String::as_str), Some("0"));
    assert_eq!(x.last().map(String::as_str), Some("50"));
}

#[test]
fn bytes_and_rates_pick_binary_and_decimal_units() {
    let info = layout_info(&lines(
        Axis::new("Size", Unit::Bytes),
        Axis::new("Rate", Unit::BitsPerSecond),
        &[(0.0, 1e6), (10240.0, 9.4e7)],
    ));
    let x = labels(&info, TextRole::XTick);
    assert!(x.iter().all(|l| l.ends_with(" KiB")), "{x:?}");
    assert!(x.contains(&"10 KiB".to_string()), "{x:?}");
    let y = labels(&info, TextRole::YTick);
    assert!(y.iter().all(|l| l.ends_with(" Mbit/s")), "{y:?}");
    assert!(y.contains(&"100 Mbit/s".to_string()), "{y:?}");
    assert_eq!(labels(&info, TextRole::YTitle), ["Rate (Mbit/s)"]);
    assert_eq!(labels(&info, TextRole::XTitle), ["Size (KiB)"]);
}

#[test]
fn log_axis_ticks_decades_and_short_ranges() {
    let info = layout_info(&throughput());
    assert_eq!(
        labels(&info, TextRole::XTick),
        [
            "8 B", "16 B", "32 B", "64 B", "128 B", "256 B", "512 B", "1 KiB", "2 KiB", "4 KiB",
            "8 KiB", "16 KiB"
        ]
    );

    let cdf = &all_kinds()[2];
    let x = labels(&layout_info(cdf), TextRole::XTick);
    for want in ["100 µs", "500 µs", "1 ms", "5 ms", "10 ms"] {
        assert!(x.contains(&want.to_string()), "{want} not in {x:?}");
    }
    let y = labels(&layout_info(cdf), TextRole::YTick);
    assert_eq!(y.first().map(String::as_str), Some("0%"));
    assert_eq!(y.last().map(String::as_str), Some("100%"));
    assert_eq!(
        labels(&layout_info(cdf), TextRole::Guide),
        ["p50", "p90", "p99"]
    );
}

#[test]
fn log_bytes_always_use_binary_powers_of_two() {
    let pow2: Vec<(f64, f64)> = (4..=16).map(|k| (2f64.powi(k), k as f64)).collect();
    let chart = lines(
        Axis::new("Payload", Unit::Bytes).log(),
        Axis::new("v", Unit::Count),
        &pow2,
    );
    let x = labels(&layout_info(&chart), TextRole::XTick);
    assert!(
        x.contains(&"1 KiB".to_string()) && x.contains(&"64 KiB".to_string()),
        "{x:?}"
    );
    assert!(x.iter().all(|l| !l.contains("kB")), "{x:?}");

    // The default scenario's payloads: 64, 1500 and 64 KiB.
    let chart = lines(
        Axis::new("Payload", Unit::Bytes).log(),
        Axis::new("v", Unit::Count),
        &[(64.0, 1.0), (1500.0, 2.0), (65536.0, 3.0)],
    );
    let x = labels(&layout_info(&chart), TextRole::XTick);
    assert!(x.contains(&"64 KiB".to_string()), "{x:?}");
    assert!(
        x.iter().all(|l| !l.contains("kB") && !l.contains("MB")),
        "{x:?}"
    );
}

#[test]
fn log_axis_skips_non_positive_values_with_a_note() {
    let chart = lines(
        Axis::new("Payload", Unit::Bytes).log(),
        Axis::new("v", Unit::Count),
        &[(0.0, 1.0), (-5.0, 1.0), (10.0, 2.0), (1000.0, 3.0)],
    );
    let info = layout_info(&chart);
    assert_eq!(
        labels(&info, TextRole::Note),
        ["2 values ≤ 0 skipped (log scale)"]
    );
    svg_texts(&render_svg(&chart));
}

#[test]
fn dense_axes_are_thinned_so_labels_never_collide() {
    // Wide numbers on a narrow chart force thinning on both axes.
    let pts: Vec<(f64, f64)> = (0..200)
        .map(|i| (1.23456e9 + i as f64 * 1e3, i as f64 * 1e-7))
        .collect();
    let chart = lines(
        Axis::new("Rate", Unit::BitsPerSecond),
        Axis::new("t", Unit::Seconds),
        &pts,
    )
    .size(320, 220);
    assert_no_overlap(&layout_info(&chart));

    let wide: Vec<(f64, f64)> = (0..30).map(|i| (10f64.powi(i - 15), 1.0)).collect();
    let chart = lines(
        Axis::new("x", Unit::Seconds).log(),
        Axis::new("y", Unit::Count),
        &wide,
    )
    .size(400, 300);
    let info = layout_info(&chart);
    assert_no_overlap(&info);
    assert!(labels(&info, TextRole::XTick).len() >= 2);
}

#[test]
fn many_series_stay_readable() {
    let mut chart = Chart::new(
        "Twelve",
        Kind::Lines,
        Axis::new("x", Unit::Count),
        Axis::new("y", Unit::Seconds),
    );
    for s in 0..12 {
        chart = chart.series(Series::from_xy(
            format!("Configuration number {s}"),
            (0..10).map(|i| (i as f64, (s + i) as f64 * 1e-3)),
        ));
    }
    let info = layout_info(&chart);
    assert_no_overlap(&info);
    assert_eq!(labels(&info, TextRole::Legend).len(), 12);
    let svg = render_svg(&chart);
    // Distinct colour/dash/shape combinations for all twelve.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let mut styles: Vec<String> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("path")
                && n.attribute("stroke-width") == Some("2")
                && n.attribute("fill") == Some("none")
        })
        .map(|n| {
            format!(
                "{:?}{:?}",
                n.attribute("stroke"),
                n.attribute("stroke-dasharray")
            )
        })
        .collect();
    styles.sort();
    styles.dedup();
    assert_eq!(styles.len(), 12);
}

#[test]
fn crowded_legend_goes_below_grows_the_canvas_and_only_then_is_cut_short() {
    let crowd = |n: usize| {
        let mut chart = Chart::new(
            "Crowd",
            Kind::Scatter,
            Axis::new("x", Unit::Count),
            Axis::new("y", Unit::Count),
        );
        for s in 0..n {
            chart = chart.series(Series::from_xy(
                format!("A rather long series name {s}"),
                [(s as f64, 1.0)],
            ));
        }
        layout_info(&chart)
    };
    let info = crowd(40);
    assert_no_overlap(&info);
    assert_eq!(labels(&info, TextRole::Legend).len(), 40);
    assert!(
        info.height > 450.0 && info.plot.height() > 200.0,
        "{info:?}"
    );
    let info = crowd(200);
    assert_no_overlap(&info);
    let legend = labels(&info, TextRole::Legend);
    assert!(
        legend.last().unwrap().starts_with('+') && legend.last().unwrap().ends_with("more"),
        "{legend:?}"
    );
    assert!(info.height <= 900.0 && info.plot.height() > 100.0);
}

#[test]
fn long_category_names_are_rotated() {
    let categories: Vec<String> = (0..12).map(|i| format!("category-number-{i}")).collect();
    let chart = Chart::new(
        "Bars",
        Kind::Bars { categories },
        Axis::new("", Unit::Count),
        Axis::new("v", Unit::Count),
    )
    .series(Series::from_xy(
        "s",
        (0..12).map(|i| (i as f64, i as f64 + 1.0)),
    ));
    let info = layout_info(&chart);
    assert_no_overlap(&info);
    let ticks: Vec<_> = info
        .texts
        .iter()
        .filter(|t| t.role == TextRole::XTick)
        .collect();
    assert_eq!(ticks.len(), 12);
    assert!(ticks.iter().all(|t| t.rotated));
    assert!(ticks.iter().all(|t| t.bounds.y0 > info.plot.y1));
}

#[test]
fn text_is_escaped() {
    let name = "a<b & \"c\" 'd' >\u{1}\u{7}";
    let chart = Chart::new(
        name,
        Kind::Scatter,
        Axis::new(name, Unit::Other(name.into())),
        Axis::new(name, Unit::Count),
    )
    .subtitle(name)
    .series(Series::from_xy(name, [(1.0, 2.0), (2.0, 3.0)]))
    .reference(Marker::new(name, 1.5, 2.5));
    let svg = render_svg(&chart);
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t == "a<b & \"c\" 'd' >"), "{texts:?}");
    assert!(svg_titles(&svg).iter().all(|t| t == "a<b & \"c\" 'd' >"));
}

#[test]
fn nan_infinite_and_empty_data_do_not_panic() {
    let bad = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -1.0,
        1e308,
        -1e308,
        1e-308,
        f64::MIN_POSITIVE,
    ];
    let kinds = [
        Kind::Lines,
        Kind::Scatter,
        Kind::Cdf,
        Kind::Steps,
        Kind::Bars {
            categories: vec!["a".into()],
        },
        Kind::Bars { categories: vec![] },
    ];
    for kind in kinds {
        for log in [false, true] {
            let axis = |l: &str| {
                let a = Axis::new(l, Unit::Seconds);
                if log { a.log() } else { a }
            };
            let empty = Chart::new("empty", kind.clone(), axis("x"), axis("y"));
            let svg = render_svg(&empty);
            assert!(svg_texts(&svg).contains(&"No data".to_string()));
            render_png(&empty, 0.5).unwrap();

            let no_points = empty.clone().series(Series::new("none", vec![]));
            svg_texts(&render_svg(&no_points));

            let mut points = Vec::new();
            for &x in &bad {
                for &y in &bad {
                    points.push(Point {
                        x,
                        y,
                        y_min: Some(y),
                        y_max: Some(x),
                    });
                }
            }
            let weird = empty
                .clone()
                .series(Series::new("weird", points))
                .reference(Marker::new("r", f64::NAN, 1.0));
            svg_texts(&render_svg(&weird));
            layout_info(&weird);
            render_png(&weird, 0.5).unwrap();

            let single = empty.clone().series(Series::from_xy("one", [(3.0, 3.0)]));
            let info = layout_info(&single);
            assert_no_overlap(&info);
            svg_texts(&render_svg(&single));
        }
    }
}

#[test]
fn png_decodes_with_expected_size_and_text() {
    let chart = throughput();
    let png = render_png(&chart, 1.0).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((w, h), (800, 450));

    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (800, 450));
    // The title is rendered: dark pixels in the top-left title band prove the
    // embedded font was found (with no font, text silently vanishes).
    let dark_in_title = (0..pixmap.height().min(36))
        .flat_map(|y| (0..300).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            pixmap
                .pixel(x, y)
                .is_some_and(|p| p.red() < 100 && p.green() < 100)
        })
        .count();
    assert!(
        dark_in_title > 200,
        "only {dark_in_title} dark pixels in the title area"
    );

    let big = render_png(&chart, 2.0).unwrap();
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&big).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (1600, 900));
}

#[test]
fn png_rejects_bad_scales() {
    let chart = throughput();
    assert!(matches!(
        render_png(&chart, 0.0),
        Err(ChartError::InvalidScale(_))
    ));
    assert!(matches!(
        render_png(&chart, f32::NAN),
        Err(ChartError::InvalidScale(_))
    ));
    assert!(matches!(
        render_png(&chart, 1000.0),
        Err(ChartError::TooLarge { .. })
    ));
}

#[test]
fn output_is_deterministic() {
    let chart = throughput();
    assert_eq!(render_svg(&chart), render_svg(&chart));
    assert_eq!(
        render_png(&chart, 1.0).unwrap(),
        render_png(&chart, 1.0).unwrap()
    );
}

#[test]
fn bar_pattern_ids_differ_between_charts() {
    let bars = |title: &str| {
        Chart::new(
            title,
            Kind::Bars {
                categories: vec!["a".into(), "b".into()],
            },
            Axis::new("", Unit::Count),
            Axis::new("v", Unit::Count),
        )
        .series(Series::from_xy("s1", [(0.0, 1.0), (1.0, 2.0)]))
        .series(Series::from_xy("s2", [(0.0, 2.0), (1.0, 1.0)]))
    };
    let ids = |svg: &str| -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter_map(|n| n.attribute("id").map(str::to_string))
            .collect()
    };
    let (a, b) = (
        ids(&render_svg(&bars("one"))),
        ids(&render_svg(&bars("two"))),
    );
    assert!(!a.is_empty());
    assert!(a.iter().all(|id| !b.contains(id)));
}

#[test]
fn embedded_fonts_are_dejavu_and_small() {
    for bytes in [font_bytes(), font_bold_bytes()] {
        assert!(bytes.len() < 100 * 1024, "{}", bytes.len());
        let face = ttf_parser::Face::parse(bytes, 0).unwrap();
        let family = face
            .names()
            .into_iter()
            .find(|n| n.name_id == ttf_parser::name_id::FAMILY && n.is_unicode())
            .and_then(|n| n.to_string())
            .unwrap();
        assert_eq!(family, FONT_FAMILY);
        for c in "µ−≤…–°±×Δ€KiB".chars() {
            assert!(face.glyph_index(c).is_some(), "{c} missing");
        }
    }
}
