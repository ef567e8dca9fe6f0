//! `wayline completions SHELL` and `wayline man`: the command line described for shells and
//! for `man`, both generated from the same clap definition that parses it, so they cannot
//! drift from the flags the binary takes.

use std::path::Path;

use clap_complete::Shell;

use crate::report::{Outcome, unreadable, write_out};

/// Prints the completion script for `shell`.
pub(crate) fn completions_command(shell: Shell, mut command: clap::Command) -> Outcome {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "wayline", &mut script);
    write_out(format_args!("{}", String::from_utf8_lossy(&script)));
    Outcome::Ok
}

/// Prints `wayline.1`, or writes a page per command (and subcommand) into `out`.
pub(crate) fn man_command(out: Option<&Path>, command: clap::Command) -> Outcome {
    let Some(dir) = out else {
        let mut page = Vec::new();
        return match clap_mangen::Man::new(command).render(&mut page) {
            Ok(()) => {
                write_out(format_args!("{}", String::from_utf8_lossy(&page)));
                Outcome::Ok
            }
            Err(error) => unreadable(format!("cannot render the man page: {error}")),
        };
    };
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(command, dir))
        .map_err(|error| {
            unreadable(format!(
                "cannot write man pages into {}: {error}",
                dir.display()
            ))
        });
    match written {
        Ok(()) => {
            eprintln!("man pages written into {}", dir.display());
            Outcome::Ok
        }
        Err(outcome) => outcome,
    }
}
