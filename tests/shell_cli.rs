//! `sluice completions` and `sluice man`: generated from the argument definitions, so they list
//! every subcommand. The bash script is loaded into a real bash and asked for completions.

use assert_cmd::Command;

const SUBCOMMANDS: &[&str] = &["lint", "check", "rules", "freeze", "plan", "stats", "init", "completions", "man"];

fn sluice(args: &[&str]) -> (i32, String, String) {
    let output = Command::cargo_bin("sluice").unwrap().args(args).output().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn each_shell_gets_a_script_naming_every_subcommand() {
    for (shell, marker) in [
        ("bash", "complete -F _sluice"),
        ("zsh", "#compdef sluice"),
        ("fish", "complete -c sluice"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (code, script, stderr) = sluice(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        assert!(script.contains(marker), "{shell} script lacks {marker:?}");
        for subcommand in SUBCOMMANDS {
            assert!(script.contains(subcommand), "{shell} script does not mention {subcommand}");
        }
    }
    let (code, _, stderr) = sluice(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid value 'tcsh'"), "{stderr}");
}

#[test]
fn bash_completes_subcommands_and_flags() {
    let (_, script, _) = sluice(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.bash");
    std::fs::write(&file, script).unwrap();
    // What bash offers for the last word: it calls the function with the command, the word
    // being completed and the word before it; the answer is COMPREPLY, one word per line.
    let complete = |words: &str| {
        let program = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; \
             _sluice sluice \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let output = std::process::Command::new("bash").args(["-c", &program]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect::<Vec<_>>()
    };
    let offered = complete("sluice in");
    assert_eq!(offered, ["init"]);
    let offered = complete("sluice init --");
    for flag in ["--migrations", "--queries", "--policies", "--force"] {
        assert!(offered.iter().any(|w| w == flag), "{flag} not offered: {offered:?}");
    }
}

#[test]
fn the_man_page_is_roff_that_man_renders() {
    let (code, page, stderr) = sluice(&["man"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(page.contains(".TH sluice 1"), "no title header");
    for subcommand in SUBCOMMANDS {
        assert!(page.contains(&format!("sluice\\-{subcommand}")), "man page does not list {subcommand}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.1");
    std::fs::write(&file, &page).unwrap();
    // Never skipped: without man the page is not known to render (`bash .ci/run` installs it).
    let output = std::process::Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(&file)
        .env("MANWIDTH", "100")
        .output()
        .unwrap_or_else(|e| panic!("this test needs man ({e}): `apt-get install -y man-db`"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("NAME") && text.contains("SUBCOMMANDS"), "{text}");
    assert!(text.contains("The deployment-safety and migration-review gate"), "{text}");
}

#[test]
fn man_out_dir_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let (code, stdout, stderr) = sluice(&["man", "--out-dir", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    for page in ["sluice.1", "sluice-init.1", "sluice-lint.1", "sluice-freeze-status.1"] {
        let text = std::fs::read_to_string(out.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH "), "{page} has no title header");
    }
    assert!(std::fs::read_to_string(out.join("sluice-init.1")).unwrap().contains("\\-\\-force"));
}
