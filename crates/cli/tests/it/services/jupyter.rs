//! Jupyter Server 2.21.1 (PyPI `jupyter-server`): files and directories are all "contents" under
//! one path-named route (`/api/contents/{path}`), so a person's "file" is in its summaries and
//! enums, not its paths; a POST creates a file whose name the server chooses (`untitled`,
//! answered in `path` and `Location`); a PATCH renames by `{"path": ...}` and answers 200 for
//! any other body while changing nothing; a token in `Authorization`; its Swagger 2.0
//! description as it serves it (`/api/spec.yaml`). The server's state is its root directory.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use super::{Service, call, explore_with, free_port};

const TOKEN: &str = "wayline-test-token";

/// The `jupyter-server` command `.ci/run` installs with pip.
fn jupyter_server() -> Option<PathBuf> {
    wayline_testkit::installed_tool(
        "jupyter-server",
        "WAYLINE_JUPYTER_SERVER",
        "the Jupyter Server tests",
    )
}

struct Jupyter {
    /// Runs until the test ends.
    _service: Service,
    spec: PathBuf,
    sut: PathBuf,
    root: PathBuf,
}

impl Jupyter {
    fn start(executable: &PathBuf) -> Jupyter {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        for sub in ["root", "runtime", "data", "config"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let port = free_port();
        let mut command = Command::new(executable);
        command
            .env("JUPYTER_RUNTIME_DIR", dir.path().join("runtime"))
            .env("JUPYTER_DATA_DIR", dir.path().join("data"))
            .env("JUPYTER_CONFIG_DIR", dir.path().join("config"))
            .args(["--no-browser", "--ServerApp.ip=127.0.0.1"])
            .arg(format!("--ServerApp.port={port}"))
            .arg("--ServerApp.port_retries=0")
            .arg(format!("--IdentityProvider.token={TOKEN}"))
            .arg(format!("--ServerApp.root_dir={}", root.display()))
            .arg("--ServerApp.allow_root=True");
        let service = Service::start(command, port, dir, "jupyter-server");
        let auth = format!("token {TOKEN}");
        let (status, spec) = call(
            "GET",
            &format!("{}/api/spec.yaml", service.origin),
            &[("Authorization", &auth)],
            None,
        );
        assert_eq!(status, 200, "{spec}");
        let spec_path = service.file("spec.yaml");
        std::fs::write(&spec_path, spec.as_str().unwrap()).unwrap();
        // The folder a new file is made in is the POST's `{path}`, and the file it reads is
        // the GET's: the same name, two meanings, so the POST's is given for it alone.
        let sut = service.file("sut.yaml");
        std::fs::write(
            &sut,
            format!(
                "name: jupyter\nconnection:\n  host: '{}'\n  auth: {{type: api_key, header: \
                 Authorization, env_vars: {{key: JUPYTER_AUTH}}}}\n\
                 preset_variables:\n  post_api_contents_path.path: ''\nexecution:\n  mode: auto\n",
                service.origin
            ),
        )
        .unwrap();
        Jupyter {
            _service: service,
            spec: spec_path,
            sut,
            root,
        }
    }

    /// The names in the server's root directory.
    fn files(&self) -> BTreeSet<String> {
        std::fs::read_dir(&self.root)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect()
    }

    fn explore(&self, dir: &std::path::Path, target: &str) -> super::Explored {
        let auth = format!("token {TOKEN}");
        explore_with(
            dir,
            &self.sut,
            &self.spec,
            target,
            &[],
            &[("JUPYTER_AUTH", &auth)],
        )
    }
}

#[test]
fn explore_reaches_targets_in_a_users_words_on_jupyter_server() {
    let Some(executable) = jupyter_server() else {
        return;
    };
    let jupyter = Jupyter::start(&executable);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(jupyter.root.join("keep.txt"), "made before").unwrap();
    // The path-named route has no collection-wide write.
    assert!(super::collection_wide_writes(&jupyter.spec).is_empty());

    // "file" is no path of this API: its summaries and the `type` enum say it.
    let mut questions = Vec::new();
    for _ in 0..2 {
        let before = jupyter.files();
        let run = jupyter.explore(dir.path(), "create a file, then read it");
        assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.session);
        let after = jupyter.files();
        let new: Vec<&String> = after.difference(&before).collect();
        assert_eq!(new.len(), 1, "{new:?}");
        assert!(jupyter.root.join(new[0]).is_file(), "a file, not a folder");
        questions.push(run.questions());
    }
    assert!(
        questions[1] <= questions[0] && (questions[0] == 0 || questions[1] < questions[0]),
        "{questions:?}"
    );

    // Deleted, and a read then finds it gone.
    let before = jupyter.files();
    let run = jupyter.explore(dir.path(), "create a file, delete it, then it is gone");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.session);
    assert_eq!(jupyter.files(), before);
    let steps = run.session["confirmed_steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["response"]["status_code"], 404);

    // Renamed: the server named it, the target names it anew, and a read shows the name.
    let before = jupyter.files();
    let run = jupyter.explore(dir.path(), "create a file, then rename it to renamed.txt");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.session);
    let mut expected = before.clone();
    expected.insert("renamed.txt".to_owned());
    assert_eq!(jupyter.files(), expected);

    // A word the API does not know: the question offers the words it does.
    let run = jupyter.explore(dir.path(), "make a spaceship");
    assert_ne!(run.code, 0);
    let asked = run.session["transcript"][0]["question"]
        .as_str()
        .unwrap_or_default();
    assert!(asked.contains("file, directory"), "{asked}");

    assert_eq!(
        std::fs::read_to_string(jupyter.root.join("keep.txt")).unwrap(),
        "made before"
    );
}
