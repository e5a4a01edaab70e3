//! What this machine has of the outside programs some tests need, as cfgs: a test whose program
//! is missing carries `#[cfg_attr(no_redis, ignore = "needs redis-server: ...")]`, so `cargo test`
//! lists it as ignored with the reason, never as passed. Where the tests' peers were asked for
//! (`TOOL_MEDIATOR_REDIS=1` and the like, as CI sets them), nothing is ignored: a missing program
//! fails its tests with one line saying how to install it.
//!
//! Looked for again when `PATH`, one of those variables, `/usr/bin` or `/usr/sbin` changes (an
//! install); a program installed elsewhere on the `PATH` is seen after `touch tests/build.rs`.

use std::path::{Path, PathBuf};

/// Where a test looks for a program: on the `PATH` (and for some also in `/usr/bin` and
/// `/usr/sbin`, where Debian puts daemons, off a user's `PATH`), or at fixed paths.
enum Where {
    Path,
    PathOrSystem,
    At(&'static [&'static str]),
}

/// A cfg, the programs it stands for (all needed) with where their tests look for them, and the
/// variable that asks for them.
struct Need {
    cfg: &'static str,
    programs: &'static [(&'static str, Where)],
    asked_by: &'static str,
}

const NEEDS: &[Need] = &[
    Need { cfg: "no_redis", programs: &[("redis-server", Where::PathOrSystem)], asked_by: "TOOL_MEDIATOR_REDIS" },
    Need {
        cfg: "no_haproxy",
        programs: &[("haproxy", Where::At(&["/usr/sbin/haproxy", "/usr/bin/haproxy"]))],
        asked_by: "TOOL_MEDIATOR_REDIS",
    },
    Need { cfg: "no_openssl", programs: &[("openssl", Where::Path)], asked_by: "TOOL_MEDIATOR_REDIS" },
    Need {
        cfg: "no_keyring",
        programs: &[("gnome-keyring-daemon", Where::Path), ("dbus-daemon", Where::Path)],
        asked_by: "TOOL_MEDIATOR_KEYRING",
    },
    Need {
        cfg: "no_chromium",
        programs: &[("chromium", Where::At(&["/usr/bin/chromium"]))],
        asked_by: "TOOL_MEDIATOR_BROWSER",
    },
];

fn main() {
    for dir in ["/usr/bin", "/usr/sbin"] {
        if Path::new(dir).is_dir() {
            println!("cargo::rerun-if-changed={dir}");
        }
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    let asked = |variable: &str| {
        println!("cargo::rerun-if-env-changed={variable}");
        std::env::var(variable).is_ok_and(|value| value == "1")
    };
    for Need { cfg, programs, asked_by } in NEEDS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if !asked(asked_by) && !programs.iter().all(|(program, place)| found(program, place)) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    // The real model is asked for, never looked for: it is a gigabyte to install.
    println!("cargo::rustc-check-cfg=cfg(no_model)");
    if !asked("TOOL_MEDIATOR_MODEL") {
        println!("cargo::rustc-cfg=no_model");
    }
    println!("cargo::rustc-check-cfg=cfg(not_root)");
    if !is_root() {
        println!("cargo::rustc-cfg=not_root");
    }
}

/// Whether `program` is where its tests look for it.
fn found(program: &str, place: &Where) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path);
    match place {
        Where::Path => on_path.into_iter().any(|dir| dir.join(program).is_file()),
        Where::PathOrSystem => on_path
            .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
            .any(|dir| dir.join(program).is_file()),
        Where::At(paths) => paths.iter().any(|path| Path::new(path).is_file()),
    }
}

/// Whether the tests run as root, as far as the build can tell (the same user runs both).
fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}
