//! Six end-to-end scenarios of a code sandbox in use (interactive data analysis, script
//! development and debugging, project setup with dependencies, a quick serverless run, a long
//! job that extends its TTL, an agent's fix-and-retry loop), each run three times: against the
//! local provider directly, through `BayClient` over HTTP against the loopback server in front
//! of it, and against the local provider running its code inside bubblewrap (where it runs).
//!
//! Where a scenario needs what a test machine does not have, it keeps its point and says what it
//! replaced: scenario 1 reads its CSV with the standard `csv` module and writes its PNG with `zlib`
//! (pandas and matplotlib are not installed here); scenario 3 installs a wheel built in the test
//! (no network) instead of `requests` from PyPI; scenario 5 sleeps a fifth of a second instead of
//! five, and moves a manual clock past the expiry.

use chrono::Duration;
use wayline_sandbox::{CreateSandbox, ErrorCode, PythonExec, Sandbox, Status};

use crate::common::{Via, python_available, target};

both!(interactive_data_analysis);
both!(script_development_and_debugging);
both!(project_setup_and_dependencies);
both!(quick_serverless_run);
both!(long_job_extends_its_ttl);
both!(agent_fix_and_retry_loop);
in_bubblewrap!(
    interactive_data_analysis,
    interactive_data_analysis_in_bubblewrap
);
in_bubblewrap!(
    script_development_and_debugging,
    script_development_and_debugging_in_bubblewrap
);
in_bubblewrap!(
    project_setup_and_dependencies,
    project_setup_and_dependencies_in_bubblewrap
);
in_bubblewrap!(quick_serverless_run, quick_serverless_run_in_bubblewrap);
in_bubblewrap!(
    long_job_extends_its_ttl,
    long_job_extends_its_ttl_in_bubblewrap
);
in_bubblewrap!(
    agent_fix_and_retry_loop,
    agent_fix_and_retry_loop_in_bubblewrap
);

const SALES: &str = "region,revenue\nnorth,120.5\nsouth,80\neast,99.5\n";

/// A 2×1 PNG written with the standard library.
const WRITE_PNG: &str = r#"
import struct, zlib
def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
_raw = b"".join(b"\x00" + bytes([255, 0, 0, 0, 0, 255]) for _ in range(1))
with open("chart.png", "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(_raw)) + _chunk(b"IEND", b""))
"#;

async fn interactive_data_analysis(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let sandbox = Sandbox::create(target.provider.clone(), &CreateSandbox::default())
        .await
        .unwrap();
    let info = sandbox.info().await.unwrap();
    assert!(sandbox.id().starts_with("sandbox-"), "{}", sandbox.id());
    assert!(info.cargo_id.as_deref().unwrap().starts_with("ws-"));
    assert_eq!(info.status, Status::Idle);
    let uploaded = sandbox
        .upload("sales.csv", SALES.as_bytes().to_vec())
        .await
        .unwrap();
    assert_eq!(
        (uploaded.path.as_str(), uploaded.size),
        ("sales.csv", SALES.len() as u64)
    );
    // Round 1: load; the last expression shows as a REPL shows it.
    let first = sandbox
        .python("import csv\nrows = list(csv.DictReader(open('sales.csv')))\nrows[0]")
        .await
        .unwrap();
    assert!(first.success, "{first:?}");
    assert_eq!(first.output, "{'region': 'north', 'revenue': '120.5'}");
    // Round 2: `rows` is still there.
    let total = sandbox
        .python("sum(float(r['revenue']) for r in rows)")
        .await
        .unwrap();
    assert_eq!(total.output, "300.0");
    // Round 3: a chart file.
    let chart = sandbox.python(WRITE_PNG).await.unwrap();
    assert!(chart.success, "{chart:?}");
    let png = sandbox.download("chart.png").await.unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "binary download intact"
    );
    // Stop: the session ends, the files stay.
    sandbox.stop().await.unwrap();
    assert_eq!(sandbox.info().await.unwrap().status, Status::Idle);
    let lost = sandbox.python("rows[0]").await.unwrap();
    assert!(!lost.success);
    assert!(
        lost.error
            .as_deref()
            .unwrap()
            .contains("NameError: name 'rows' is not defined"),
        "{lost:?}"
    );
    let reloaded = sandbox
        .python("import csv\nrows = list(csv.DictReader(open('sales.csv')))\nlen(rows)")
        .await
        .unwrap();
    assert_eq!(reloaded.output, "3");
    assert_eq!(sandbox.download("chart.png").await.unwrap(), png);
    sandbox.delete().await.unwrap();
    let gone = sandbox.info().await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
}

