//! `--html OUT`: a self-contained page (inline style, no script, no external
//! asset) with a summary of every stage and, for each failure, its operation
//! timeline, the directory trees at the crash and after recovery, and the expected
//! against the recovered records. Every text from a run is escaped.

use crate::scenario::inspect::{Inspection, RecoveryInspection, TreeEntry};
use crate::scenario::timeline::OpFate;
use crate::scenario::timeline::TimelineRow;
use crate::workload::{LogView, RecordView};

use super::StageReport;

/// One row of the summary.
#[derive(Debug, Clone)]
pub struct PageStage {
    /// The stage (or scenario) name.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Seconds it took.
    pub seconds: f64,
    /// Its one-line summary.
    pub summary: String,
    /// Its numbers, by name.
    pub numbers: Vec<(String, String)>,
}

impl From<&StageReport> for PageStage {
    fn from(stage: &StageReport) -> PageStage {
        let numbers = stage
            .details
            .iter()
            .filter(|(_, v)| v.is_number() || v.is_boolean())
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        PageStage {
            name: stage.stage.to_string(),
            passed: stage.passed,
            seconds: stage.seconds,
            summary: stage.summary.clone(),
            numbers,
        }
    }
}

/// One failure: a scenario laid open, or the text of a counterexample.
#[derive(Debug, Clone)]
pub struct PageFailure {
    /// What failed.
    pub title: String,
    /// The scenario, replayed and traced.
    pub inspection: Option<Inspection>,
    /// Anything else to show (a counterexample that is not a scenario, an error).
    pub text: Option<String>,
    /// A crash image of a traced workload (`seglog kafka-crash`), laid open.
    pub crash: Option<CrashCase>,
}

/// One crash image of a traced workload with findings: the workload's steps, the
/// calls up to the power loss with their fates, what it lost, the image's tree, and
/// the records owed against those served.
#[derive(Debug, Clone)]
pub struct CrashCase {
    /// One line per step of the workload (numbered from 0).
    pub steps: Vec<String>,
    pub timeline: Vec<TimelineRow>,
    /// What the power loss took away.
    pub lost: Vec<String>,
    /// The image's directories and files.
    pub tree: Vec<TreeEntry>,
    /// The two columns of the records table: what is owed, what was served.
    pub columns: (String, String),
    /// One row per offset: owed, served (`-`: none).
    pub records: Vec<(String, String)>,
}

