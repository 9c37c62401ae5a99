use crate::common;

use common::{assert_no_overlap, svg_texts};
use proptest::prelude::*;
use wirebench_chart::{
    Axis, Chart, Kind, Marker, Point, Scale, Series, Unit, layout_info, render_png, render_svg,
};

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => -1e3..1e6f64,
        3 => 1e-9..1e12f64,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => proptest::num::f64::ANY,
    ]
}

fn point() -> impl Strategy<Value = Point> {
    (
        value(),
        value(),
        proptest::option::of(value()),
        proptest::option::of(value()),
    )
        .prop_map(|(x, y, y_min, y_max)| Point { x, y, y_min, y_max })
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![
        Just(Unit::Seconds),
        Just(Unit::Bytes),
        Just(Unit::BitsPerSecond),
        Just(Unit::Count),
        Just(Unit::Percent),
        Just(Unit::Ratio),
        ".{0,8}".prop_map(Unit::Other),
    ]
}

fn axis() -> impl Strategy<Value = Axis> {
    (".{0,30}", unit(), any::<bool>()).prop_map(|(label, unit, log)| Axis {
        label,
        unit,
        scale: if log { Scale::Log } else { Scale::Linear },
        reversed: false,
    })
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Lines),
        Just(Kind::Scatter),
        Just(Kind::Cdf),
        Just(Kind::Steps),
        proptest::collection::vec(".{0,20}", 0..8).prop_map(|categories| Kind::Bars { categories }),
    ]
}

fn chart() -> impl Strategy<Value = Chart> {
    (
        ".{0,60}",
        proptest::option::of(".{0,60}"),
        kind(),
        axis(),
        axis(),
        proptest::collection::vec(
            (".{0,24}", proptest::collection::vec(point(), 0..40)),
            0..14,
        ),
        proptest::collection::vec((".{0,12}", value(), value()), 0..6),
        (200u32..1600, 150u32..900),
    )
        .prop_map(
            |(title, subtitle, kind, x, y, series, refs, (w, h))| Chart {
                title,
                subtitle,
                kind,
                x,
                y,
                series: series.into_iter().map(|(n, p)| Series::new(n, p)).collect(),
                references: refs
                    .into_iter()
                    .map(|(l, x, y)| Marker::new(l, x, y))
                    .collect(),
                guides: Vec::new(),
                width: w,
                height: h,
            },
        )
}

/// Smooth data in a sensible range: here layout guarantees must hold.
fn tidy_chart() -> impl Strategy<Value = Chart> {
    (
        kind(),
        unit(),
        unit(),
        any::<bool>(),
        1e-7..1e10f64,
        proptest::collection::vec(proptest::collection::vec(0.0..1.0f64, 1..30), 1..10),
    )
        .prop_map(|(kind, ux, uy, log, scale, series)| {
            let x = Axis::new("Parameter", ux);
            let x = if log { x.log() } else { x };
            let mut c = Chart::new("Title", kind, x, Axis::new("Measured value", uy));
            for (i, ys) in series.into_iter().enumerate() {
                let pts = ys
                    .iter()
                    .enumerate()
                    .map(|(j, y)| ((j as f64 + 1.0) * scale, (y + 0.01) * scale))
                    .collect::<Vec<_>>();
                c = c.series(Series::from_xy(format!("series {i}"), pts));
            }
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn random_charts_render_well_formed_svg(chart in chart()) {
        let svg = render_svg(&chart);
        svg_texts(&svg);
        layout_info(&chart);
    }

    #[test]
    fn tidy_charts_never_overlap(chart in tidy_chart()) {
        assert_no_overlap(&layout_info(&chart));
        svg_texts(&render_svg(&chart));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn random_charts_rasterise(chart in chart()) {
        let png = render_png(&chart, 0.5).unwrap();
        prop_assert_eq!(&png[1..4], b"PNG");
    }
}
