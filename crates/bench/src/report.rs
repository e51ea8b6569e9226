//! `strata bench report A.json B.json ... --html out.html`: one self-contained page (no
//! scripts, no external files) comparing runs: a throughput chart, one latency-percentile
//! chart per operation (inline SVG), and the figures as a table. Each run's target
//! contributes its best round.

use crate::hist::ms;
use crate::output::OpReport;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One line in the charts: a target of one file.
struct Series {
    name: String,
    color: &'static str,
    ops: Vec<OpReport>,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Percentiles on the latency charts; x is placed by "nines", -log10(1 - q).
const QUANTILES: [(f64, &str); 6] = [
    (0.5, "50"),
    (0.9, "90"),
    (0.99, "99"),
    (0.999, "99.9"),
    (0.9999, "99.99"),
    (0.99999, "99.999"),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn run(files: &[PathBuf], html: &Path) -> Result<bool, String> {
    let mut series = Vec::new();
    for f in files {
        let r = crate::merge::load(f)?;
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for t in &r.targets {
            let name = if r.targets.len() > 1 || files.len() == 1 {
                format!("{stem}: {}", t.name)
            } else {
                stem.clone()
            };
            series.push(Series {
                name,
                color: COLORS[series.len() % COLORS.len()],
                ops: t.best.clone(),
            });
        }
    }
    let page = page(files, &series)?;
    std::fs::write(html, page).map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    println!("wrote {} ({} runs)", html.display(), series.len());
    Ok(true)
}

/// Op labels in first-seen order across all series.
fn labels(series: &[Series]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in series.iter().flat_map(|s| &s.ops) {
        if !out.contains(&o.label()) {
            out.push(o.label());
        }
    }
    out
}

fn find<'a>(s: &'a Series, label: &str) -> Option<&'a OpReport> {
    s.ops.iter().find(|o| o.label() == label)
}

fn page(files: &[PathBuf], series: &[Series]) -> Result<String, String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>strata bench report</title>\
         <style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}\
         td,th{{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}}\
         td:first-child,th:first-child,td:nth-child(2){{text-align:left}}svg{{display:block;margin:1em 0}}\
         .legend span{{display:inline-block;margin-right:1.5em}}</style></head><body>\n\
         <h1>strata bench report</h1>\n<p>Runs: {}</p>\n",
        files
            .iter()
            .map(|f| esc(&f.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    h.push_str("<p class=\"legend\">");
    for s in series {
        let _ = write!(
            h,
            "<span><svg width=\"14\" height=\"10\" style=\"display:inline;margin:0\"><rect width=\"14\" height=\"10\" fill=\"{}\"/></svg> {}</span>",
            s.color,
            esc(&s.name)
        );
    }
    h.push_str("</p>\n<h2>Throughput (operations per second)</h2>\n");
    h.push_str(&throughput_chart(series));
    h.push_str("<h2>Latency by percentile</h2>\n");
    for label in labels(series) {
        let _ = writeln!(h, "<h3>{}</h3>", esc(&label));
        h.push_str(&latency_chart(series, &label)?);
    }
    h.push_str("<h2>Figures</h2>\n<table><tr><th>op</th><th>run</th><th>count</th><th>errors</th><th>ops/s</th><th>mean ms</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n");
    for label in labels(series) {
        for s in series {
            if let Some(o) = find(s, &label) {
                let m = &o.summary;
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&label),
                    esc(&s.name),
                    o.count,
                    o.errors,
                    o.ops_per_sec,
                    ms(m.mean_us),
                    ms(m.p50_us as f64),
                    ms(m.p95_us as f64),
                    ms(m.p99_us as f64),
                    ms(m.p999_us as f64),
                    ms(m.max_us as f64)
                );
            }
        }
    }
    h.push_str("</table>\n</body></html>\n");
    Ok(h)
}

