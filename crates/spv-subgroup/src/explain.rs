//! `spv-subgroup explain`: print what a rule means, from the rule table.

use anyhow::bail;
use clap::Args;
use spv_subgroup_validate::Rule;

use crate::io::print_stdout;
use crate::EXIT_OK;

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup explain SG0101
  spv-subgroup explain              list every rule

Exit status:
  0  the rule exists (or the list was printed)
  2  no rule has that code or name";

/// Explain a rule by its code (e.g. SG0101) or name; without one, list every rule.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct Opts {
    /// A rule code such as SG0101, or a rule's name.
    #[arg(value_name = "CODE|NAME")]
    rule: Option<String>,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        let Some(query) = self.rule else {
            let mut text = String::new();
            for rule in Rule::ALL {
                text.push_str(&format!(
                    "{}  {:<7}  {:<40}  {}\n",
                    rule.code(),
                    severity(*rule),
                    rule.name(),
                    rule.doc()
                ));
            }
            print_stdout(&text)?;
            return Ok(EXIT_OK);
        };
        let Some(rule) = find(&query) else {
            bail!(
                "no rule is called `{query}`{}; `spv-subgroup explain` lists them all",
                rule_hint(&query)
            );
        };
        let vuid = rule
            .vuid()
            .map(|v| format!("Vulkan: {v}\n\n"))
            .unwrap_or_default();
        let text = format!(
            "{} {} ({}, {})\n\n{}\n\n{vuid}{}\n",
            rule.code(),
            rule.name(),
            severity(rule),
            rule.kind(),
            wrap(rule.doc(), WIDTH),
            wrap(rule.explain().trim_end(), WIDTH)
        );
        print_stdout(&text)?;
        Ok(EXIT_OK)
    }
}

/// Column at which `explain` wraps its text.
const WIDTH: usize = 100;

/// Greedy word wrap; existing line breaks are kept.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width + 1);
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut col = 0;
        for word in line.split_whitespace() {
            if col > 0 && col + 1 + word.chars().count() > width {
                out.push('\n');
                col = 0;
            } else if col > 0 {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += word.chars().count();
        }
    }
    out
}

fn severity(rule: Rule) -> String {
    rule.severity().to_string()
}

/// ` (did you mean `X`?)` for a query no rule answers to: the nearest code or name.
pub fn rule_hint(query: &str) -> String {
    let names = Rule::ALL.iter().flat_map(|r| [r.code(), r.name()]);
    crate::suggest::hint(query.trim(), names)
}

/// Finds a rule by code (any case) or by name (any case, `-` and `_` alike).
pub fn find(query: &str) -> Option<Rule> {
    let q = query.trim();
    if let Some(r) = Rule::from_code(&q.to_uppercase()) {
        return Some(r);
    }
    let norm = |s: &str| s.to_lowercase().replace('_', "-");
    Rule::ALL
        .iter()
        .copied()
        .find(|r| norm(r.name()) == norm(q))
}
