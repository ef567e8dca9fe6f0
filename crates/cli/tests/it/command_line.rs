//! The command line described for other programs: shell completions and man pages, generated
//! from the same definition that parses the arguments.

use std::process::Command;

use crate::{code, path, wayline};

#[test]
fn completions_are_generated_for_every_shell_and_bash_reads_them() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = wayline(&["completions", shell]);
        assert_eq!(code(&output), 0, "{shell}");
        let script = String::from_utf8(output.stdout).unwrap();
        for word in ["wayline", "tools", "--format"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        if shell == "bash" {
            // bash parses the script (bash ships with every Linux image CI runs on).
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("wayline.bash");
            std::fs::write(&file, &script).unwrap();
            let parsed = Command::new("bash").arg("-n").arg(&file).output().unwrap();
            assert!(
                parsed.status.success(),
                "{}",
                String::from_utf8_lossy(&parsed.stderr)
            );
        }
    }
    let unknown = wayline(&["completions", "tcsh"]);
    assert_eq!(code(&unknown), 2);
}

#[test]
fn man_pages_are_written_for_every_command_and_groff_reads_them() {
    let page = wayline(&["man"]);
    assert_eq!(code(&page), 0);
    let page = String::from_utf8(page.stdout).unwrap();
    assert!(page.contains(".TH wayline 1"), "{page}");
    assert!(page.contains("Graphs of API calls"), "{page}");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let written = wayline(&["man", "--out", path(&out)]);
    assert_eq!(code(&written), 0);
    let pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "wayline.1",
        "wayline-run.1",
        "wayline-test.1",
        "wayline-tools-try.1",
        "wayline-guard-audit-verify.1",
    ] {
        assert!(pages.iter().any(|page| page == expected), "{pages:?}");
    }
    // groff formats each page without a warning (-k: the help texts are UTF-8).
    if Command::new("groff").arg("--version").output().is_err() {
        eprintln!("groff is not installed: the pages were written but not formatted");
        return;
    }
    for page in &pages {
        let formatted = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(out.join(page))
            .output()
            .unwrap();
        assert!(formatted.status.success(), "{page}");
        assert!(
            formatted.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&formatted.stderr)
        );
    }
}
