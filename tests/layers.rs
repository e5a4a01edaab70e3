//! The layers of the workspace, and the rooms inside each crate, checked.
//!
//! The workspace is built in layers, each crate using only the ones below it (the table
//! [`LAYERS`] right below says which, and where each one lives):
//!
//! - `tool-mediator-core`: the tool model, exact JSON, schemas, names, the transformer trait,
//!   selection. It depends on no other workspace crate and on no runtime, I/O or network crate,
//!   not even through a dependency, so whatever takes the model does not take a runtime with it.
//! - `tool-mediator`: the mediator itself, on the core.
//! - `tool-mediator-mcp`: the MCP side, on the core and the mediator.
//! - `tool-mediator-cli`: the command line, on all three.
//! - `tool-mediator-node`: the Node.js binding, on the core and the mediator but never on the MCP
//!   crate, not even through a dependency: its transports (the TypeScript SDK's servers, the
//!   WebMCP bridges) speak MCP themselves.
//! - `tool-mediator-tests`: these end-to-end tests, on anything.
//!
//! Inside each library crate (and the CLI's binary), the top-level modules are *rooms*: a file
//! `src/x.rs` or a folder `src/x/`. Rooms may use each other, but never in a circle, so each
//! one can be read, moved or split off with only what it names. The same holds inside a folder
//! room, at every depth: the modules its `mod.rs` declares are its rooms. The crate root (`lib.rs`) only
//! declares the rooms and re-exports what they offer, and no code inside the crate reaches a
//! name through those re-exports: every `crate::x` starts with a room.
//!
//! The dependency rules read `cargo metadata` (which reads only the manifests and the lock
//! file); the room rules read the sources, with comments and string literals blanked out.
//! Nothing is compiled.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const CORE: &str = "tool-mediator-core";
const MEDIATOR: &str = "tool-mediator";
const MCP: &str = "tool-mediator-mcp";
const CLI: &str = "tool-mediator-cli";
const NODE: &str = "tool-mediator-node";
const TESTS: &str = "tool-mediator-tests";

/// The layers: each workspace package, the folder it lives in, the workspace packages it may
/// depend on (normal and build dependencies; dev-dependencies are free), the crates it must never
/// reach even through other crates, and whether its rooms are checked.
#[rustfmt::skip]
const LAYERS: &[Layer] = &[
    Layer { package: CORE,     dir: "mediator-core", may_use: Only(&[]),                    never_reaches: RUNTIME_CRATES, rooms: true  },
    Layer { package: MEDIATOR, dir: "mediator",      may_use: Only(&[CORE]),                never_reaches: &[],            rooms: true  },
    Layer { package: MCP,      dir: "mediator-mcp",  may_use: Only(&[CORE, MEDIATOR]),      never_reaches: &[],            rooms: true  },
    Layer { package: CLI,      dir: "mediator-cli",  may_use: Only(&[CORE, MEDIATOR, MCP]), never_reaches: &[],            rooms: true  },
    Layer { package: NODE,     dir: "mediator-node", may_use: Only(&[CORE, MEDIATOR]),      never_reaches: &[MCP],         rooms: false },
    Layer { package: TESTS,    dir: "tests",         may_use: Anything,                     never_reaches: &[],            rooms: false },
];

/// Runtime, I/O, network and front-end crates the core never reaches, not even through another.
#[rustfmt::skip]
const RUNTIME_CRATES: &[&str] = &[
    "tokio", "mio", "async-std", "smol", "reqwest", "hyper", "hyper-util", "h2", "axum", "tower", "rustls", "sled",
    "napi", "clap",
];

struct Layer {
    package: &'static str,
    /// The package's folder, from the workspace root.
    dir: &'static str,
    may_use: MayUse,
    /// Packages that must not appear among its normal or build dependencies, however deep.
    never_reaches: &'static [&'static str],
    /// Whether its top-level modules are checked as rooms (see the top of this file).
    rooms: bool,
}

enum MayUse {
    Only(&'static [&'static str]),
    Anything,
}
use MayUse::{Anything, Only};

impl MayUse {
    fn allows(&self, package: &str) -> bool {
        match self {
            Only(packages) => packages.contains(&package),
            Anything => true,
        }
    }
}

