//! How a command fails: a usage error (exit 2), a failed run (exit 1),
//! or Ctrl-C after what was measured was printed (exit 130).

/// A failure with its exit code.
#[derive(Debug)]
pub enum Failure {
    Usage(anyhow::Error),
    Run(anyhow::Error),
    /// Stopped by Ctrl-C after printing what was measured.
    Interrupted,
}

impl Failure {
    /// The failure in words, on one line.
    pub fn message(&self) -> String {
        match self {
            Failure::Usage(e) | Failure::Run(e) => one_line(e),
            Failure::Interrupted => "interrupted before the test began".to_string(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Run(e.into())
    }
}

/// An error and its causes on one line, each cause once (library errors
/// already name their source in their own message).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line.replace('\n', " ")
}
