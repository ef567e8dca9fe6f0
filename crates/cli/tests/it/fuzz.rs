//! Whole commands over generated files (issue 31): the `wayline` binary run, as a user runs it,
//! on documents made from the repository's own examples and mutated — non-ASCII characters at
//! any place (a byte limit may fall inside one), huge values, deep nesting, aliases, cut text,
//! flipped bytes —, each run bounded in memory and time. A command may refuse what it is given
//! (exit 1 or 2) but never panic, crash or hang, and never echo the environment.
//!
//! `WAYLINE_FUZZ_CASES` cases per command (8 by default, what CI runs); `WAYLINE_FUZZ_SEED`
//! replays a run whose seed a failure printed:
//!
//! ```sh
//! WAYLINE_FUZZ_CASES=500 cargo test -p wayline-cli --test it fuzz -- --nocapture
//! ```

use std::path::Path;

use wayline_testkit::testdata;

use crate::hardening::{CANARY, UNREACHABLE_API, bounded};

fn cases() -> usize {
    std::env::var("WAYLINE_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(8)
}

fn seed() -> u64 {
    std::env::var("WAYLINE_FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

/// Characters that take 2, 3 and 4 bytes, one that is invisible, and one that ends a line.
const WIDE: [&str; 6] = ["é", "€", "😀", "\u{200b}", "\u{2028}", "ü"];

/// `text` changed by one to three mutations.
fn mutate(rng: &mut fastrand::Rng, text: &str) -> Vec<u8> {
    let mut text = text.to_owned();
    for _ in 0..rng.usize(1..=3) {
        let at = {
            let at = rng.usize(0..=text.len());
            (0..=at)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0)
        };
        match rng.u8(0..9) {
            // Wide characters somewhere.
            0 | 1 => {
                let run: String = (0..rng.usize(1..50))
                    .map(|_| WIDE[rng.usize(..WIDE.len())])
                    .collect();
                text.insert_str(at, &run);
            }
            // A huge value after some key.
            2 => {
                if let Some(colon) = text[at..].find(": ") {
                    let huge: String = (0..rng.usize(2_000..6_000))
                        .map(|_| WIDE[rng.usize(..WIDE.len())])
                        .collect();
                    text.insert_str(at + colon + 2, &format!("\"{huge}\" # "));
                }
            }
            // An expression over the length limit whose limit byte falls inside a character.
            3 => {
                let pad = "a".repeat(rng.usize(0..3));
                text.push_str(&format!("\nwhen: \"{pad}{}\"\n", "é€".repeat(1_000)));
            }
            // Deep nesting.
            4 => text.push_str(&format!("\ndeep: {}\n", "[".repeat(rng.usize(100..5_000)))),
            // Aliases.
            5 => text.push_str(&format!(
                "\nanchor: &a {}\nrefs: [{}]\n",
                "x".repeat(rng.usize(1..100_000)),
                vec!["*a"; rng.usize(1..2_000)].join(", ")
            )),
            // Cut short.
            6 => text.truncate(at),
            // A quote inside a block scalar, then brackets.
            7 => text.push_str(&format!(
                "\nnote: |\n  it \"says\n{}\n",
                "{a: ".repeat(rng.usize(10..3_000))
            )),
            // A byte flipped (the text may stop being UTF-8).
            _ => {
                let mut bytes = text.into_bytes();
                if !bytes.is_empty() {
                    let at = rng.usize(..bytes.len());
                    bytes[at] ^= 1 << rng.u8(0..8);
                }
                return bytes;
            }
        }
    }
    text.into_bytes()
}

/// Runs `args` in `dir` and fails on anything but an answer: a panic, a signal, a hang, memory
/// past its bound, or the environment in the output.
fn answers(dir: &Path, args: &[&str], what: &str, seed: u64) {
    let output = bounded(dir, args, 768, 60);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let code = output.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "`wayline {}` on {what} (WAYLINE_FUZZ_SEED={seed}) ended with {:?}: {stderr}",
        args.join(" "),
        output.status
    );
    assert!(
        !stderr.contains("panicked") && !stdout.contains(CANARY) && !stderr.contains(CANARY),
        "`wayline {}` on {what} (WAYLINE_FUZZ_SEED={seed}): {stderr}",
        args.join(" ")
    );
}

const ARAZZO: &str = "arazzo: 1.1.0
info: {title: Pets, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: adopt
    inputs: {type: object, properties: {status: {type: string, default: available}}}
    steps:
      - stepId: find
        operationId: listItems
        parameters: [{name: status, in: query, value: $inputs.status}]
        successCriteria: [{condition: $statusCode == 200}]
        outputs: {first: $response.body#/0/id}
";

#[test]
fn commands_answer_whatever_the_files_hold() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    eprintln!(
        "fuzz: WAYLINE_FUZZ_SEED={seed}, {} cases a command",
        cases()
    );
    let workflow = std::fs::read_to_string(testdata("workflows/briefing.yaml")).unwrap();
    let tool = std::fs::read_to_string(testdata("tools/country.yaml")).unwrap();
    let spec = std::fs::read_to_string(testdata("openapi/tidbx-operations.json")).unwrap();
    let tools = testdata("tools");
    let tools = tools.to_str().unwrap();
    for case in 0..cases() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path();
        std::fs::write(at.join("w.yaml"), mutate(&mut rng, &workflow)).unwrap();
        for args in [
            vec!["validate", "w.yaml", "--tools", tools],
            vec!["validate", "w.yaml", "--tools", tools, "--format", "json"],
            vec!["graph", "w.yaml", "--tools", tools, "--format", "mermaid"],
            vec!["run", "w.yaml", "--tools", tools, "--dry-run"],
        ] {
            answers(at, &args, &format!("a workflow (case {case})"), seed);
        }
        std::fs::create_dir(at.join("tools")).unwrap();
        std::fs::write(at.join("tools/t.yaml"), mutate(&mut rng, &tool)).unwrap();
        answers(
            at,
            &["tools", "check", "tools"],
            &format!("a tool (case {case})"),
            seed,
        );
        std::fs::write(at.join("api.yaml"), UNREACHABLE_API).unwrap();
        std::fs::write(at.join("a.arazzo.yaml"), mutate(&mut rng, ARAZZO)).unwrap();
        for args in [
            vec!["validate", "a.arazzo.yaml"],
            vec!["validate", "a.arazzo.yaml", "--format", "json"],
        ] {
            answers(
                at,
                &args,
                &format!("an Arazzo document (case {case})"),
                seed,
            );
        }
        std::fs::write(at.join("api.yaml"), mutate(&mut rng, UNREACHABLE_API)).unwrap();
        std::fs::write(at.join("a.arazzo.yaml"), ARAZZO).unwrap();
        answers(
            at,
            &["validate", "a.arazzo.yaml"],
            &format!("a source (case {case})"),
            seed,
        );
        std::fs::write(at.join("spec.json"), mutate(&mut rng, &spec)).unwrap();
        answers(
            at,
            &[
                "import",
                "openapi",
                "spec.json",
                "--out",
                "out",
                "--format",
                "json",
            ],
            &format!("a spec (case {case})"),
            seed,
        );
    }
}

/// Inputs that broke a command once, kept.
#[test]
fn regressions() {
    let dir = tempfile::tempdir().unwrap();
    let tools = testdata("tools");
    // Issue 31, item 21: byte 4,096 of an expression inside a character panicked `validate`.
    for pad in 0..3 {
        let workflow = std::fs::read_to_string(testdata("workflows/briefing.yaml"))
            .unwrap()
            .replace(
                "when: \"steps.weather.temperature > -50.0\"",
                &format!("when: \"{}'{}'\"", "a".repeat(pad), "é€".repeat(2_000)),
            );
        std::fs::write(dir.path().join("w.yaml"), workflow).unwrap();
        let output = bounded(
            dir.path(),
            &["validate", "w.yaml", "--tools", tools.to_str().unwrap()],
            512,
            30,
        );
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(said.contains("bytes long"), "{said}");
    }
}