#[test]
fn packages_depend_only_on_the_layers_below() {
    let workspace = workspace();
    let mut failures = Vec::new();
    for layer in LAYERS {
        let Some(member) = workspace.members.get(layer.package) else {
            failures.push(format!("{}: no such package in the workspace (expected in {}/)", layer.package, layer.dir));
            continue;
        };
        let expected_dir = workspace.root.join(layer.dir);
        if member.dir != expected_dir {
            failures.push(format!(
                "{}: lives in {}, expected in {}/",
                layer.package,
                relative(&workspace.root, &member.dir),
                layer.dir
            ));
        }
        for dependency in &member.workspace_dependencies {
            if !layer.may_use.allows(dependency) {
                failures.push(format!("{} -> {dependency}: not a layer below it", layer.package));
            }
        }
        for path in paths_to_forbidden(workspace, &member.id, layer.never_reaches) {
            failures.push(format!("{}: must never reach {}", path.join(" -> "), path.last().unwrap()));
        }
    }
    for name in workspace.members.keys() {
        if !LAYERS.iter().any(|layer| layer.package == name) {
            failures.push(format!("{name}: a workspace package with no line in LAYERS"));
        }
    }
    report("the layers of the workspace are broken", &failures);
}

#[test]
fn rooms_use_each_other_in_no_circle() {
    let mut failures = Vec::new();
    for krate in checked_crates() {
        // The crate's rooms, and the rooms inside each folder room, at every depth.
        let inner = inner_rooms(&krate);
        for rooms in std::iter::once(&krate.rooms).chain(inner.iter().map(|inner| &inner.rooms)) {
            let graph = room_graph(rooms);
            for component in strongly_connected_components(&graph) {
                if component.len() > 1 {
                    failures.push(describe_circle(&rooms.name, &graph, &component));
                }
            }
        }
    }
    report("rooms use each other in a circle", &failures);
}

#[test]
fn a_circle_inside_a_folder_room_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("front/wire")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod front;\n").unwrap();
    std::fs::write(src.join("front/mod.rs"), "mod error;\nmod location;\nmod wire;\n").unwrap();
    std::fs::write(src.join("front/error.rs"), "use super::location::Client;\n").unwrap();
    std::fs::write(src.join("front/location.rs"), "use crate::front::error::Error;\n").unwrap();
    // From `front/wire/line.rs`, `super::super` is `front`: a use of its room `error`, and no
    // circle (from `front/wire/mod.rs` it is the crate root, and names no room of `front`).
    std::fs::write(src.join("front/wire/mod.rs"), "mod line;\nuse super::super::front;\n").unwrap();
    std::fs::write(src.join("front/wire/line.rs"), "use super::super::error::Error;\n").unwrap();
    let krate = read_crate("example", &CrateRoot { file: src.join("lib.rs"), is_library: true });
    let inner = inner_rooms(&krate);
    let front = inner.iter().find(|inner| inner.rooms.name == "example::front").expect("front is checked");
    let graph = room_graph(&front.rooms);
    let circles: Vec<Vec<&str>> =
        strongly_connected_components(&graph).into_iter().filter(|component| component.len() > 1).collect();
    assert_eq!(circles, [vec!["error", "location"]]);
    assert!(graph["wire"].contains_key("error"), "a use from a room's own folder is its room's");
    let text = describe_circle(&front.rooms.name, &graph, &circles[0]);
    assert!(text.contains("example::front: rooms in a circle: error -> location -> error"), "{text}");
}

#[test]
fn code_names_rooms_not_what_the_crate_root_reexports() {
    let mut failures = Vec::new();
    for krate in checked_crates() {
        let mut through_root: BTreeMap<&str, Vec<&Reference>> = BTreeMap::new();
        for reference in &krate.rooms.references {
            if !krate.rooms.rooms.contains(&reference.name) {
                through_root.entry(&reference.name).or_default().push(reference);
            }
        }
        for (name, references) in through_root {
            let mut failure = format!(
                "{}: `crate::{name}` is not a room declared in {}: it reaches through the crate root ({} use{})",
                krate.package,
                relative(&workspace().root, &krate.root_file),
                references.len(),
                if references.len() == 1 { "" } else { "s" }
            );
            for reference in references {
                failure.push_str(&format!("\n    {}", reference.location()));
            }
            failures.push(failure);
        }
    }
    report("code reaches names through the crate root instead of their room", &failures);
}