/// Horizontal bars: one group per op, one bar per series.
fn throughput_chart(series: &[Series]) -> String {
    let labels = labels(series);
    let max = series
        .iter()
        .flat_map(|s| &s.ops)
        .map(|o| o.ops_per_sec)
        .fold(0.0f64, f64::max)
        .max(1.0);
    let (left, width, bar, gap) = (170.0, 560.0, 16.0, 14.0);
    let group = bar * series.len() as f64 + gap;
    let height = 20.0 + group * labels.len() as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-size=\"12\">\n",
        left + width + 110.0
    );
    for (gi, label) in labels.iter().enumerate() {
        let y0 = 10.0 + gi as f64 * group;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y0 + bar * series.len() as f64 / 2.0 + 4.0,
            esc(label)
        );
        for (si, se) in series.iter().enumerate() {
            let Some(o) = find(se, label) else { continue };
            let w = width * o.ops_per_sec / max;
            let y = y0 + si as f64 * bar;
            let _ = writeln!(
                s,
                "<rect x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{}: {:.0} ops/s</title></rect>\
                 <text x=\"{:.1}\" y=\"{}\">{:.0}</text>",
                bar - 2.0,
                se.color,
                esc(&se.name),
                o.ops_per_sec,
                left + w + 4.0,
                y + bar - 5.0,
                o.ops_per_sec
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Latency (log scale) against percentile (by nines), one line per series.
fn latency_chart(series: &[Series], label: &str) -> Result<String, String> {
    let mut lines = Vec::new();
    for se in series {
        let Some(o) = find(se, label) else { continue };
        let h = o.hist()?;
        if h.is_empty() {
            continue;
        }
        let qs: Vec<f64> = QUANTILES.iter().map(|q| q.0).collect();
        lines.push((se, h.quantiles(&qs)));
    }
    let (left, top, width, height) = (70.0, 10.0, 560.0, 220.0);
    let all = lines.iter().flat_map(|l| l.1.iter().copied());
    let lo = all.clone().min().unwrap_or(1).max(1) as f64;
    let hi = all.max().unwrap_or(10).max(2) as f64;
    let (llo, lhi) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let y = |us: f64| top + height - height * (us.max(1.0).log10() - llo) / (lhi - llo);
    let nines = |q: f64| -(1.0 - q).log10();
    let (nlo, nhi) = (
        nines(QUANTILES[0].0),
        nines(QUANTILES[QUANTILES.len() - 1].0),
    );
    let x = |q: f64| left + width * (nines(q) - nlo) / (nhi - nlo);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-size=\"12\">\n",
        left + width + 30.0,
        top + height + 40.0
    );
    // Axes and grid: a line per decade of latency, a tick per percentile.
    let mut d = llo;
    while d <= lhi {
        let yy = y(10f64.powf(d));
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{} ms</text>",
            left + width,
            left - 6.0,
            yy + 4.0,
            // Decades read best as 0.01, 0.1, 1, 10 (f64 Display drops trailing zeros).
            10f64.powf(d) / 1000.0
        );
        d += 1.0;
    }
    for (q, name) in QUANTILES {
        let xx = x(q);
        let _ = writeln!(
            s,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{}\" stroke=\"#eee\"/>\
             <text x=\"{xx:.1}\" y=\"{}\" text-anchor=\"middle\">p{name}</text>",
            top + height,
            top + height + 16.0
        );
    }
    for (se, vals) in &lines {
        let pts: Vec<String> = QUANTILES
            .iter()
            .zip(vals)
            .map(|((q, _), &v)| format!("{:.1},{:.1}", x(*q), y(v as f64)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
            se.color,
            pts.join(" "),
            esc(&se.name)
        );
        for ((q, name), &v) in QUANTILES.iter().zip(vals) {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{} p{name}: {} ms</title></circle>",
                x(*q),
                y(v as f64),
                se.color,
                esc(&se.name),
                ms(v as f64)
            );
        }
    }
    s.push_str("</svg>\n");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::OpStats;

    #[test]
    fn page_is_self_contained_with_charts() {
        let mut st = OpStats {
            name: "GET".into(),
            count: 100,
            ..Default::default()
        };
        for v in 1..=100 {
            st.hist.record(v * 10);
        }
        let o = OpReport::from_stats("GET", 1.0, None, &st);
        let series = vec![
            Series {
                name: "a <x>".into(),
                color: COLORS[0],
                ops: vec![o.clone()],
            },
            Series {
                name: "b".into(),
                color: COLORS[1],
                ops: vec![o],
            },
        ];
        let p = page(&[PathBuf::from("a.json")], &series).expect("page");
        assert_eq!(p.matches("<svg xmlns").count(), 2);
        assert!(p.contains("a &lt;x&gt;"));
        assert!(!p.contains("<script"));
        assert!(
            !p.contains("http://")
                || p.matches("http://").count()
                    == p.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
    }
}