async fn script_development_and_debugging(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let sandbox = Sandbox::create(target.provider.clone(), &CreateSandbox::default())
        .await
        .unwrap();
    // The first file operation starts the runtime.
    sandbox.write_file("script.py", "print(1/0)").await.unwrap();
    assert_eq!(sandbox.info().await.unwrap().status, Status::Ready);
    let failed = sandbox
        .python("exec(open('script.py').read())")
        .await
        .unwrap();
    assert!(!failed.success);
    assert_eq!(failed.output, "");
    let error = failed.error.unwrap();
    assert!(
        error.starts_with("Traceback (most recent call last):"),
        "{error}"
    );
    assert!(
        error.ends_with("ZeroDivisionError: division by zero"),
        "{error}"
    );
    sandbox
        .write_file("script.py", "print('Hello, World!')")
        .await
        .unwrap();
    let fixed = sandbox
        .python("exec(open('script.py').read())")
        .await
        .unwrap();
    assert!(fixed.success);
    // Bay strips the output: the script's `Hello, World!\n` arrives without its newline.
    assert_eq!(fixed.output, "Hello, World!");
    assert_eq!(
        sandbox.read_file("script.py").await.unwrap(),
        "print('Hello, World!')"
    );
    sandbox.delete().await.unwrap();
}

/// Builds `wayline_fixture_pkg-2.31.0-py3-none-any.whl` in `wheels/` of the workspace: a
/// real wheel, made with `zipfile`, so pip installs it without the network.
pub(crate) const BUILD_WHEEL: &str = r#"
import base64, hashlib, os, zipfile
files = {
    "wayline_fixture_pkg/__init__.py": "__version__ = '2.31.0'\n",
    "wayline_fixture_pkg-2.31.0.dist-info/METADATA":
        "Metadata-Version: 2.1\nName: wayline-fixture-pkg\nVersion: 2.31.0\n",
    "wayline_fixture_pkg-2.31.0.dist-info/WHEEL":
        "Wheel-Version: 1.0\nGenerator: wayline-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def _hash(text):
    digest = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
record = "".join("%s,%s,%d\n" % (name, _hash(text), len(text.encode())) for name, text in files.items())
record += "wayline_fixture_pkg-2.31.0.dist-info/RECORD,,\n"
os.makedirs("wheels", exist_ok=True)
with zipfile.ZipFile("wheels/wayline_fixture_pkg-2.31.0-py3-none-any.whl", "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
    wheel.writestr("wayline_fixture_pkg-2.31.0.dist-info/RECORD", record)
"#;

pub(crate) fn pip_available() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        eprintln!("skipped: pip not found for python3 (scenario 3 installs a package)");
    }
    found
}