#[test]
fn library_roots_only_declare_rooms_and_reexports() {
    let mut failures = Vec::new();
    for krate in checked_crates() {
        if !krate.root_is_library {
            continue;
        }
        for (item, line) in &krate.root_items {
            failures.push(format!(
                "{}:{line}: `{item}`: a crate root only declares modules and re-exports",
                relative(&workspace().root, &krate.root_file)
            ));
        }
    }
    report("crate roots hold code", &failures);
}

/// Fails with every finding, one a paragraph, or passes if there is none.
fn report(what: &str, failures: &[String]) {
    assert!(failures.is_empty(), "{what}:\n\n{}\n", failures.join("\n\n"));
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The workspace, from `cargo metadata`.

struct Workspace {
    root: PathBuf,
    /// Workspace members by package name.
    members: BTreeMap<String, Member>,
    /// Every package of the resolved graph: its name by its id.
    names: HashMap<String, String>,
    /// Normal and build dependencies (all targets, all features) by package id.
    dependencies: HashMap<String, Vec<String>>,
}

struct Member {
    id: String,
    dir: PathBuf,
    /// The workspace packages it names as normal or build dependencies (optional ones too).
    workspace_dependencies: BTreeSet<String>,
    /// Its library's root file, or if it has none, its binary's.
    root: Option<CrateRoot>,
}

struct CrateRoot {
    file: PathBuf,
    is_library: bool,
}

fn workspace() -> &'static Workspace {
    static WORKSPACE: OnceLock<Workspace> = OnceLock::new();
    WORKSPACE.get_or_init(|| read_workspace(&cargo_metadata()))
}

/// `cargo metadata` of the workspace, all features on, so that optional dependencies count too.
fn cargo_metadata() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--all-features"])
        .current_dir(root)
        .output()
        .unwrap_or_else(|error| panic!("running {} metadata: {error}", cargo.to_string_lossy()));
    assert!(output.status.success(), "cargo metadata failed:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

fn read_workspace(metadata: &Value) -> Workspace {
    let text = |value: &Value| value.as_str().expect("a string in cargo metadata").to_owned();
    let list = |value: &Value| value.as_array().cloned().unwrap_or_default();
    let member_ids: BTreeSet<String> = list(&metadata["workspace_members"]).iter().map(text).collect();
    let packages = list(&metadata["packages"]);
    let member_names: BTreeSet<String> = packages
        .iter()
        .filter(|package| member_ids.contains(&text(&package["id"])))
        .map(|package| text(&package["name"]))
        .collect();

    let mut members = BTreeMap::new();
    for package in packages.iter().filter(|package| member_ids.contains(&text(&package["id"]))) {
        let workspace_dependencies = list(&package["dependencies"])
            .iter()
            .filter(|dependency| is_normal_or_build(&dependency["kind"]))
            .filter(|dependency| dependency["source"].is_null())
            .map(|dependency| text(&dependency["name"]))
            .filter(|name| member_names.contains(name))
            .collect();
        let manifest = PathBuf::from(text(&package["manifest_path"]));
        let member = Member {
            id: text(&package["id"]),
            dir: manifest.parent().expect("a manifest sits in a folder").to_owned(),
            workspace_dependencies,
            root: crate_root(&list(&package["targets"])),
        };
        members.insert(text(&package["name"]), member);
    }

    let names = packages.iter().map(|package| (text(&package["id"]), text(&package["name"]))).collect();
    let mut dependencies = HashMap::new();
    for node in list(&metadata["resolve"]["nodes"]) {
        let used = list(&node["deps"])
            .iter()
            .filter(|dependency| list(&dependency["dep_kinds"]).iter().any(|kind| is_normal_or_build(&kind["kind"])))
            .map(|dependency| text(&dependency["pkg"]))
            .collect();
        dependencies.insert(text(&node["id"]), used);
    }

    Workspace { root: PathBuf::from(text(&metadata["workspace_root"])), members, names, dependencies }
}

/// A dependency kind of `cargo metadata`: `null` for normal, then `"build"` or `"dev"`.
fn is_normal_or_build(kind: &Value) -> bool {
    kind.is_null() || kind == "build"
}

/// The root file of a package's library target, or of its binary if it has no library.
fn crate_root(targets: &[Value]) -> Option<CrateRoot> {
    const LIBRARY_KINDS: &[&str] = &["lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"];
    let has_kind = |target: &Value, kinds: &[&str]| {
        target["kind"].as_array().is_some_and(|list| list.iter().any(|kind| kinds.iter().any(|k| kind == k)))
    };
    let root =
        |target: &Value, is_library| Some(CrateRoot { file: PathBuf::from(target["src_path"].as_str()?), is_library });
    match targets.iter().find(|target| has_kind(target, LIBRARY_KINDS)) {
        Some(library) => root(library, true),
        None => targets.iter().find(|target| has_kind(target, &["bin"])).and_then(|binary| root(binary, false)),
    }
}

/// For each crate of `forbidden` that `start` reaches through normal and build dependencies, the
/// shortest such path, by package names. A forbidden crate ends its path: what it brings in is
/// its own story, and cutting it is the fix.
fn paths_to_forbidden(workspace: &Workspace, start: &str, forbidden: &[&str]) -> Vec<Vec<String>> {
    let name = |id: &str| workspace.names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let mut came_from: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut found = Vec::new();
    while let Some(id) = queue.pop_front() {
        if id != start && forbidden.contains(&name(id).as_str()) {
            let mut path = vec![name(id)];
            let mut at = id;
            while let Some(&previous) = came_from.get(at) {
                path.push(name(previous));
                at = previous;
            }
            path.reverse();
            found.push(path);
            continue;
        }
        for next in workspace.dependencies.get(id).into_iter().flatten() {
            if next != start && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, id);
                queue.push_back(next);
            }
        }
    }
    found.sort();
    found
}