/// Escapes text for HTML element content and attribute values.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;\
font-size:13px;vertical-align:top;text-align:left}pre,.mono{font-family:monospace}\
.ok{color:#075}.fail{color:#b00;font-weight:bold}tr.durable td{background:#eef8ee}\
tr.kept td{background:#fff8e0}tr.lost td{background:#fdd}tr.sync td{background:#eef}\
tr.failed td{background:#fcc;font-weight:bold}tr.differs td{background:#fdd}\
.side{display:flex;gap:2em;flex-wrap:wrap}h3{margin-top:1.5em}";

/// The whole page.
pub fn page(title: &str, stages: &[PageStage], failures: &[PageFailure]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str(&format!("<title>{}</title>", html_escape(title)));
    out.push_str(&format!("<style>{STYLE}</style></head><body>\n"));
    out.push_str(&format!("<h1>{}</h1>\n", html_escape(title)));
    out.push_str("<h2>Summary</h2>\n<table><tr><th>stage</th><th>result</th><th>seconds</th><th>summary</th><th>numbers</th></tr>\n");
    for stage in stages {
        let numbers: Vec<String> = stage
            .numbers
            .iter()
            .map(|(k, v)| format!("{}={}", html_escape(k), html_escape(v)))
            .collect();
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"{}\">{}</td><td>{:.1}</td><td>{}</td><td class=\"mono\">{}</td></tr>\n",
            html_escape(&stage.name),
            if stage.passed { "ok" } else { "fail" },
            if stage.passed { "ok" } else { "FAIL" },
            stage.seconds,
            html_escape(&stage.summary),
            numbers.join("<br>")
        ));
    }
    out.push_str("</table>\n");
    out.push_str(&format!("<h2>Failures ({})</h2>\n", failures.len()));
    if failures.is_empty() {
        out.push_str("<p>None.</p>\n");
    }
    for (n, failure) in failures.iter().enumerate() {
        out.push_str(&format!(
            "<section id=\"failure-{n}\"><h2 class=\"fail\">{}</h2>\n",
            html_escape(&failure.title)
        ));
        if let Some(text) = &failure.text {
            out.push_str(&format!("<pre>{}</pre>\n", html_escape(text)));
        }
        if let Some(inspection) = &failure.inspection {
            inspection_html(&mut out, inspection);
        }
        if let Some(crash) = &failure.crash {
            crash_html(&mut out, crash);
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body></html>\n");
    out
}

fn inspection_html(out: &mut String, inspection: &Inspection) {
    let result = &inspection.result;
    out.push_str(&format!(
        "<p>variant <b>{}</b>, expected <b>{}</b>, got <b>{}</b>; crash before file-system operation {}, during workload operation {}</p>\n",
        html_escape(&result.variant),
        html_escape(&format!("{:?}", result.expected).to_lowercase()),
        html_escape(&result.actual),
        result.crash_before_op.map_or("-".into(), |k| k.to_string()),
        result.interrupted_op.map_or("open".into(), |i| i.to_string()),
    ));
    if !result.diff.is_empty() {
        out.push_str("<ul>");
        for line in &result.diff {
            out.push_str(&format!("<li>{}</li>", html_escape(line)));
        }
        out.push_str("</ul>\n");
    }
    for note in &inspection.notes {
        out.push_str(&format!("<p><i>{}</i></p>\n", html_escape(note)));
    }
    workload_html(out, &inspection.workload_ops, &inspection.timeline);
    lost_html(out, "The crash image lost:", &inspection.lost);
    out.push_str("<h3>Directory trees</h3><div class=\"side\">");
    tree_html(
        out,
        "at the crash (the disk image)",
        &inspection.tree_at_crash,
    );
    tree_html(out, "after recovery", &inspection.tree_after_recovery);
    out.push_str("</div>\n");
    let count = inspection.recoveries.len();
    for (n, recovery) in inspection.recoveries.iter().enumerate() {
        recovery_html(out, n + 1, count, recovery);
    }
    out.push_str("<h3>Records: expected vs recovered</h3>\n");
    records_html(
        out,
        &inspection.expected_label,
        inspection.expected.as_ref(),
        &inspection.recovered,
    );
}

fn crash_html(out: &mut String, crash: &CrashCase) {
    workload_html(out, &crash.steps, &crash.timeline);
    lost_html(out, "The power loss lost:", &crash.lost);
    out.push_str("<h3>Directory tree</h3><div class=\"side\">");
    tree_html(out, "at the crash (the disk image)", &crash.tree);
    out.push_str("</div>\n<h3>Records</h3>\n");
    out.push_str(&format!(
        "<table><tr><th>{}</th><th>{}</th></tr>\n",
        html_escape(&crash.columns.0),
        html_escape(&crash.columns.1)
    ));
    for (owed, served) in &crash.records {
        out.push_str(&format!(
            "<tr{}><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>\n",
            if owed == served || owed == "-" {
                ""
            } else {
                " class=\"differs\""
            },
            html_escape(owed),
            html_escape(served)
        ));
    }
    out.push_str("</table>\n");
}

/// One recovery of the crash image: its calls, what a crash during it lost, the
/// trees it started from and left.
fn recovery_html(out: &mut String, n: usize, count: usize, recovery: &RecoveryInspection) {
    out.push_str(&format!(
        "<section class=\"recovery\" id=\"recovery-{n}\"><h3>Recovery {n} of {count}: {}</h3>\n",
        html_escape(&recovery.outcome)
    ));
    timeline_html(out, &recovery.timeline);
    lost_html(out, "The crash during this recovery lost:", &recovery.lost);
    out.push_str("<div class=\"side\">");
    tree_html(out, &format!("before recovery {n}"), &recovery.tree_before);
    tree_html(out, &format!("after recovery {n}"), &recovery.tree_after);
    out.push_str("</div></section>\n");
}

/// The workload's operations, numbered from 0, then the timeline of its calls.
fn workload_html(out: &mut String, ops: &[String], timeline: &[TimelineRow]) {
    out.push_str("<h3>Workload</h3><ol start=\"0\">");
    for op in ops {
        out.push_str(&format!("<li class=\"mono\">{}</li>", html_escape(op)));
    }
    out.push_str("</ol>\n<h3>Operation timeline</h3>\n");
    timeline_html(out, timeline);
}

/// What a crash took away, after `intro` (nothing when it took nothing).
fn lost_html(out: &mut String, intro: &str, lost: &[String]) {
    if lost.is_empty() {
        return;
    }
    out.push_str(&format!("<p>{}</p><ul>", html_escape(intro)));
    for item in lost {
        out.push_str(&format!("<li class=\"mono\">{}</li>", html_escape(item)));
    }
    out.push_str("</ul>\n");
}

fn timeline_html(out: &mut String, timeline: &[TimelineRow]) {
    out.push_str("<table><tr><th>#</th><th>workload op</th><th>file-system operation</th><th>at the crash</th></tr>\n");
    for row in timeline {
        let (class, fate) = match &row.fate {
            OpFate::Durable => ("durable", "durable".to_string()),
            OpFate::Kept => ("kept", "not durable, kept by this image".to_string()),
            OpFate::Lost(how) => ("lost", format!("LOST by the crash image: {how}")),
            OpFate::Sync => ("sync", "sync".to_string()),
            OpFate::Held => ("sync", "writer lock held".to_string()),
            OpFate::Failed(e) => ("failed", format!("crash / error: {e}")),
        };
        out.push_str(&format!(
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>\n",
            row.index,
            row.workload_op.map_or("open".into(), |i| i.to_string()),
            html_escape(&row.op),
            html_escape(&fate)
        ));
    }
    out.push_str("</table>\n");
}

fn tree_html(out: &mut String, title: &str, entries: &[TreeEntry]) {
    out.push_str(&format!(
        "<div><b>{}</b><table><tr><th>path</th><th>bytes</th></tr>",
        html_escape(title)
    ));
    if entries.is_empty() {
        out.push_str("<tr><td colspan=\"2\">(none)</td></tr>");
    }
    for entry in entries {
        out.push_str(&format!(
            "<tr><td class=\"mono\">{}</td><td>{}</td></tr>",
            html_escape(&entry.path),
            entry.bytes.map_or("dir".into(), |b| b.to_string())
        ));
    }
    out.push_str("</table></div>");
}

fn record_text(record: Option<&RecordView>) -> String {
    let bytes = |b: &Option<Vec<u8>>| {
        b.as_ref().map_or("null".to_string(), |b| {
            format!("{:?}", String::from_utf8_lossy(b))
        })
    };
    match record {
        None => "-".into(),
        Some(r) => format!(
            "{} key={} value={} ts={}{}",
            r.offset,
            bytes(&r.key),
            bytes(&r.value),
            r.ts,
            if r.control { " control" } else { "" }
        ),
    }
}

fn records_html(
    out: &mut String,
    label: &str,
    expected: Option<&LogView>,
    recovered: &Result<LogView, String>,
) {
    let header = |view: Option<&LogView>| {
        view.map_or("-".to_string(), |v| {
            format!(
                "log_start_offset {}, next_offset {}, clean point {}",
                v.log_start_offset, v.next_offset, v.clean_point
            )
        })
    };
    let got = recovered.as_ref().ok();
    out.push_str(&format!(
        "<table><tr><th>expected: {}<br>{}</th><th>recovered<br>{}</th></tr>\n",
        html_escape(label),
        html_escape(&header(expected)),
        html_escape(&match recovered {
            Ok(v) => header(Some(v)),
            Err(e) => e.clone(),
        })
    ));
    let mut offsets: Vec<i64> = expected
        .into_iter()
        .chain(got)
        .flat_map(|v| v.records.iter().map(|r| r.offset))
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    fn find(view: Option<&LogView>, offset: i64) -> Option<&RecordView> {
        view.and_then(|v| v.records.iter().find(|r| r.offset == offset))
    }
    for offset in offsets {
        let (want, have) = (find(expected, offset), find(got, offset));
        out.push_str(&format!(
            "<tr{}><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>\n",
            if want == have {
                ""
            } else {
                " class=\"differs\""
            },
            html_escape(&record_text(want)),
            html_escape(&record_text(have))
        ));
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_a_run_can_print() {
        assert_eq!(
            html_escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        let stage = PageStage {
            name: "<b>".into(),
            passed: false,
            seconds: 1.0,
            summary: "1 < 2".into(),
            numbers: vec![("k<".into(), "3".into())],
        };
        let failure = PageFailure {
            title: "x&y".into(),
            inspection: None,
            text: Some("<img src=x>".into()),
            crash: None,
        };
        let html = page("t<", &[stage], &[failure]);
        assert!(!html.contains("<b>") && !html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img src=x&gt;"), "{html}");
        assert!(html.contains("1 &lt; 2"), "{html}");
        assert!(html.contains("k&lt;=3"), "{html}");
        assert!(html.contains("Failures (1)"));
        assert!(!html.contains("http"), "no external asset: {html}");
    }

    #[test]
    fn a_crash_case_shows_its_fates_and_the_records_it_lost() {
        use crate::scenario::timeline::OpFate;
        let row = |index, op: &str, fate| TimelineRow {
            index,
            workload_op: Some(0),
            op: op.into(),
            fate,
        };
        let case = CrashCase {
            steps: vec!["append <k>".into()],
            timeline: vec![
                row(0, "create_file /d/a.log", OpFate::Durable),
                row(
                    1,
                    "rename /d/a.cleaned -> /d/a.swap",
                    OpFate::Lost("rename".into()),
                ),
            ],
            lost: vec!["dir-op seq=1".into()],
            tree: vec![TreeEntry {
                path: "/d/a.log".into(),
                bytes: Some(3),
            }],
            columns: ("owed".into(), "served".into()),
            records: vec![
                ("0 k=v".into(), "0 k=v".into()),
                ("1 k=w".into(), "-".into()),
                ("-".into(), "2 k=x".into()),
            ],
        };
        let failure = PageFailure {
            title: "case".into(),
            inspection: None,
            text: None,
            crash: Some(case),
        };
        let html = page("t", &[], &[failure]);
        assert!(html.contains("append &lt;k&gt;"), "{html}");
        assert!(html.contains("<tr class=\"lost\">"), "{html}");
        assert!(html.contains("<tr class=\"durable\">"), "{html}");
        assert!(html.contains("dir-op seq=1"), "{html}");
        // Only the owed record not served differs.
        assert_eq!(html.matches("<tr class=\"differs\">").count(), 1, "{html}");
        assert!(
            html.contains("<tr class=\"differs\"><td class=\"mono\">1 k=w</td>"),
            "{html}"
        );
    }
}
