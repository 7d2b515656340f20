//! Progress per stage: an indicatif bar on a terminal, plain lines otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Reports progress of the current stage on stderr.
#[derive(Debug)]
pub struct Progress {
    terminal: bool,
    quiet: bool,
    bar: Option<ProgressBar>,
    stage: String,
    last_percent: u64,
}

impl Progress {
    /// Bars when stderr is a terminal; plain lines otherwise; nothing when `quiet`.
    pub fn new(quiet: bool) -> Progress {
        Progress {
            terminal: std::io::stderr().is_terminal(),
            quiet,
            bar: None,
            stage: String::new(),
            last_percent: 0,
        }
    }

    /// Starts a stage of `total` units.
    pub fn start(&mut self, stage: &str, total: u64) {
        self.finish_bar();
        self.stage = stage.to_string();
        self.last_percent = 0;
        if self.quiet {
            return;
        }
        if self.terminal {
            let bar = ProgressBar::new(total.max(1));
            bar.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_prefix(stage.to_string());
            self.bar = Some(bar);
        } else {
            eprintln!("seglog verify: {stage}: started ({total} units)");
        }
    }

    /// Sets the position within the stage, with a short message.
    pub fn set(&mut self, position: u64, total: u64, message: &str) {
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_length(total.max(1));
            bar.set_position(position);
            bar.set_message(message.to_string());
            return;
        }
        let percent = position * 100 / total.max(1);
        if percent >= self.last_percent + 25 {
            self.last_percent = percent - percent % 25;
            eprintln!(
                "seglog verify: {}: {}% {message}",
                self.stage, self.last_percent
            );
        }
    }

    /// Ends the stage with a one-line summary.
    pub fn done(&mut self, summary: &str) {
        self.finish_bar();
        if !self.quiet && !self.terminal {
            eprintln!("seglog verify: {}: {summary}", self.stage);
        }
    }

    fn finish_bar(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