// ---------------------------------------------------------------------------------------------
// The rooms of a crate, from its sources.

/// A crate whose rooms are checked, as its sources say.
struct RoomedCrate {
    package: &'static str,
    root_file: PathBuf,
    root_is_library: bool,
    /// What its root holds besides module declarations, `use`s and attributes, with the line.
    root_items: Vec<(String, usize)>,
    rooms: Rooms,
}

/// The rooms of one module (the crate root, or a folder room's `mod.rs`) and what their files
/// name at its level.
struct Rooms {
    /// `package` for the crate's own rooms, `package::room::inner` for those inside a room.
    name: String,
    /// The modules it declares: its rooms.
    rooms: BTreeSet<String>,
    /// Every `crate::<path>::<name>` (or `super::` up to the module) in the rooms' files.
    references: Vec<Reference>,
}

/// The rooms inside a folder room (named by its module path, in [`Rooms::name`]).
struct InnerRooms {
    rooms: Rooms,
}

/// One `crate::<name>` in a room's file.
struct Reference {
    room: String,
    name: String,
    file: PathBuf,
    line: usize,
    /// The source line it is on, trimmed.
    text: String,
}

impl Reference {
    fn location(&self) -> String {
        format!("{}:{}: {}", relative(&workspace().root, &self.file), self.line, self.text)
    }
}

/// The crates of [`LAYERS`] whose rooms are checked and that are in the workspace (a missing one
/// is the dependency test's finding).
fn checked_crates() -> Vec<RoomedCrate> {
    let workspace = workspace();
    let mut crates = Vec::new();
    for layer in LAYERS.iter().filter(|layer| layer.rooms) {
        let Some(member) = workspace.members.get(layer.package) else { continue };
        let root = member.root.as_ref().unwrap_or_else(|| panic!("{}: no library or binary target", layer.package));
        crates.push(read_crate(layer.package, root));
    }
    crates
}

fn read_crate(package: &'static str, root: &CrateRoot) -> RoomedCrate {
    let source = read(&root.file);
    let (rooms, root_items) = read_crate_root(&tokens(&strip_comments_and_strings(&source)));
    let source_dir = root.file.parent().expect("a crate root sits in a folder");
    RoomedCrate {
        package,
        root_file: root.file.clone(),
        root_is_library: root.is_library,
        root_items,
        rooms: read_rooms(package.to_owned(), source_dir, &[], rooms),
    }
}

