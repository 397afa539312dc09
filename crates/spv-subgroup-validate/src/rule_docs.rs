//! `docs/rules.md`, generated from the rule table ([`markdown`]): every rule with its code,
//! severity, kind, spec sentence, VUID and `explain` text, and the JSON format of findings.

use crate::rule_table::Rule;

/// The rule reference, `docs/rules.md`, generated from the table.
pub fn markdown() -> String {
    let mut s = String::new();
    s.push_str("# Validator rules\n\n");
    s.push_str(
        "<!-- Generated from the rule table in crates/spv-subgroup-validate/src/rule_table.rs \
by `spv_subgroup_validate::rules::markdown()`; do not edit. Regenerate with `cargo xtask codegen` \
or `UPDATE_RULES_MD=1 cargo test -p spv-subgroup-validate`. -->\n\n",
    );
    s.push_str("`spv-subgroup explain CODE` prints the long text of a rule.\n\n");
    s.push_str(
        "Each rule's kind is the outcome of auditing it against the specification sentence it \
enforces (issue 13): only a rule whose sentence says \"must\" or \"must not\" about the module \
(kind `invalid`), or whose target's consumer rejects the construct (`unsupported by the target`, \
only with `--target`), is an error. Undefined behaviour at run time and advice are warnings \
(exit status 0). Every quote is verbatim (SPIR-V 1.6 revision 6, the extension specifications, the Vulkan \
specification); docs/spirv-val-corpus.md maps SPIRV-Tools' own test cases to these rules.\n\n",
    );
    s.push_str("| code | name | severity | kind | VUID | checks |\n|---|---|---|---|---|---|\n");
    for r in Rule::ALL {
        s.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            r.code(),
            r.name(),
            r.severity(),
            r.kind(),
            r.vuid().unwrap_or("-"),
            md_escape(r.doc())
        ));
    }
    let mut family = "";
    for r in Rule::ALL {
        if r.family() != family {
            family = r.family();
            s.push_str(&format!(
                "\n## {} ({}xx)\n",
                capitalize(family),
                &r.code()[..4]
            ));
        }
        s.push_str(&format!(
            "\n### {} `{}` ({}, {})\n\n{}\n\n",
            r.code(),
            r.name(),
            r.severity(),
            r.kind(),
            md_escape(r.doc()),
        ));
        if !r.spec().is_empty() {
            s.push_str(&format!("Spec: \"{}\"\n\n", md_escape(r.spec())));
        }
        if let Some(v) = r.vuid() {
            s.push_str(&format!("VUID: `{v}`\n\n"));
        }
        s.push_str(&format!("{}\n", md_escape(r.explain())));
    }
    s.push_str(JSON_SCHEMA_DOC);
    s
}

/// Escapes `<` outside code spans, so spec placeholders like `<ballot>` are not read as HTML.
fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_code = false;
    for c in s.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            _ => out.push(c),
        }
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

const JSON_SCHEMA_DOC: &str = "
## Human output

`spv-subgroup validate` (`render_human`) prints nothing for a module without findings. Otherwise, per
finding, rustc style: the severity, code and message; the position (`file:word N`, the instruction's
index, its result id and enclosing function); the instruction as spirv-dis prints it (friendly names for
types, constants and OpName'd ids); notes; and the `explain` hint. A last line counts errors and warnings:

```text
error[SG0102]: `SubgroupVoteKHR` is declared without `OpExtension \"SPV_KHR_subgroup_vote\"`
  --> shader.spv:word 7 (instruction #1)
   |
   |     OpCapability SubgroupVoteKHR
   |
   = note: ...
   = help: `spv-subgroup explain SG0102` (vote-missing-extension)

shader.spv: 1 error, 0 warnings
```

## JSON output

`spv-subgroup validate --format json` (`render_json`) writes, per file, an array with one object per
finding, ordered by position in the module, then by code. The keys are stable:

| key | type | meaning |
|---|---|---|
| `code` | string | rule code, e.g. `\"SG0101\"` |
| `name` | string | rule name, e.g. `\"vote-missing-capability\"` |
| `severity` | string | `\"error\"`, `\"warning\"` or `\"note\"` |
| `message` | string | one sentence about the instruction |
| `file` | string | the file name given to the renderer (`-` for stdin) |
| `word_offset` | integer | offset of the instruction's first word (the header is words 0-4) |
| `instruction_index` | integer | index of the instruction, from 0 after the header |
| `result_id` | integer or null | the instruction's result id |
| `function` | integer or null | result id of the enclosing OpFunction |
| `instruction` | string or null | the instruction disassembled, ids as `%N` |
| `notes` | array of strings | extra lines: spec text, how to fix |

A module that cannot be parsed at all (bad magic, truncated instruction...) is not a finding but a
`ParseError` with its word offset; the CLI reports it as an IO-level error (exit code 2).
";