async fn project_setup_and_dependencies(via: Via) {
    if !python_available() || !pip_available() {
        return;
    }
    let target = target(via).await;
    let sandbox = Sandbox::create(target.provider.clone(), &CreateSandbox::default())
        .await
        .unwrap();
    sandbox
        .write_file("requirements.txt", "wayline-fixture-pkg==2.31.0\n")
        .await
        .unwrap();
    sandbox
        .write_file(
            "src/main.py",
            "import wayline_fixture_pkg; print(wayline_fixture_pkg.__version__)",
        )
        .await
        .unwrap();
    let listed = target.provider.list_files(sandbox.id(), ".").await.unwrap();
    let names: Vec<_> = listed.iter().map(|entry| entry.name.as_str()).collect();
    assert_eq!(names, ["src", "requirements.txt"], "directories first");
    assert_eq!(listed[0].path, "/workspace/src");
    assert!(listed[0].is_dir && listed[0].size.is_none());
    let built = sandbox.python(BUILD_WHEEL).await.unwrap();
    assert!(built.success, "{built:?}");
    // The workspace is the session's cwd (and, under bubblewrap, `/workspace` as in Bay).
    let install = target
        .provider
        .python_exec(
            sandbox.id(),
            &PythonExec::new(
                "import subprocess, sys\n\
                 done = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-index', \
                 '--find-links', 'wheels', '-r', 'requirements.txt', '--target', '.libs', \
                 '--disable-pip-version-check'], check=True)\n\
                 done.returncode",
            )
            .timeout(120),
        )
        .await
        .unwrap();
    assert!(install.success, "{install:?}");
    assert!(install.output.ends_with('0'), "{}", install.output);
    let run = sandbox
        .python("import sys; sys.path.insert(0, '.libs'); exec(open('src/main.py').read())")
        .await
        .unwrap();
    assert_eq!(run.output, "2.31.0", "{run:?}");
    sandbox.stop().await.unwrap();
    let resumed = sandbox
        .python(
            "import sys; sys.path.insert(0, '.libs')\n\
             import wayline_fixture_pkg; print(wayline_fixture_pkg.__version__)",
        )
        .await
        .unwrap();
    assert_eq!(resumed.output, "2.31.0", "{resumed:?}");
    sandbox.delete().await.unwrap();
}

async fn quick_serverless_run(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let sandbox = Sandbox::create(target.provider.clone(), &CreateSandbox::default())
        .await
        .unwrap();
    // Lazy: nothing runs until the first call.
    let info = sandbox.info().await.unwrap();
    assert_eq!(info.status, Status::Idle);
    assert_eq!(info.containers, None);
    let result = sandbox.python("print(2 * 21)").await.unwrap();
    assert!(result.success);
    assert_eq!(result.output, "42");
    assert!(result.execution_id.starts_with("exec-"));
    let info = sandbox.info().await.unwrap();
    assert_eq!(info.status, Status::Ready);
    assert!(info.containers.is_some());
    sandbox.delete().await.unwrap();
    assert_eq!(sandbox.info().await.unwrap_err().code, ErrorCode::NotFound);
    // The workspace is gone too.
    assert_eq!(
        std::fs::read_dir(target.dir.path().join("cargos"))
            .unwrap()
            .count(),
        0
    );
}

async fn long_job_extends_its_ttl(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let sandbox = Sandbox::create(target.provider.clone(), &CreateSandbox::default().ttl(120))
        .await
        .unwrap();
    let created = sandbox.info().await.unwrap();
    let expires = created.expires_at.unwrap();
    assert_eq!(expires - created.created_at, Duration::seconds(120));
    let job = sandbox
        .python("import time; print('start'); time.sleep(0.2); print('done')")
        .await
        .unwrap();
    assert_eq!(job.output, "start\ndone");
    target.clock.advance(Duration::seconds(60));
    let extended = sandbox
        .extend_ttl(600, Some("ttl-extend-0001"))
        .await
        .unwrap();
    // max(old, now) + 600: the old expiry is later than now.
    assert_eq!(extended.expires_at, Some(expires + Duration::seconds(600)));
    // extend_ttl does not touch the session or the idle deadline.
    assert_eq!(
        extended.status,
        Status::Idle,
        "Bay's answer ignores the session"
    );
    target.clock.advance(Duration::seconds(5));
    let replayed = sandbox
        .extend_ttl(600, Some("ttl-extend-0001"))
        .await
        .unwrap();
    assert_eq!(replayed, extended, "a retry replays the same body");
    let later = sandbox.python("print('still here')").await.unwrap();
    assert_eq!(later.output, "still here");
    assert_eq!(sandbox.info().await.unwrap().status, Status::Ready);
    target.clock.advance(Duration::seconds(1_000));
    assert_eq!(sandbox.info().await.unwrap().status, Status::Expired);
    let refused = sandbox.extend_ttl(60, None).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::SandboxExpired);
    assert_eq!(refused.details["sandbox_id"], sandbox.id());
    sandbox.delete().await.unwrap();
}