/// What the files of `rooms`, the modules declared at `path` (empty for the crate root), name
/// at that level.
fn read_rooms(name: String, source_dir: &Path, path: &[String], rooms: BTreeSet<String>) -> Rooms {
    let mut references = Vec::new();
    let folder = path.iter().fold(source_dir.to_owned(), |folder, module| folder.join(module));
    for room in &rooms {
        for file in room_files(&folder, room) {
            let source = read(&file);
            let lines: Vec<&str> = source.lines().collect();
            let depth = module_depth(file.strip_prefix(source_dir).expect("a room's file is under the source folder"));
            for (name, line) in level_names(&tokens(&strip_comments_and_strings(&source)), depth, path) {
                let text = lines.get(line - 1).map_or("", |text| text.trim());
                references.push(Reference {
                    room: room.clone(),
                    name,
                    file: file.clone(),
                    line,
                    text: shorten(text, 110),
                });
            }
        }
    }
    Rooms { name, rooms, references }
}

/// The rooms inside each folder room of `krate`, at every depth: the modules a folder module's
/// `mod.rs` (or `x.rs` beside `x/`) declares.
fn inner_rooms(krate: &RoomedCrate) -> Vec<InnerRooms> {
    let source_dir = krate.root_file.parent().expect("a crate root sits in a folder");
    let mut found = Vec::new();
    let mut modules: Vec<Vec<String>> = krate.rooms.rooms.iter().map(|room| vec![room.clone()]).collect();
    while let Some(path) = modules.pop() {
        let folder = path.iter().fold(source_dir.to_owned(), |folder, module| folder.join(module));
        let declaring = [folder.join("mod.rs"), folder.with_extension("rs")];
        let Some(file) = declaring.iter().find(|file| file.is_file() && folder.is_dir()) else { continue };
        let (rooms, _) = read_crate_root(&tokens(&strip_comments_and_strings(&read(file))));
        if rooms.is_empty() {
            continue;
        }
        modules.extend(rooms.iter().map(|room| [path.clone(), vec![room.clone()]].concat()));
        let name = format!("{}::{}", krate.package, path.join("::"));
        found.push(InnerRooms { rooms: read_rooms(name, source_dir, &path, rooms) });
    }
    found.sort_by(|a, b| a.rooms.name.cmp(&b.rooms.name));
    found
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|error| panic!("reading {}: {error}", file.display()))
}

