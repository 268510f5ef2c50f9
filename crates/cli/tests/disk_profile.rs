//! `prefetch disk profile` as a real process: it prints the model's checks, labelled as
//! simulated, writes JSON and an SVG, and rejects unknown models with a clear message.

use std::process::Command;

fn prefetch(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(args)
        .output()
        .expect("run prefetch")
}

#[test]
fn profile_of_the_7200_rpm_model_passes_and_writes_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("seek.svg");
    let out = prefetch(&[
        "disk",
        "profile",
        "--model",
        "st3500320as",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("[model (simulated)]"), "{stdout}");
    assert!(stdout.contains("up to 32 KiB"), "{stdout}");
    assert!(stdout.contains("vs preset 8.500 ms"), "{stdout}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.starts_with("<svg") && picture.contains("forward") && picture.contains("backward")
    );
}

#[test]
fn json_output_parses_and_names_its_setting() {
    let out = prefetch(&["disk", "profile", "--model", "nvme", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profile: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(profile["setting"], "model (simulated)");
    assert_eq!(profile["model"], "nvme");
    assert!(profile["random_seek"].is_null());
    assert_eq!(profile["reorder"].as_array().unwrap().len(), 17);
}

#[test]
fn unknown_model_is_a_clear_error() {
    let out = prefetch(&["disk", "profile", "--model", "floppy"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown disk model `floppy`"), "{stderr}");
}
