//! Issue #54: every series, legend entry and published marker can be told apart.

use wirebench_chart::{Axis, Chart, Kind, LegendKind, Marker, Series, Unit, layout_info};

fn lines(n: usize) -> Chart {
    let mut c = Chart::new(
        "t",
        Kind::Lines,
        Axis::new("Delay", Unit::Seconds),
        Axis::new("RTT", Unit::Seconds),
    );
    for s in 0..n {
        c = c.series(Series::from_xy(
            format!("s{s}"),
            (0..3).map(|i| (i as f64, (s + i) as f64)),
        ));
    }
    c
}

#[test]
fn ten_series_get_ten_colours_and_none_ever_shares_colour_and_dash() {
    let info = layout_info(&lines(70));
    for (i, a) in info.series.iter().enumerate() {
        for (j, b) in info.series.iter().enumerate().skip(i + 1) {
            assert!(
                a.colour != b.colour || a.dash != b.dash,
                "{i} and {j}: {a:?}"
            );
            assert!(
                j >= 10 || a.colour != b.colour,
                "{i} and {j} share {}",
                a.colour
            );
        }
    }
}

#[test]
fn a_long_legend_entry_wraps_at_its_spaces() {
    let name = "protocol socks5, SOCKS5 server microsocks, SOCKS5 authentication userpass, \
                SOCKS5 pipelining off, link delay 81 ms, TCP Fast Open off";
    let chart = Chart::new(
        "t",
        Kind::Lines,
        Axis::new("x", Unit::Count),
        Axis::new("y", Unit::Count),
    )
    .series(Series::from_xy(name, [(1.0, 1.0), (2.0, 2.0)]));
    let info = layout_info(&chart);
    let lines = &info.legend_items[0].lines;
    assert!(lines.len() >= 2, "{lines:?}");
    assert_eq!(lines.join(" "), name);
}

#[test]
fn markers_at_the_data_edge_stay_inside_the_frame_in_their_series_colour() {
    let chart = lines(2)
        .reference(Marker::new("study", 0.0, 0.0).of_series(0))
        .reference(Marker::new("study", 2.0, 3.0).of_series(1));
    let info = layout_info(&chart);
    let p = info.plot;
    for (m, s) in info.markers.iter().zip([0, 1]) {
        let b = m.bounds;
        assert!(
            b.x0 >= p.x0 && b.x1 <= p.x1 && b.y0 >= p.y0 && b.y1 <= p.y1,
            "{b:?} in {p:?}"
        );
        assert_eq!(m.colour, info.series[s].colour);
    }
    let study: Vec<String> = info
        .legend_items
        .iter()
        .filter(|e| matches!(e.kind, LegendKind::Reference { .. }))
        .map(|e| e.lines.join(" "))
        .collect();
    assert_eq!(study, ["study: s0", "study: s1"]);
}

#[test]
fn a_series_that_lies_along_another_says_so() {
    let samples: Vec<f64> = (1..200).map(|i| i as f64 * 1e-3).collect();
    let chart = Chart::new(
        "t",
        Kind::Cdf,
        Axis::new("TTFB", Unit::Seconds),
        Axis::new("Share", Unit::Percent),
    )
    .series(Series::samples("direct", samples.iter().copied()))
    .series(Series::samples(
        "convert",
        samples.iter().map(|s| s * 1.001),
    ))
    .series(Series::samples("socks5", samples.iter().map(|s| s * 3.0)));
    let info = layout_info(&chart);
    let seen: Vec<Option<usize>> = info.series.iter().map(|s| s.coincides_with).collect();
    assert_eq!(seen, [Some(1), None, None]);
    assert_eq!(
        info.legend_items[0].lines.join(" "),
        "direct (coincides with convert)"
    );
}

#[test]
fn a_published_figure_under_another_says_so() {
    let chart = lines(2)
        .reference(Marker::new("study", 1.0, 2.5).of_series(0))
        .reference(Marker::new("study", 1.0, 2.5).of_series(1));
    let info = layout_info(&chart);
    let entry = |label: &str| {
        info.legend_items
            .iter()
            .find(|e| e.lines.join(" ").starts_with(label))
            .map(|e| e.lines.join(" "))
    };
    assert_eq!(entry("study: s0").unwrap(), "study: s0 (coincides with s1)");
    assert_eq!(entry("study: s1").unwrap(), "study: s1");
}