fn shorten(text: &str, at_most: usize) -> String {
    match text.char_indices().nth(at_most) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The files of the room `room`: `<source_dir>/<room>.rs` and everything under `<source_dir>/<room>/`.
fn room_files(source_dir: &Path, room: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let file = source_dir.join(format!("{room}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut folders = vec![source_dir.join(room)];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries {
            let path = entry.expect("listing a room's folder").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// How deep under the crate root the module of a file is: `x.rs` and `x/mod.rs` 1, `x/y.rs` 2.
fn module_depth(relative_file: &Path) -> usize {
    let components = relative_file.components().count();
    if relative_file.file_name().is_some_and(|name| name == "mod.rs") { components - 1 } else { components }
}

/// The crate root's declared modules, and what else it holds (with the line).
fn read_crate_root(tokens: &[Token]) -> (BTreeSet<String>, Vec<(String, usize)>) {
    let mut modules = BTreeSet::new();
    let mut items = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        // Attributes, inner or outer, and stray semicolons.
        if tokens[at].is("#") {
            at += 1;
            if tokens.get(at).is_some_and(|token| token.is("!")) {
                at += 1;
            }
            at = skip_balanced(tokens, at);
            continue;
        }
        if tokens[at].is(";") {
            at += 1;
            continue;
        }
        let line = tokens[at].line;
        if tokens[at].is("pub") {
            at += 1;
            if tokens.get(at).is_some_and(|token| token.is("(")) {
                at = skip_balanced(tokens, at);
            }
        }
        let word = |offset: usize| tokens.get(at + offset).map_or("", |token| token.text.as_str());
        match (word(0), word(2)) {
            ("mod", ";") => {
                modules.insert(word(1).to_owned());
                at += 3;
            }
            ("mod", _) => {
                items.push((format!("mod {} {{ … }}", word(1)), line));
                at = skip_item(tokens, at);
            }
            ("use", _) => at = skip_item(tokens, at),
            ("extern", _) if word(1) == "crate" => at = skip_item(tokens, at),
            _ => {
                items.push((describe_item(&tokens[at..]), line));
                at = skip_item(tokens, at);
            }
        }
    }
    (modules, items)
}

/// A few words naming an item: `fn lock`, `struct ReadmeDoctests`, `macro_rules! name`.
fn describe_item(tokens: &[Token]) -> String {
    let mut words = Vec::new();
    for token in tokens.iter().take(6) {
        if ["(", "<", "{", ";", ":", "=", "where"].contains(&token.text.as_str()) {
            break;
        }
        words.push(token.text.as_str());
    }
    words.join(" ").replace(" !", "!")
}

/// From a `(`, `[` or `{` at `at`, the index after its closing partner.
fn skip_balanced(tokens: &[Token], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < tokens.len() {
        match tokens[at].text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
        if depth == 0 {
            break;
        }
    }
    at
}

/// From the start of an item, the index after it: after its `;`, or after its body's `}`.
fn skip_item(tokens: &[Token], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < tokens.len() {
        let token = tokens[at].text.as_str();
        at += 1;
        match token {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            ";" if depth == 0 => break,
            _ => {}
        }
    }
    at
}

/// The names right under the module at `path` (the crate root when empty) that a file reaches,
/// with their lines: the `x` of `crate::<path>::x`, of each `crate::<path>::{x, y::z}`, and of
/// `super::x` where the `super`s climb exactly to that module (from a file whose module is
/// `depth` deep, counting inline `mod m { … }`s too).
fn level_names(tokens: &[Token], depth: usize, path: &[String]) -> Vec<(String, usize)> {
    let mut names = Vec::new();
    // For each open brace: whether it opens an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let text = |at: usize| tokens.get(at).map_or("", |token| token.text.as_str());
    // `path`'s modules, each followed by `::`, from `at`: the index after them.
    let through_path = |mut at: usize| {
        for module in path {
            if text(at) != module || text(at + 1) != "::" {
                return None;
            }
            at += 2;
        }
        Some(at)
    };
    for at in 0..tokens.len() {
        let previous = if at == 0 { "" } else { text(at - 1) };
        match text(at) {
            "{" => braces.push(at >= 2 && text(at - 2) == "mod" && is_identifier(previous)),
            "}" => {
                braces.pop();
            }
            // `pub(in crate::x)` is a visibility, not a use.
            "crate" if text(at + 1) == "::" && previous != "::" && previous != "in" => {
                if let Some(after) = through_path(at + 2) {
                    names.extend(names_after(tokens, after));
                }
            }
            "super" if text(at + 1) == "::" && previous != "::" => {
                let mut after = at;
                let mut climbs = 0;
                while text(after) == "super" && text(after + 1) == "::" {
                    climbs += 1;
                    after += 2;
                }
                let inline_modules = braces.iter().filter(|opens_module| **opens_module).count();
                if depth + inline_modules >= path.len() && climbs == depth + inline_modules - path.len() {
                    names.extend(names_after(tokens, after));
                }
            }
            _ => {}
        }
    }
    names
}

/// After `crate::`: the name there, or each first name of a `{ … }` group, or `*`.
fn names_after(tokens: &[Token], at: usize) -> Vec<(String, usize)> {
    let Some(first) = tokens.get(at) else { return Vec::new() };
    if !first.is("{") {
        return if first.is("self") { Vec::new() } else { vec![(first.text.clone(), first.line)] };
    }
    let mut names = Vec::new();
    let mut depth = 0;
    let mut entry_starts = true;
    for token in &tokens[at..] {
        match token.text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => entry_starts = true,
            name if depth == 1 && entry_starts => {
                if name != "self" {
                    names.push((name.to_owned(), token.line));
                }
                entry_starts = false;
            }
            _ => {}
        }
    }
    names
}

/// The room graph: for each room, the other rooms it names, each with its first reference.
type RoomGraph<'a> = BTreeMap<&'a str, BTreeMap<&'a str, &'a Reference>>;

fn room_graph(rooms: &Rooms) -> RoomGraph<'_> {
    let mut graph: RoomGraph<'_> = rooms.rooms.iter().map(|room| (room.as_str(), BTreeMap::new())).collect();
    for reference in &rooms.references {
        if reference.room != reference.name && rooms.rooms.contains(&reference.name) {
            graph.entry(&reference.room).or_default().entry(&reference.name).or_insert(reference);
        }
    }
    graph
}

/// Tarjan's strongly connected components of the room graph, each sorted, in a stable order.
fn strongly_connected_components<'a>(graph: &RoomGraph<'a>) -> Vec<Vec<&'a str>> {
    struct Search<'g, 'a> {
        graph: &'g RoomGraph<'a>,
        index: HashMap<&'a str, usize>,
        lowest: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    impl<'a> Search<'_, 'a> {
        fn visit(&mut self, room: &'a str) {
            let index = self.index.len();
            self.index.insert(room, index);
            self.lowest.insert(room, index);
            self.stack.push(room);
            for &next in self.graph[room].keys() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let lowest = self.lowest[room].min(self.lowest[next]);
                    self.lowest.insert(room, lowest);
                } else if self.stack.contains(&next) {
                    let lowest = self.lowest[room].min(self.index[next]);
                    self.lowest.insert(room, lowest);
                }
            }
            if self.lowest[room] == index {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    component.push(member);
                    if member == room {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut search =
        Search { graph, index: HashMap::new(), lowest: HashMap::new(), stack: Vec::new(), components: Vec::new() };
    for &room in graph.keys() {
        if !search.index.contains_key(room) {
            search.visit(room);
        }
    }
    search.components.sort();
    search.components
}

/// A circle of rooms: the shortest round from its first room, then each use between its rooms
/// with one reference (file:line) that makes it.
fn describe_circle(name: &str, graph: &RoomGraph<'_>, component: &[&str]) -> String {
    let inside = |room: &str| component.contains(&room);
    let start = component[0];
    // The shortest way back to `start`, breadth first inside the component.
    let mut came_from: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut round = vec![start];
    'search: while let Some(room) = queue.pop_front() {
        for &next in graph[room].keys().filter(|next| inside(next)) {
            if next == start {
                let mut at = room;
                while at != start {
                    round.push(at);
                    at = came_from[at];
                }
                round[1..].reverse();
                round.push(start);
                break 'search;
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, room);
                queue.push_back(next);
            }
        }
    }
    let mut text = format!("{name}: rooms in a circle: {}", round.join(" -> "));
    for &room in component {
        for (&next, reference) in graph[room].iter().filter(|(next, _)| inside(next)) {
            text.push_str(&format!("\n    {room} -> {next}: {}", reference.location()));
        }
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Reading Rust well enough: comments and literals out, then tokens.

/// The source with comments (line, block, doc), string literals (normal, byte, raw) and
/// character literals blanked out. Newlines stay, so lines still count.
fn strip_comments_and_strings(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let at_char = |at: usize| chars.get(at).copied().unwrap_or('\0');
    // Blanks chars[from..to] out, keeping its newlines.
    let blank = |out: &mut String, from: usize, to: usize| {
        out.push(' ');
        out.extend(chars[from..to.min(chars.len())].iter().filter(|c| **c == '\n'));
    };
    let mut at = 0;
    while at < chars.len() {
        let end = match (at_char(at), at_char(at + 1)) {
            ('/', '/') => (at..chars.len()).find(|&end| chars[end] == '\n').unwrap_or(chars.len()),
            ('/', '*') => block_comment_end(&chars, at),
            ('"', _) => quoted_end(&chars, at, '"'),
            ('\'', _) => char_literal_end(&chars, at).unwrap_or(at),
            _ => raw_string_end(&chars, at).unwrap_or(at),
        };
        if end > at {
            blank(&mut out, at, end);
            at = end;
        } else {
            out.push(chars[at]);
            at += 1;
        }
    }
    out
}

/// From a `/*`, the index after its `*/`, nested comments included.
fn block_comment_end(chars: &[char], mut at: usize) -> usize {
    let mut depth = 0;
    while at < chars.len() {
        match (chars[at], chars.get(at + 1).copied()) {
            ('/', Some('*')) => {
                depth += 1;
                at += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                at += 2;
                if depth == 0 {
                    return at;
                }
            }
            _ => at += 1,
        }
    }
    chars.len()
}

/// From an opening quote, the index after its closing one, skipping escapes.
fn quoted_end(chars: &[char], mut at: usize, quote: char) -> usize {
    at += 1;
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            c if c == quote => return at + 1,
            _ => at += 1,
        }
    }
    chars.len()
}

