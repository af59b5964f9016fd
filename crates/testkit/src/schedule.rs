//! The nextest schedule (`.config/nextest.toml`) names the tests that take the CPU lock
//! exclusive or light, so they start in the order the lock runs them best (see
//! [`crate::cpu`]). A test that changes its level, or one added or renamed, would silently
//! fall out of that order and cost the run minutes: this test fails instead, naming it.

use std::collections::BTreeSet;
use std::path::Path;

/// Where the integration tests that take the lock live.
const TEST_DIRS: [&str; 2] = ["crates/brink/tests/it", "crates/engine/tests/engine"];

/// `(exclusive, light)`: the `module::test` names of the tests whose body takes the lock at
/// that level.
fn levels_in_code(root: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut exclusive, mut light) = (BTreeSet::new(), BTreeSet::new());
    for dir in TEST_DIRS {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        for file in files {
            let module = file.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&file).unwrap();
            for (name, body) in tests_in(&text) {
                let full = format!("{module}::{name}");
                if body.contains("cpu_exclusive()") {
                    exclusive.insert(full);
                } else if body.contains("cpu_light()") {
                    light.insert(full);
                }
            }
        }
    }
    (exclusive, light)
}

/// Each test function of `text` (`#[test]`, or an async runtime's `#[...::test]`, any
/// indentation, `pub` or `async`, attributes and comments between) with its text up to the
/// next function.
fn tests_in(text: &str) -> Vec<(&str, &str)> {
    // Where each line starts, and whether it opens a function.
    let mut starts = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or(t.strip_prefix("pub "))
            .unwrap_or(t);
        let t = t.strip_prefix("async ").unwrap_or(t);
        if let Some(rest) = t.strip_prefix("fn ") {
            starts.push((at, rest));
        }
        at += line.len();
    }
    let mut found = Vec::new();
    for (k, &(start, rest)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(text.len(), |s| s.0);
        let attributes: Vec<&str> = text[..start]
            .lines()
            .rev()
            .map(str::trim)
            .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
            .collect();
        let is_test = attributes
            .iter()
            .any(|l| l.starts_with("#[test]") || (l.starts_with("#[") && l.contains("::test")));
        if !is_test {
            continue;
        }
        let name = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        found.push((name, &text[start..end]));
    }
    found
}

/// The names each override of the default profile lists (`test(=name)`), by its priority.
fn listed(config: &str) -> Vec<(i64, BTreeSet<String>)> {
    config
        .split("[[profile.default.overrides]]")
        .skip(1)
        .map(|block| {
            let block = block.split("\n[").next().unwrap_or(block);
            let priority = block
                .lines()
                .find_map(|l| l.trim().strip_prefix("priority = "))
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or(0);
            let names = block
                .split("test(=")
                .skip(1)
                .filter_map(|rest| rest.split(')').next())
                .map(str::to_owned)
                .collect();
            (priority, names)
        })
        .collect()
}

/// The parsing finds tests however they are written: with comments and attributes between,
/// indented in a module, `async`, a runtime's test attribute; and not a helper.
#[test]
fn tests_are_found_however_they_are_written() {
    let text = "#[test] // why\n/// doc\n#[ignore]\nfn a() {\n    cpu_light();\n}\n\
        fn helper() {\n    cpu_exclusive();\n}\n\
        mod m {\n    #[tokio::test(flavor = \"multi_thread\")]\n    async fn b() {}\n    \
        #[test]\n    pub fn c() {}\n}\n";
    let names: Vec<&str> = tests_in(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(tests_in(text)[0].1.contains("cpu_light()"));
}

#[test]
fn the_schedule_lists_every_test_that_takes_the_lock_exclusive_or_light() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (exclusive, light) = levels_in_code(&root);
    let config = std::fs::read_to_string(root.join(".config/nextest.toml")).unwrap();
    let lists = listed(&config);
    let at = |keep: fn(i64) -> bool| -> BTreeSet<String> {
        lists
            .iter()
            .filter(|(p, _)| keep(*p))
            .flat_map(|(_, n)| n.iter().cloned())
            .collect()
    };
    let (first, next) = (at(|p| p == 100), at(|p| (90..100).contains(&p)));
    // The parsing holds: both levels have tests in the code.
    assert!(
        exclusive.len() > 20 && light.len() > 20,
        "{exclusive:?} {light:?}"
    );
    let diff = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
        a.difference(b).cloned().collect()
    };
    assert!(
        exclusive == first,
        "take cpu_exclusive() but are not in the priority-100 list: {:?}; listed there but do not: {:?}",
        diff(&exclusive, &first),
        diff(&first, &exclusive)
    );
    assert!(
        light == next,
        "take cpu_light() but are not in the priority-90/95 lists: {:?}; listed there but do not: {:?}",
        diff(&light, &next),
        diff(&next, &light)
    );
}
