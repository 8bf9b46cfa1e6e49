//! A small SVG plotting kit, so reports open anywhere with no network and no
//! JavaScript: line charts (linear, log-10, byte-size log-2 or categorical x axis;
//! markers; legend) and heatmaps (a cell per value, a colour bar).
//!
//! Every chart is one `<svg>` element with an `id` and a `<title>`, which tests
//! and browsers use to find it. Output is deterministic: the same input gives the
//! same bytes.

use std::fmt::Write;

/// Width of every chart, pixels.
pub const WIDTH: f64 = 900.0;

/// Line colours (Tableau 10), cycled.
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Escapes text for SVG/HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// How the x axis maps values to positions.
#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    /// Linear.
    Linear,
    /// Logarithmic, ticks at powers of ten.
    Log10,
    /// Logarithmic in bytes, ticks at powers of two labelled `1K`, `4M`, `1G`.
    Bytes,
    /// One slot per label; points use x = 0, 1, 2, ….
    Categories(Vec<String>),
}

/// One line of a line chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points, drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A vertical marker (e.g. a percentile) with its label.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marker {
    /// Position on the x axis.
    pub x: f64,
    /// Label drawn at the top of the marker.
    pub label: String,
    /// Colour index into [`PALETTE`].
    pub color: usize,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Element id of the `<svg>`.
    pub id: String,
    /// Title, drawn and put in `<title>`.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X axis kind.
    pub x_axis: XAxis,
    /// The lines.
    pub lines: Vec<Line>,
    /// Vertical markers.
    pub markers: Vec<Marker>,
    /// Draw a step function (a CDF) instead of straight segments.
    pub steps: bool,
}

const M_LEFT: f64 = 70.0;
const M_RIGHT: f64 = 230.0;
const M_TOP: f64 = 40.0;
const M_BOTTOM: f64 = 50.0;
const HEIGHT: f64 = 360.0;

/// A "nice" step (1, 2, 5 × 10^k) giving about `n` intervals over `range`.
fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A number with a precision that suits its size.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.3e}", v)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Bytes as nccl-tests-like short labels: `8`, `1K`, `4M`, `1G`.
pub fn fmt_bytes_short(b: f64) -> String {
    const U: [(&str, f64); 4] = [
        ("T", 1099511627776.0),
        ("G", 1073741824.0),
        ("M", 1048576.0),
        ("K", 1024.0),
    ];
    for (u, m) in U {
        if b >= m {
            let v = b / m;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{}{u}", v.round())
            } else {
                format!("{v:.1}{u}")
            };
        }
    }
    format!("{}", b.round())
}

struct Scale {
    lo: f64,
    hi: f64,
    px0: f64,
    px1: f64,
    log: bool,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let (v, lo, hi) = if self.log {
            (v.max(1e-300).log10(), self.lo.log10(), self.hi.log10())
        } else {
            (v, self.lo, self.hi)
        };
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.px0 + t * (self.px1 - self.px0)
    }
}

