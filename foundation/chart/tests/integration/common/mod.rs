//! Helpers shared by the integration tests.
#![allow(dead_code)]

use wirebench_chart::{LayoutInfo, TextBox, TextRole};

/// Parses the SVG and returns the concatenated text of all `<text>` nodes.
pub fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("invalid XML: {e}\n{svg}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

/// Every `<title>` (tooltips carry full, untruncated names).
pub fn svg_titles(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("valid XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("title"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

pub fn labels(info: &LayoutInfo, role: TextRole) -> Vec<String> {
    info.texts
        .iter()
        .filter(|t| t.role == role)
        .map(|t| t.text.clone())
        .collect()
}

/// Panics if two horizontal texts overlap, or any text leaves the canvas.
pub fn assert_no_overlap(info: &LayoutInfo) {
    let flat: Vec<&TextBox> = info.texts.iter().filter(|t| !t.rotated).collect();
    for (i, a) in flat.iter().enumerate() {
        for b in &flat[i + 1..] {
            assert!(
                !a.bounds.intersects(&b.bounds),
                "{:?} {:?} {:?} overlaps {:?} {:?} {:?}",
                a.role,
                a.text,
                a.bounds,
                b.role,
                b.text,
                b.bounds
            );
        }
    }
    for t in &info.texts {
        let b = t.bounds;
        assert!(
            b.x0 >= -1.0 && b.y0 >= -1.0 && b.x1 <= info.width + 1.0 && b.y1 <= info.height + 1.0,
            "{:?} {:?} leaves the canvas: {:?}",
            t.role,
            t.text,
            b
        );
    }
    if let Some(legend) = info.legend {
        assert!(
            !legend.intersects(&info.plot),
            "legend {legend:?} covers plot {:?}",
            info.plot
        );
    }
}
