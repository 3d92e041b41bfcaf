//! The line of a plan's mistake: a plan's rules are checked after the
//! TOML is read, and their errors name the step, endpoint or schedule key
//! (`step 3: time_s: 'soon' is not a duration`); this finds that key in
//! the text, so that the error starts `line 14:` as a TOML error does.

use crate::CampaignError;
use sonde_model::toml_where::{line_of, Step};

/// `e` with the line of what it names, when that can be found.
pub(crate) fn located(e: CampaignError, text: &str) -> CampaignError {
    match e {
        CampaignError::Plan(message) => match line(&message, text) {
            Some(n) => CampaignError::Plan(format!("line {n}: {message}")),
            None => CampaignError::Plan(message),
        },
        other => other,
    }
}

/// Whether `word` reads as a key (`time_s`, `test.host`), not as prose.
fn is_key(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

fn line(message: &str, text: &str) -> Option<usize> {
    if let Some(rest) = message.strip_prefix("step ") {
        let (n, rest) = rest.split_once(": ")?;
        let i = n.parse::<usize>().ok()?.checked_sub(1)?;
        let mut path = vec![Step::Key("step"), Step::Index(i)];
        if let Some((key, _)) = rest.split_once(": ").filter(|(k, _)| is_key(k)) {
            path.extend(key.split('.').map(Step::Key));
        }
        return line_of(text, &path);
    }
    if let Some(rest) = message.strip_prefix("endpoint ") {
        let (name, rest) = rest.split_once(": ").unwrap_or((rest, ""));
        let mut path = vec![Step::Key("endpoint"), Step::Named(name)];
        if let Some(key) = rest.split([' ', ':']).next().filter(|k| is_key(k)) {
            path.push(Step::Key(key));
        }
        return line_of(text, &path);
    }
    if let Some(rest) = message.strip_prefix("schedule: ") {
        let key: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        return line_of(text, &[Step::Key("schedule"), Step::Key(&key)]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "name = \"p\"\n[schedule]\nrepeat = \"PT1H\"\nslip = \"soon\"\n\
                        [[endpoint]]\nname = \"A\"\naddress = \"a\"\n\
                        [[endpoint]]\nname = \"B\"\naddress = \"b:99999\"\n\
                        [[step]]\ntest = \"ping\"\n\
                        [[step]]\ntest = \"tcp\"\ntime_s = \"soon\"\n";

    fn at(message: &str) -> String {
        located(CampaignError::Plan(message.into()), PLAN).to_string()
    }

    #[test]
    fn a_plans_mistake_is_given_the_line_of_what_it_names() {
        assert_eq!(
            at("step 2: time_s: 'soon' is not a duration"),
            "plan: line 15: step 2: time_s: 'soon' is not a duration"
        );
        assert_eq!(
            at("endpoint B: address 'b:99999': port 99999 is none"),
            "plan: line 10: endpoint B: address 'b:99999': port 99999 is none"
        );
        assert_eq!(
            at("schedule: slip 'soon': not a span"),
            "plan: line 4: schedule: slip 'soon': not a span"
        );
        // Prose after the step's number: the step's own line.
        assert!(at("step 1: say what it runs").starts_with("plan: line 1"));
        // Nothing it can place: as it was.
        assert_eq!(at("no [[step]]"), "plan: no [[step]]");
    }
}