const FIB_TYPO: &str = "def calculate_fibonacci(n):
    if n <= 1:
        return n
    return calculate_fibonacci(n-1) + calculate_fibonaci(n-2)  # typo: fibonaci

print(calculate_fibonacci(10))
";

const FIB_FIXED: &str = "def calculate_fibonacci(n):
    if n <= 1:
        return n
    return calculate_fibonacci(n-1) + calculate_fibonacci(n-2)

print(calculate_fibonacci(10))
";

const FIB_CACHED: &str = "from functools import lru_cache

@lru_cache(maxsize=None)
def calculate_fibonacci(n):
    if n <= 1:
        return n
    return calculate_fibonacci(n-1) + calculate_fibonacci(n-2)

for i in [10, 50, 100]:
    print(f\"fib({i}) = {calculate_fibonacci(i)}\")
";

async fn agent_fix_and_retry_loop(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let create = CreateSandbox::default()
        .ttl(300)
        .idempotency_key("agent-task-001-create");
    let sandbox = Sandbox::create(target.provider.clone(), &create)
        .await
        .unwrap();
    // A retried create gives the same sandbox, not a second one.
    let again = target.provider.create(&create).await.unwrap();
    assert_eq!(again.id, sandbox.id());
    assert_eq!(
        target
            .provider
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    sandbox.write_file("solution.py", FIB_TYPO).await.unwrap();
    let first = sandbox
        .python("exec(open('solution.py').read())")
        .await
        .unwrap();
    assert!(!first.success);
    let traceback = first.error.unwrap();
    assert!(
        traceback.contains("NameError: name 'calculate_fibonaci' is not defined"),
        "{traceback}"
    );
    assert!(
        traceback.contains("line 4"),
        "the traceback points at the line: {traceback}"
    );
    sandbox.write_file("solution.py", FIB_FIXED).await.unwrap();
    let second = sandbox
        .python("exec(open('solution.py').read())")
        .await
        .unwrap();
    assert_eq!((second.success, second.output.as_str()), (true, "55"));
    let before = sandbox.info().await.unwrap().expires_at.unwrap();
    let extended = sandbox
        .extend_ttl(600, Some("agent-task-001-extend-1"))
        .await
        .unwrap();
    assert_eq!(extended.expires_at, Some(before + Duration::seconds(600)));
    let retried = sandbox
        .extend_ttl(600, Some("agent-task-001-extend-1"))
        .await
        .unwrap();
    assert_eq!(retried, extended);
    sandbox.write_file("solution.py", FIB_CACHED).await.unwrap();
    let third = sandbox
        .python("exec(open('solution.py').read())")
        .await
        .unwrap();
    assert!(third.success, "{third:?}");
    assert!(third.output.contains("fib(10) = 55"));
    assert!(third.output.contains("fib(50) = 12586269025"));
    assert!(third.output.contains("fib(100) = 354224848179261915075"));
    let shared = sandbox
        .python("print(calculate_fibonacci(200))")
        .await
        .unwrap();
    assert_eq!(shared.output, "280571172992510140037611932413038677189525");
    assert_eq!(sandbox.read_file("solution.py").await.unwrap(), FIB_CACHED);
    // Every execution is in the history, newest first.
    let history = target
        .provider
        .history(sandbox.id(), &Default::default())
        .await
        .unwrap();
    assert_eq!(history.total, 4);
    assert_eq!(history.entries[0].code, "print(calculate_fibonacci(200))");
    assert!(!history.entries[3].success);
    sandbox.delete().await.unwrap();
}