/// Renders a line chart as one `<svg>` element.
pub fn line_chart(c: &LineChart) -> String {
    let mut s = String::new();
    let (w, h) = (WIDTH, HEIGHT);
    let (x0, x1, y0, y1) = (M_LEFT, w - M_RIGHT, h - M_BOTTOM, M_TOP);
    let pts = || c.lines.iter().flat_map(|l| l.points.iter());
    let finite = |v: &f64| v.is_finite();
    let log = matches!(c.x_axis, XAxis::Log10 | XAxis::Bytes);
    let xs: Vec<f64> = pts()
        .map(|p| p.0)
        .chain(c.markers.iter().map(|m| m.x))
        .filter(finite)
        .filter(|&x| !log || x > 0.0)
        .collect();
    let (mut xlo, mut xhi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if let XAxis::Categories(cats) = &c.x_axis {
        xlo = -0.5;
        xhi = cats.len().max(1) as f64 - 0.5;
    }
    if !xlo.is_finite() {
        (xlo, xhi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if xhi <= xlo {
        if log {
            xlo /= 2.0;
            xhi *= 2.0;
        } else {
            xlo -= 0.5;
            xhi += 0.5;
        }
    }
    let ymax = pts().map(|p| p.1).filter(finite).fold(0.0f64, f64::max);
    let ymin = pts().map(|p| p.1).filter(finite).fold(0.0f64, f64::min);
    let ystep = nice_step(ymax - ymin, 5.0);
    let (ylo, yhi) = (
        (ymin / ystep).floor() * ystep,
        ((ymax / ystep).ceil() * ystep).max(ystep),
    );
    let xs = Scale {
        lo: xlo,
        hi: xhi,
        px0: x0,
        px1: x1,
        log,
    };
    let ys = Scale {
        lo: ylo,
        hi: yhi,
        px0: y0,
        px1: y1,
        log: false,
    };
    let _ = write!(
        s,
        r#"<svg id="{id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-title"><title id="{id}-title">{t}</title>"#,
        id = esc(&c.id),
        t = esc(&c.title)
    );
    let _ = write!(
        s,
        r##"<rect width="{w}" height="{h}" fill="#fff"/><text x="{x0}" y="22" class="ct">{}</text>"##,
        esc(&c.title)
    );
    // y grid and ticks
    let mut v = ylo;
    let mut guard = 0;
    while v <= yhi + ystep * 1e-9 && guard < 50 {
        let y = ys.at(v);
        let _ = write!(
            s,
            r##"<line x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tk">{}</text>"##,
            x0 - 6.0,
            y + 4.0,
            fmt_num(v)
        );
        v += ystep;
        guard += 1;
    }
    // x ticks
    for (xv, label) in x_ticks(&c.x_axis, xlo, xhi) {
        let x = xs.at(xv);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y1}" y2="{y0}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"##,
            y0 + 16.0,
            esc(&label)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" stroke="#333"/><line x1="{x0}" x2="{x0}" y1="{y0}" y2="{y1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="al">{}</text><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle" class="al">{}</text>"##,
        (x0 + x1) / 2.0,
        h - 12.0,
        esc(&c.x_label),
        (y0 + y1) / 2.0,
        esc(&c.y_label)
    );
    // legend rows: a long name (a port's full path) wraps over up to three
    // lines instead of being cut where it says which switch it is
    let wrapped: Vec<Vec<String>> = c.lines.iter().map(|l| wrap(&l.name, 30, 3)).collect();
    let mut legend_y = Vec::with_capacity(c.lines.len() + 1);
    let mut y_next = M_TOP + 8.0;
    for w in &wrapped {
        legend_y.push(y_next);
        y_next += 18.0 + 13.0 * (w.len().max(1) - 1) as f64;
    }
    legend_y.push(y_next);
    // markers: a dashed line each, labelled in the legend column under the lines
    for (k, m) in c.markers.iter().enumerate() {
        if log && m.x <= 0.0 {
            continue;
        }
        let x = xs.at(m.x);
        let col = PALETTE[m.color % PALETTE.len()];
        let ly = legend_y[c.lines.len()] + 18.0 * k as f64 + 6.0;
        let _ = write!(
            s,
            r#"<g class="marker"><line x1="{x:.1}" x2="{x:.1}" y1="{y1}" y2="{y0}" stroke="{col}" stroke-dasharray="4 3"/><line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{col}" stroke-dasharray="4 3" stroke-width="2"/><text x="{:.1}" y="{:.1}" class="lg" fill="{col}">{}</text></g>"#,
            x1 + 14.0,
            x1 + 34.0,
            x1 + 40.0,
            ly + 4.0,
            esc(&m.label)
        );
    }
    // lines
    for (i, l) in c.lines.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let mut d = String::new();
        let mut prev: Option<(f64, f64)> = None;
        for &(px, py) in &l.points {
            if !px.is_finite() || !py.is_finite() || (log && px <= 0.0) {
                continue;
            }
            let (x, y) = (xs.at(px), ys.at(py));
            match prev {
                None => {
                    let _ = write!(d, "M{x:.1} {y:.1}");
                }
                Some((_, py0)) if c.steps => {
                    let _ = write!(d, "L{x:.1} {py0:.1}L{x:.1} {y:.1}");
                }
                Some(_) => {
                    let _ = write!(d, "L{x:.1} {y:.1}");
                }
            }
            prev = Some((x, y));
        }
        let _ = write!(
            s,
            // slightly transparent, so a line under another still shows
            r#"<path class="series" d="{d}" fill="none" stroke="{col}" stroke-width="2" stroke-opacity="0.8"><title>{}</title></path>"#,
            esc(&l.name)
        );
        if !c.steps && l.points.len() <= 60 {
            for &(px, py) in &l.points {
                if !px.is_finite() || !py.is_finite() || (log && px <= 0.0) {
                    continue;
                }
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{col}"><title>{}: {}</title></circle>"#,
                    xs.at(px),
                    ys.at(py),
                    esc(&l.name),
                    fmt_num(py)
                );
            }
        }
        // legend
        let ly = legend_y[i];
        let tx = x1 + 40.0;
        let mut text = String::new();
        for (j, part) in wrapped[i].iter().enumerate() {
            let _ = write!(
                text,
                r#"<tspan x="{tx:.1}" y="{:.1}">{}</tspan>"#,
                ly + 4.0 + 13.0 * j as f64,
                esc(part)
            );
        }
        let _ = write!(
            s,
            r#"<g class="legend"><title>{}</title><line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="3"/><text class="lg">{text}</text></g>"#,
            esc(&l.name),
            x1 + 14.0,
            x1 + 34.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// `s` in lines of at most `width` characters, broken at spaces where it can,
/// at most `max_lines` of them (the last one cut with `…`).
fn wrap(s: &str, width: usize, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let fits =
            cur.chars().count() + usize::from(!cur.is_empty()) + word.chars().count() <= width;
        if !cur.is_empty() && !fits {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        // a word longer than the width is cut into pieces
        while cur.chars().count() > width {
            let head: String = cur.chars().take(width).collect();
            cur = cur.chars().skip(width).collect();
            lines.push(head);
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        let last = lines.pop().unwrap_or_default();
        lines.push(truncate(&format!("{last} …"), width));
    }
    lines
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// Tick positions and labels for an axis spanning `lo..hi`.
fn x_ticks(axis: &XAxis, lo: f64, hi: f64) -> Vec<(f64, String)> {
    match axis {
        XAxis::Categories(cats) => cats
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64, c.clone()))
            .collect(),
        XAxis::Linear => {
            let step = nice_step(hi - lo, 6.0);
            let mut v = (lo / step).ceil() * step;
            let mut out = Vec::new();
            while v <= hi + step * 1e-9 && out.len() < 30 {
                out.push((v, fmt_num(v)));
                v += step;
            }
            out
        }
        XAxis::Log10 => {
            let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            (a..=b)
                .map(|e| 10f64.powi(e))
                .filter(|&v| v >= lo * 0.999 && v <= hi * 1.001)
                .map(|v| (v, fmt_num(v)))
                .collect()
        }
        XAxis::Bytes => {
            let (a, b) = (lo.log2().floor() as i32, hi.log2().ceil() as i32);
            let every = ((b - a) / 12 + 1).max(1);
            (a..=b)
                .filter(|e| (e - a) % every == 0)
                .map(|e| 2f64.powi(e))
                .filter(|&v| v >= lo * 0.999 && v <= hi * 1.001)
                .map(|v| (v, fmt_bytes_short(v)))
                .collect()
        }
    }
}

/// A heatmap: rows × columns of values, coloured on a viridis-like scale.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// Element id of the `<svg>`.
    pub id: String,
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// One label per row (drawn when they fit, always in cell tooltips).
    pub row_labels: Vec<String>,
    /// One label per column (tooltips; a few are drawn as ticks).
    pub col_labels: Vec<String>,
    /// `values[row][col]`.
    pub values: Vec<Vec<f64>>,
    /// What the colour means, with unit.
    pub scale_label: String,
    /// Top of the colour scale (values above are clamped); `None` = the largest value.
    pub max: Option<f64>,
    /// Formats a value for tooltips and the colour bar.
    pub fmt: fn(f64) -> String,
    /// Vertical separators at fractional column positions, with a label (e.g. where
    /// each run of a concatenated timeline starts).
    pub col_marks: Vec<(f64, String)>,
    /// Colour on a logarithmic scale (from the smallest positive value to the
    /// largest), for values spanning orders of magnitude.
    pub log_scale: bool,
}

const VIRIDIS: [(f64, f64, f64); 5] = [
    (68.0, 1.0, 84.0),
    (59.0, 82.0, 139.0),
    (33.0, 145.0, 140.0),
    (94.0, 201.0, 98.0),
    (253.0, 231.0, 37.0),
];

/// The colour of `t` in 0..=1 on the scale.
pub fn color(t: f64) -> String {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = t * (VIRIDIS.len() - 1) as f64;
    let i = (f.floor() as usize).min(VIRIDIS.len() - 2);
    let u = f - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * u).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Renders a heatmap as one `<svg>` element. Zero cells are left as the background
/// (the scale's zero colour), which keeps sparse maps small.
pub fn heatmap(hm: &Heatmap) -> String {
    let rows = hm.values.len();
    let cols = hm.values.iter().map(Vec::len).max().unwrap_or(0);
    let left = if rows <= 40 { 190.0 } else { 110.0 };
    let plot_w = WIDTH - left - 120.0;
    let cw = if cols > 0 { plot_w / cols as f64 } else { 0.0 };
    let ch = if rows > 0 {
        (560.0 / rows as f64).clamp(2.0, 16.0)
    } else {
        0.0
    };
    let top = if hm.col_marks.is_empty() { 40.0 } else { 64.0 };
    let plot_h = ch * rows as f64;
    let h = top + plot_h + 60.0;
    let vmax = hm.max.unwrap_or_else(|| {
        hm.values
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    });
    let vmin = hm
        .values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = hm.log_scale && vmin.is_finite() && vmax > vmin;
    let scale = |v: f64| {
        if log {
            // the smallest positive value still gets a visible colour
            0.08 + 0.92 * (v.max(vmin) / vmin).log10() / (vmax / vmin).log10()
        } else if vmax > 0.0 {
            v / vmax
        } else {
            0.0
        }
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg id="{id}" class="chart heatmap" shape-rendering="crispEdges" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h:.0}" viewBox="0 0 {WIDTH} {h:.0}" role="img" aria-labelledby="{id}-title"><title id="{id}-title">{t}</title><rect width="{WIDTH}" height="{h:.0}" fill="#fff"/><text x="{left}" y="22" class="ct">{t}</text>"##,
        id = esc(&hm.id),
        t = esc(&hm.title)
    );
    let _ = write!(
        s,
        r#"<rect x="{left}" y="{top}" width="{:.1}" height="{plot_h:.1}" fill="{}"/>"#,
        cw * cols as f64,
        color(0.0)
    );
    for (r, row) in hm.values.iter().enumerate() {
        let y = top + ch * r as f64;
        let rl = hm.row_labels.get(r).map(String::as_str).unwrap_or("");
        for (c, &v) in row.iter().enumerate() {
            if v.is_nan() || v <= 0.0 {
                continue;
            }
            let t = scale(v);
            let cl = hm.col_labels.get(c).map(String::as_str).unwrap_or("");
            let _ = write!(
                s,
                r#"<rect x="{:.2}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{}"><title>{} · {}: {}</title></rect>"#,
                left + cw * c as f64,
                cw + 0.6,
                ch + 0.6,
                color(t),
                esc(rl),
                esc(cl),
                (hm.fmt)(v)
            );
        }
    }
    // separators; a label only where it does not collide with the previous one
    let mut last_label = f64::NEG_INFINITY;
    let mut row = 0;
    for (pos, label) in &hm.col_marks {
        let x = left + cw * pos;
        let _ = write!(
            s,
            r##"<line class="colmark" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#fff" stroke-width="1.5" stroke-dasharray="3 2"/>"##,
            top - 4.0,
            top + plot_h,
        );
        let width = 5.5 * label.chars().count() as f64;
        if x >= last_label {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="mk">{}</text>"#,
                x + 2.0,
                top - 6.0 - 10.0 * (row % 2) as f64,
                esc(label)
            );
            row += 1;
            last_label = if row % 2 == 0 { x + width } else { x + 20.0 };
        }
    }
    // row labels, thinned to fit
    let every = ((10.0 / ch).ceil() as usize).max(1);
    for (r, l) in hm.row_labels.iter().enumerate().step_by(every) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tk">{}</text>"#,
            left - 4.0,
            top + ch * (r as f64 + 0.5) + 3.0,
            esc(&truncate(l, 30))
        );
    }
    // a few column ticks
    if cols > 0 {
        let step = cols.div_ceil(8).max(1);
        for c in (0..cols).step_by(step) {
            if let Some(l) = hm.col_labels.get(c) {
                let x = left + cw * (c as f64 + 0.5);
                let _ = write!(
                    s,
                    r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"#,
                    top + plot_h + 14.0,
                    esc(l)
                );
            }
        }
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="al">{}</text><text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" class="al">{}</text>"#,
        left + plot_w / 2.0,
        top + plot_h + 40.0,
        esc(&hm.x_label),
        top + plot_h / 2.0,
        esc(&hm.y_label)
    );
    // colour bar
    let bx = WIDTH - 90.0;
    let bh = plot_h.clamp(60.0, 240.0);
    let n = 20;
    let _ = write!(s, r#"<g class="colorbar">"#);
    for i in 0..n {
        let t = 1.0 - i as f64 / n as f64;
        let _ = write!(
            s,
            r#"<rect x="{bx}" y="{:.1}" width="14" height="{:.1}" fill="{}"/>"#,
            top + bh * i as f64 / n as f64,
            bh / n as f64 + 0.3,
            color(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" class="tk">{}</text><text x="{:.1}" y="{:.1}" class="tk">{}</text><text x="{:.1}" y="{:.1}" class="tk">{}</text></g>"#,
        bx + 18.0,
        top + 8.0,
        esc(&(hm.fmt)(vmax)),
        bx + 18.0,
        top + bh,
        if log {
            format!("{} (log)", esc(&(hm.fmt)(vmin)))
        } else {
            "0".to_string()
        },
        bx - 10.0,
        top + bh + 16.0,
        esc(&hm.scale_label)
    );
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(0.7, 5.0), 0.2);
        assert_eq!(nice_step(300.0, 5.0), 100.0);
    }

    #[test]
    fn byte_ticks_are_powers_of_two() {
        let t = x_ticks(&XAxis::Bytes, 1048576.0, 1073741824.0);
        assert_eq!(t.first().unwrap().1, "1M");
        assert_eq!(t.last().unwrap().1, "1G");
    }

    #[test]
    fn charts_survive_empty_and_degenerate_input() {
        let c = LineChart {
            id: "x".into(),
            title: "t <&>".into(),
            x_label: String::new(),
            y_label: String::new(),
            x_axis: XAxis::Log10,
            lines: vec![Line {
                name: "a".into(),
                points: vec![(0.0, f64::NAN), (5.0, 5.0)],
            }],
            markers: vec![],
            steps: true,
        };
        let s = line_chart(&c);
        assert!(s.starts_with("<svg id=\"x\"") && s.ends_with("</svg>"));
        assert!(s.contains("t &lt;&amp;&gt;") && !s.contains("NaN"));
        let h = heatmap(&Heatmap {
            id: "h".into(),
            title: "h".into(),
            x_label: String::new(),
            y_label: String::new(),
            row_labels: vec![],
            col_labels: vec![],
            values: vec![],
            scale_label: String::new(),
            max: None,
            fmt: fmt_num,
            col_marks: vec![],
            log_scale: true,
        });
        assert!(h.ends_with("</svg>"));
        assert_eq!(color(0.0), "#440154");
        assert_eq!(color(1.0), "#fde725");
    }

    #[test]
    fn legend_names_wrap_at_spaces_and_keep_every_character_that_fits() {
        let name = "link 133 (switch 99 (tier 0) -> nic 0.0)";
        let w = wrap(name, 30, 3);
        assert_eq!(w, ["link 133 (switch 99 (tier 0)", "-> nic 0.0)"]);
        assert_eq!(w.join(" "), name);
        // a word longer than a line is cut, and past three lines the last says so
        assert_eq!(wrap("abcdefghij", 4, 3), ["abcd", "efgh", "ij"]);
        let w = wrap("a b c d e f g h", 3, 2);
        assert_eq!(w.len(), 2);
        assert!(w[1].ends_with('…'), "{w:?}");
        assert!(w.iter().all(|l| l.chars().count() <= 3));
        assert!(wrap("", 10, 3).is_empty());
    }
}
