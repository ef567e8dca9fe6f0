//! GitHub intel (the Python structure-ai-bot project's second example): five reads of one
//! repository in parallel, then a report posted to an echo service. With `--live`, set
//! `GITHUB_TOKEN` to avoid the low anonymous rate limit.
//!
//! ```sh
//! cargo run --example github_intel                                   # embedded demo API
//! cargo run --example github_intel -- --live --input=owner=tokio-rs --input=repo=tokio
//! ```
//!
//! What to put in your own `Cargo.toml` to use this file as it is (with `examples/support/`
//! beside it as `src/support/`: the demo API and the way the examples show a run):
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["graph", "registry", "executor", "http", "testing"] }
//! tokio = { version = "1", features = ["rt-multi-thread"] }
//! serde_json = "1"
//! indexmap = "2"
//! ```

mod support;

use std::process::ExitCode;

const TOOLS: &[&str] = &[
    "id: github_repo\nname: Repository\ndescription: A repository's metadata\n\
     base_url: https://api.github.com\npath: /repos/{owner}/{repo}\nauth_type: bearer\n",
    "id: github_contributors\nname: Contributors\ndescription: Top contributors\n\
     base_url: https://api.github.com\npath: /repos/{owner}/{repo}/contributors\nauth_type: bearer\n",
    "id: github_releases\nname: Releases\ndescription: Latest releases\n\
     base_url: https://api.github.com\npath: /repos/{owner}/{repo}/releases\nauth_type: bearer\n",
    "id: github_issues\nname: Issues\ndescription: Open issues\n\
     base_url: https://api.github.com\npath: /repos/{owner}/{repo}/issues\nauth_type: bearer\n",
    "id: github_commit_activity\nname: Commit activity\ndescription: Weekly commit counts\n\
     base_url: https://api.github.com\npath: /repos/{owner}/{repo}/stats/commit_activity\nauth_type: bearer\n\
     retry: {max_attempts: 4, initial_backoff_ms: 1000}\n",
    "id: httpbin_post\nname: Echo\ndescription: POST JSON and get it echoed back\n\
     base_url: https://httpbin.org\nmethod: POST\npath: /post\n",
];

const WORKFLOW: &str = r#"
id: github_intel
name: GitHub repository intel
inputs:
  owner: {default: rust-lang}
  repo: {default: rust}
steps:
  - {id: step_1, tool_id: github_repo, input_mapping: {owner: $input.owner, repo: $input.repo}}
  - {id: step_2, tool_id: github_contributors, input_mapping: {owner: $input.owner, repo: $input.repo, per_page: "5"}}
  - {id: step_3, tool_id: github_releases, input_mapping: {owner: $input.owner, repo: $input.repo, per_page: "3"}}
  - {id: step_4, tool_id: github_issues, input_mapping: {owner: $input.owner, repo: $input.repo, state: open, per_page: "5"}}
  - {id: step_5, tool_id: github_commit_activity, input_mapping: {owner: $input.owner, repo: $input.repo}, severity: non_critical}
  - id: step_6
    tool_id: httpbin_post
    input_mapping:
      repo_full_name: step_1.full_name
      stars: step_1.stargazers_count
      language: step_1.language
      top_contributor: step_2.items.0.login
      latest_release_tag: step_3.items.0.tag_name
      newest_issue_title: step_4.items.0.title
"#;

fn main() -> ExitCode {
    support::Example {
        tools: TOOLS,
        workflow: WORKFLOW,
        inputs: &[],
        demo_prefix: &[
            ("github_repo", "/github"),
            ("github_contributors", "/github"),
            ("github_releases", "/github"),
            ("github_issues", "/github"),
            ("github_commit_activity", "/github"),
            ("httpbin_post", "/httpbin"),
        ],
    }
    .main()
}