/// From a `'`, the index after the character literal it opens, or `None` for a lifetime or label.
fn char_literal_end(chars: &[char], at: usize) -> Option<usize> {
    match (chars.get(at + 1), chars.get(at + 2)) {
        (Some('\\'), _) => Some(quoted_end(chars, at, '\'')),
        (Some(c), Some('\'')) if *c != '\'' => Some(at + 3),
        _ => None,
    }
}

/// At `r"`, `r#"`, `br#"`, `cr"`…, the index after the raw string; `None` if none starts here.
fn raw_string_end(chars: &[char], at: usize) -> Option<usize> {
    if at > 0 && is_identifier_char(chars[at - 1]) {
        return None;
    }
    let mut cursor = at;
    if matches!(chars.get(cursor), Some('b' | 'c')) {
        cursor += 1;
    }
    if chars.get(cursor) != Some(&'r') {
        return None;
    }
    cursor += 1;
    let hashes = chars[cursor..].iter().take_while(|c| **c == '#').count();
    cursor += hashes;
    if chars.get(cursor) != Some(&'"') {
        return None;
    }
    cursor += 1;
    while cursor < chars.len() {
        if chars[cursor] == '"' && chars[cursor + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return Some(cursor + 1 + hashes);
        }
        cursor += 1;
    }
    Some(chars.len())
}

