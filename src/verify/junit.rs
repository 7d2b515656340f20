//! `--junit FILE`: a run as JUnit XML (one `<testsuite>`, one `<testcase>` per stage
//! or workload), which CI systems show as a test report.

/// One test case: a stage of `verify` or a workload of `sweep`.
#[derive(Debug, Clone, PartialEq)]
pub struct JunitCase {
    /// The case's name (the stage or workload).
    pub name: String,
    /// Seconds it took.
    pub seconds: f64,
    /// The failure message, if it failed.
    pub failure: Option<String>,
    /// Why it was skipped, if it was.
    pub skipped: Option<String>,
    /// Its numbers, one line (`<system-out>`).
    pub output: String,
}

/// Renders `cases` as a JUnit XML document whose suite is `suite`.
pub fn junit_xml(suite: &str, cases: &[JunitCase]) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
    let seconds: f64 = cases.iter().map(|c| c.seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"seglog\" tests=\"{}\" failures=\"{failures}\" time=\"{seconds:.3}\">\n",
        cases.len()
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{seconds:.3}\">\n",
        xml_escape(suite),
        cases.len()
    ));
    for case in cases {
        out.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\">\n",
            xml_escape(&case.name),
            xml_escape(suite),
            case.seconds
        ));
        if let Some(message) = &case.failure {
            let first = message.lines().next().unwrap_or_default();
            out.push_str(&format!(
                "      <failure message=\"{}\">{}</failure>\n",
                xml_escape(first),
                xml_escape(message)
            ));
        }
        if let Some(reason) = &case.skipped {
            out.push_str(&format!(
                "      <skipped message=\"{}\"/>\n",
                xml_escape(reason)
            ));
        }
        if !case.output.is_empty() {
            out.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                xml_escape(&case.output)
            ));
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Escapes text for an XML attribute or element; drops the control characters
/// XML 1.0 cannot hold.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_counts_failures() {
        let cases = [
            JunitCase {
                name: "a<b>".into(),
                seconds: 1.5,
                failure: None,
                skipped: None,
                output: "1 & 2".into(),
            },
            JunitCase {
                name: "c".into(),
                seconds: 0.5,
                failure: Some("lost \"x\"\nmore".into()),
                skipped: None,
                output: String::new(),
            },
        ];
        let xml = junit_xml("s", &cases);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(xml.contains("name=\"a&lt;b&gt;\""), "{xml}");
        assert!(xml.contains("<system-out>1 &amp; 2</system-out>"), "{xml}");
        assert!(
            xml.contains("<failure message=\"lost &quot;x&quot;\">"),
            "{xml}"
        );
        assert!(!xml.contains("a<b>"), "{xml}");
        assert_eq!(xml_escape("\u{1}"), "?");
    }
}