/// A word or a mark of stripped source, with its line (from 1).
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, text: &str) -> bool {
        self.text == text
    }
}

/// Words (identifiers, keywords, numbers), `::`, and every other mark alone.
fn tokens(stripped: &str) -> Vec<Token> {
    let chars: Vec<char> = stripped.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let start = at;
        if c == '\n' {
            line += 1;
            at += 1;
            continue;
        } else if c.is_whitespace() {
            at += 1;
            continue;
        } else if is_identifier_char(c) {
            while at < chars.len() && is_identifier_char(chars[at]) {
                at += 1;
            }
        } else if c == ':' && chars.get(at + 1) == Some(&':') {
            at += 2;
        } else {
            at += 1;
        }
        tokens.push(Token { text: chars[start..at].iter().collect(), line });
    }
    tokens
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && text.chars().all(is_identifier_char)
}

// ---------------------------------------------------------------------------------------------
// The reader's own checks, on small sources.

#[test]
fn the_reader_blanks_comments_and_literals() {
    let source = "a /* crate::x /* nested */ crate::y */ b // crate::z\n\
                  c \"crate::s \\\" crate::t\" r#\"crate::u \"# d '\"' e 'f: loop {} b\"crate::v\"\n";
    let stripped = strip_comments_and_strings(source);
    assert!(!stripped.contains("crate"), "{stripped}");
    let words: Vec<String> = tokens(&stripped).into_iter().map(|token| token.text).collect();
    assert_eq!(words, ["a", "b", "c", "d", "e", "'", "f", ":", "loop", "{", "}", "b"]);
    assert_eq!(stripped.lines().count(), 2);
}

#[test]
fn the_reader_finds_crate_level_names() {
    let source = "use crate::{a::b,\n  c, self, d::{e, f}};\nfn g() { crate::h(); super::i::j(); }\n\
                  pub(in crate::k) fn l() {}\nmod tests { use super::*; use super::super::m; }\n$crate::n!();";
    let names = level_names(&tokens(&strip_comments_and_strings(source)), 1, &[]);
    let expected = [("a", 1), ("c", 2), ("d", 2), ("h", 3), ("i", 3), ("m", 5), ("n", 6)];
    assert_eq!(names, expected.map(|(name, line)| (name.to_owned(), line)));
    // Two folders down, one `super` stays inside the room.
    let names = level_names(&tokens("use super::x; use super::super::y;"), 2, &[]);
    assert_eq!(names, [("y".to_owned(), 1)]);
}

#[test]
fn the_reader_tells_declarations_from_items() {
    let source = "//! Docs.\n#![forbid(unsafe_code)]\n#[cfg(feature = \"x\")]\npub mod a;\nmod b;\n\
                  pub use a::{C, D};\npub(crate) fn lock<T>(x: T) -> T { x }\n#[cfg(doctest)]\npub struct S;\n\
                  macro_rules! m { () => {}; }\nmod inline { fn f() {} }\n";
    let (modules, items) = read_crate_root(&tokens(&strip_comments_and_strings(source)));
    assert_eq!(modules, BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    let expected = [("fn lock", 7), ("struct S", 9), ("macro_rules! m", 10), ("mod inline { … }", 11)];
    assert_eq!(items, expected.map(|(item, line)| (item.to_owned(), line)));
}
